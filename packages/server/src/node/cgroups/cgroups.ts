import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { ForkdError } from '@forkd/protocol';
import { join } from 'node:path';
import type { ResourceUsage } from '../runtime/runtime.js';

const ROOT = '/sys/fs/cgroup';

/** Production hosts run the unified hierarchy (v2); this machine is v1 (hybrid). Both are read here. */
export function cgroupVersion(): 1 | 2 {
  return existsSync(join(ROOT, 'cgroup.controllers')) ? 2 : 1;
}

export function swapAccounting(): boolean {
  return cgroupVersion() === 2 || existsSync(join(ROOT, 'memory', 'memory.memsw.limit_in_bytes'));
}

/** Host directories of a cgroup path, per controller (v1) or the single one (v2). */
export function cgroupDirs(path: string): { memory: string; cpu: string; pids: string; freezer: string } {
  const rel = path.replace(/^\/+/, '');
  if (cgroupVersion() === 2) {
    const d = join(ROOT, rel);
    return { memory: d, cpu: d, pids: d, freezer: d };
  }
  return { memory: join(ROOT, 'memory', rel), cpu: join(ROOT, 'cpuacct', rel), pids: join(ROOT, 'pids', rel), freezer: join(ROOT, 'freezer', rel) };
}

async function readNum(file: string): Promise<number> {
  const s = (await readFile(file, 'utf8').catch(() => '0')).trim();
  return s === 'max' ? Number.POSITIVE_INFINITY : Number(s) || 0;
}

async function readKey(file: string, key: string): Promise<number> {
  const s = await readFile(file, 'utf8').catch(() => '');
  for (const line of s.split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k === key) return Number(v) || 0;
  }
  return 0;
}

export async function readUsage(path: string): Promise<ResourceUsage> {
  const d = cgroupDirs(path);
  if (cgroupVersion() === 2) {
    const [memoryBytes, memoryLimitBytes, usec, pids, oomKills, pidsLimitHits] = await Promise.all([
      readNum(join(d.memory, 'memory.current')),
      readNum(join(d.memory, 'memory.max')),
      readKey(join(d.cpu, 'cpu.stat'), 'usage_usec'),
      readNum(join(d.pids, 'pids.current')),
      readKey(join(d.memory, 'memory.events'), 'oom_kill'),
      readKey(join(d.pids, 'pids.events'), 'max'),
    ]);
    return { memoryBytes, memoryLimitBytes, cpuNanos: usec * 1000, pids, oomKills, pidsLimitHits };
  }
  const [memoryBytes, memoryLimitBytes, cpuNanos, pids, oomKills, pidsLimitHits] = await Promise.all([
    readNum(join(d.memory, 'memory.usage_in_bytes')),
    readNum(join(d.memory, 'memory.limit_in_bytes')),
    readNum(join(d.cpu, 'cpuacct.usage')),
    readNum(join(d.pids, 'pids.current')),
    readKey(join(d.memory, 'memory.oom_control'), 'oom_kill'),
    readKey(join(d.pids, 'pids.events'), 'max'),
  ]);
  return { memoryBytes, memoryLimitBytes, cpuNanos, pids, oomKills, pidsLimitHits };
}

/** How a cgroup is frozen and thawed, and how to tell which it is (v1 freezer.state, v2 cgroup.freeze). */
export function freezerControl(path: string): { file: string; freeze: string; thaw: string; checkFile: string; frozenPattern: string; thawedPattern: string } {
  const d = cgroupDirs(path).freezer;
  return cgroupVersion() === 2
    ? { file: join(d, 'cgroup.freeze'), freeze: '1', thaw: '0', checkFile: join(d, 'cgroup.events'), frozenPattern: '^frozen 1', thawedPattern: '^frozen 0' }
    : { file: join(d, 'freezer.state'), freeze: 'FROZEN', thaw: 'THAWED', checkFile: join(d, 'freezer.state'), frozenPattern: '^FROZEN', thawedPattern: '^THAWED' };
}

/**
 * Thaws every task of a cgroup and waits until the kernel reports it done.
 * (Freezing happens in CRIU's action script, where the dump needs it.)
 */
export async function thawCgroup(path: string, timeoutMs = 5000): Promise<void> {
  const c = freezerControl(path);
  const thawed = new RegExp(c.thawedPattern, 'm');
  const deadline = Date.now() + timeoutMs;
  await writeFile(c.file, c.thaw);
  for (let i = 0; !thawed.test(await readFile(c.checkFile, 'utf8')); i++) {
    if (Date.now() > deadline) throw new ForkdError('TIMEOUT', `cgroup ${path} did not thaw within ${timeoutMs} ms`);
    await new Promise((r) => (i < 20 ? setImmediate(r) : setTimeout(r, 1)));
  }
}
