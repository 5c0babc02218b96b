import { existsSync, readFileSync, watch, type FSWatcher } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { ForkdError } from '@forkd/protocol';
import { join } from 'node:path';
import type { ResourceUsage } from '../runtime/runtime.js';

/** Where the host's cgroup hierarchies are mounted. */
export const CGROUP_ROOT = '/sys/fs/cgroup';

/** Production hosts run the unified hierarchy (v2); this machine is v1 (hybrid). Both are read here. */
export function cgroupVersion(root = CGROUP_ROOT): 1 | 2 {
  return existsSync(join(root, 'cgroup.controllers')) ? 2 : 1;
}

/** The controllers sandboxes' limits and stats use: hierarchies of their own on v1 (see cgroupDirs), listed in cgroup.controllers on v2. */
export const CGROUP_CONTROLLERS = { 1: ['memory', 'cpu', 'cpuacct', 'pids', 'freezer'], 2: ['memory', 'cpu', 'pids'] } as const;

/** v1 bounds memory plus swap only with swap accounting (the memsw files); v2 always can. */
export function swapAccountingIn(root: string): boolean {
  return cgroupVersion(root) === 2 || existsSync(join(root, 'memory', 'memory.memsw.limit_in_bytes'));
}

export function swapAccounting(): boolean {
  return swapAccountingIn(CGROUP_ROOT);
}

/** Host directories of a cgroup path, per controller (v1) or the single one (v2). */
export function cgroupDirs(path: string): { memory: string; cpu: string; pids: string; freezer: string } {
  const rel = path.replace(/^\/+/, '');
  if (cgroupVersion() === 2) {
    const d = join(CGROUP_ROOT, rel);
    return { memory: d, cpu: d, pids: d, freezer: d };
  }
  return { memory: join(CGROUP_ROOT, 'memory', rel), cpu: join(CGROUP_ROOT, 'cpuacct', rel), pids: join(CGROUP_ROOT, 'pids', rel), freezer: join(CGROUP_ROOT, 'freezer', rel) };
}

/**
 * cgroupfs files are made by the kernel on read, from memory, never from a
 * disk: read synchronously, one costs ~15 µs of CPU, through the thread
 * pool (fs/promises) ~10× that, which the policy and metrics pay per sandbox.
 */
function readCgroupFile(file: string, fallback: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return fallback;
  }
}

function readNum(file: string): number {
  const s = readCgroupFile(file, '0').trim();
  return s === 'max' ? Number.POSITIVE_INFINITY : Number(s) || 0;
}

function readKey(file: string, key: string): number {
  const s = readCgroupFile(file, '');
  for (const line of s.split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k === key) return Number(v) || 0;
  }
  return 0;
}

export async function readUsage(path: string): Promise<ResourceUsage> {
  const d = cgroupDirs(path);
  if (cgroupVersion() === 2) {
    const [memoryBytes, memoryLimitBytes, usec, pids, oomKills, pidsLimitHits] = [
      readNum(join(d.memory, 'memory.current')),
      readNum(join(d.memory, 'memory.max')),
      readKey(join(d.cpu, 'cpu.stat'), 'usage_usec'),
      readNum(join(d.pids, 'pids.current')),
      readKey(join(d.memory, 'memory.events'), 'oom_kill'),
      readKey(join(d.pids, 'pids.events'), 'max'),
    ];
    return { memoryBytes, memoryLimitBytes, cpuNanos: usec * 1000, pids, oomKills, pidsLimitHits };
  }
  const [memoryBytes, memoryLimitBytes, cpuNanos, pids, oomKills, pidsLimitHits] = [
    readNum(join(d.memory, 'memory.usage_in_bytes')),
    readNum(join(d.memory, 'memory.limit_in_bytes')),
    readNum(join(d.cpu, 'cpuacct.usage')),
    readNum(join(d.pids, 'pids.current')),
    readKey(join(d.memory, 'memory.oom_control'), 'oom_kill'),
    readKey(join(d.pids, 'pids.events'), 'max'),
  ];
  return { memoryBytes, memoryLimitBytes, cpuNanos, pids, oomKills, pidsLimitHits };
}

/** How a cgroup is frozen and thawed, and how to tell which it is (v1 freezer.state, v2 cgroup.freeze). */
export function freezerControl(path: string): FreezerControl {
  return freezerAt(cgroupDirs(path).freezer, cgroupVersion() === 2);
}

export interface FreezerControl {
  file: string;
  freeze: string;
  thaw: string;
  checkFile: string;
  frozenPattern: string;
  thawedPattern: string;
}

function freezerAt(d: string, v2: boolean): FreezerControl {
  return v2
    ? { file: join(d, 'cgroup.freeze'), freeze: '1', thaw: '0', checkFile: join(d, 'cgroup.events'), frozenPattern: '^frozen 1', thawedPattern: '^frozen 0' }
    : { file: join(d, 'freezer.state'), freeze: 'FROZEN', thaw: 'THAWED', checkFile: join(d, 'freezer.state'), frozenPattern: '^FROZEN', thawedPattern: '^THAWED' };
}

/**
 * Thaws every task of a cgroup and waits until the kernel reports it done.
 * (Freezing happens in CRIU's action script, where the dump needs it.) Both
 * versions report a thaw at once as a rule; the wait is for the exception,
 * sized for a loaded host.
 */
export async function thawCgroup(path: string, timeoutMs = 30_000): Promise<void> {
  const c = freezerControl(path);
  await writeFile(c.file, c.thaw);
  if (!(await waitForCgroupFile(c.checkFile, new RegExp(c.thawedPattern, 'm'), timeoutMs))) {
    throw new ForkdError('TIMEOUT', `cgroup ${path} did not thaw within ${timeoutMs / 1000} s`);
  }
}

/**
 * Waits until a cgroup file matches. v2's cgroup.events announces its
 * changes (inotify), so the wait blocks on that, re-reading every 100 ms in
 * case an event is missed; v1's freezer.state has no notification and is
 * read with sleeps growing from 1 to 50 ms.
 */
export async function waitForCgroupFile(file: string, re: RegExp, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const changes = cgroupVersion() === 2 && file.endsWith('/cgroup.events') ? fileChanges(file) : undefined;
  if (cgroupVersion() === 2 && !changes) return re.test(await readFile(file, 'utf8').catch(() => ''));
  try {
    for (let delay = 1; ; delay = Math.min(delay * 2, 50)) {
      if (re.test(await readFile(file, 'utf8'))) return true;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await (changes ? changes.next(Math.min(left, 100)) : sleep(Math.min(delay, left)));
    }
  } finally {
    changes?.close();
  }
}

/** Modification events of a file, awaited one at a time with a timeout. */
function fileChanges(file: string): { next(ms: number): Promise<void>; close(): void } | undefined {
  let wake: (() => void) | undefined;
  let pending = false;
  let w: FSWatcher;
  try {
    w = watch(file, { persistent: false }, () => {
      pending = true;
      wake?.();
    });
  } catch {
    return undefined;
  }
  w.on('error', () => wake?.());
  return {
    next: (ms) =>
      new Promise<void>((resolve) => {
        if (pending) {
          pending = false;
          return resolve();
        }
        const t = setTimeout(done, ms);
        function done() {
          clearTimeout(t);
          wake = undefined;
          pending = false;
          resolve();
        }
        wake = done;
      }),
    close: () => w.close(),
  };
}

/** Every host directory of a cgroup path: on v1 one per mounted hierarchy (runc makes it in each). */
async function allCgroupDirs(path: string): Promise<string[]> {
  const rel = path.replace(/^\/+/, '');
  if (cgroupVersion() === 2) return [join(CGROUP_ROOT, rel)];
  return (await readdir(CGROUP_ROOT).catch(() => [] as string[])).map((h) => join(CGROUP_ROOT, h, rel));
}

/**
 * Removes an empty cgroup left by a container runc no longer knows (its
 * state was lost with /run, or removed by hand). A cgroup that still has
 * tasks stays: rmdir refuses it.
 */
export async function removeCgroup(path: string): Promise<void> {
  for (const d of await allCgroupDirs(path)) await rmdir(d).catch(() => {});
}

/** Names of the cgroups directly below `parent` (any hierarchy on v1). */
export async function childCgroups(parent: string): Promise<string[]> {
  const names = new Set<string>();
  for (const d of await allCgroupDirs(parent)) {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) if (e.isDirectory()) names.add(e.name);
  }
  return [...names];
}

/**
 * Kills every task of a cgroup and resolves once it holds none; false if
 * tasks remain at the deadline. None can outrun it by forking: on v2 the
 * kernel's cgroup.kill (≥ 5.14) refuses forks into the cgroup while it
 * kills; otherwise the cgroup is frozen first, its tasks SIGKILLed while
 * none can fork, then thawed so they die (what runc ≥ 1.2 does for a
 * container without its own pid namespace). A round repeats while tasks
 * are left. About a millisecond when nothing resists.
 */
export function killCgroup(path: string, timeoutMs = 10_000): Promise<boolean> {
  return killCgroupAt(cgroupDirs(path).freezer, cgroupVersion() === 2, timeoutMs);
}

/** killCgroup on one directory, of a v2 (unified) or a v1 freezer hierarchy. */
export async function killCgroupAt(dir: string, v2: boolean, timeoutMs: number): Promise<boolean> {
  const procs = join(dir, 'cgroup.procs');
  if (!existsSync(procs)) return true;
  const deadline = Date.now() + timeoutMs;
  const viaKillFile = v2 && existsSync(join(dir, 'cgroup.kill'));
  while ((await tasksOf(procs)).length > 0) {
    if (viaKillFile) await writeFile(join(dir, 'cgroup.kill'), '1').catch(ignoreGone);
    else await freezeKillThaw(freezerAt(dir, v2), procs, deadline);
    if (await waitEmpty(dir, procs, v2, Math.min(1000, deadline - Date.now()))) return true;
    if (Date.now() >= deadline) return false;
  }
  return true;
}

/** One round without cgroup.kill: frozen, no task forks or exits, so the list read is the whole cgroup. */
async function freezeKillThaw(c: FreezerControl, procs: string, deadline: number): Promise<void> {
  try {
    await writeFile(c.file, c.freeze);
    // A task in uninterruptible sleep delays the freeze: kill what is listed anyway (pid namespace: its init's death takes the rest).
    await waitForCgroupFile(c.checkFile, new RegExp(c.frozenPattern, 'm'), Math.max(1, Math.min(1000, deadline - Date.now())));
    for (const pid of await tasksOf(procs)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  } finally {
    // Frozen tasks die only once thawed.
    await writeFile(c.file, c.thaw).catch(ignoreGone);
  }
}

/** v2 announces emptiness in cgroup.events (inotify); v1 is polled, sleeps growing from 1 to 20 ms. */
async function waitEmpty(dir: string, procs: string, v2: boolean, ms: number): Promise<boolean> {
  if (v2) return waitForCgroupFile(join(dir, 'cgroup.events'), /^populated 0/m, Math.max(1, ms)).catch(() => true);
  const deadline = Date.now() + ms;
  for (let delay = 1; ; delay = Math.min(delay * 2, 20)) {
    if ((await tasksOf(procs)).length === 0) return true;
    if (Date.now() >= deadline) return false;
    await sleep(delay);
  }
}

async function tasksOf(procs: string): Promise<number[]> {
  const s = await readFile(procs, 'utf8').catch(() => '');
  return s.split('\n').filter(Boolean).map(Number).filter((n) => n > 0);
}

function ignoreGone(err: NodeJS.ErrnoException): void {
  if (err.code !== 'ENOENT') throw err;
}
