import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { exec, type ExecResult } from '../../shared/exec.js';
import { freezerControl } from '../cgroups/cgroups.js';
import { EARLY_THAW_FILES, nowNs, offerThaw, settleThaw } from './early-thaw.js';
import type { DirectDump } from './runc-direct-dump.js';
import { IDMAP_FILE, LAYOUT_FILE } from './runc-images.js';
import type { CheckpointOptions, CheckpointStats } from './runtime.js';

/** Name of the hook file forkd's CRIU action script follows (HOOK_NAME in packages/host-tools/src/criu-action). */
export const CHECKPOINT_HOOK = 'forkd-hook';

/** What a dump needs of the runtime. */
export interface CheckpointDeps {
  /** runc with forkd's state root, CRIU and its dump config (named to criu's relay, or CRIU_CONFIG_FILE: dumps only). */
  runc(args: string[], env?: NodeJS.ProcessEnv): Promise<ExecResult>;
  /** The dump sent without runc when runc's request for this init was kept (runc-direct-dump.ts). */
  direct?: DirectDump | undefined;
  thaw(): Promise<void>;
  cgroupPath: string;
  /** The bundle's record of the user namespace range, copied into the images (a restore must recreate it). */
  idmapFile: string;
  /** The bundle's record of the mount layout (runc-images.ts LAYOUT_FILE), copied into the images likewise. */
  layoutFile: string;
  /** forkd-criu-action; run directly only to wait out a failed dump's filesystem snapshot. */
  criuAction: string;
  deadlineMs: number;
}

/**
 * Memory and files from one instant, with the shortest freeze: forkd's step
 * at CRIU's pre-dump (criu's relay, or the action script; see setup) freezes the cgroup, after runc's and
 * CRIU's start-up (CRIU then finds it frozen and skips its 100 ms freezer
 * sleep) and starts the filesystem snapshot (`whileFrozen`'s argv, written
 * into the hook file) alongside the dump; at post-dump it waits for that
 * snapshot. CRIU leaves the tree as it found it, frozen: with leaveRunning
 * the relay thaws it at CRIU's answer (the script's watcher as soon as CRIU
 * has refrozen it), or forkd when runc returns (early-thaw.ts); otherwise it
 * stays frozen for the caller. The hook file in the images dir tells the
 * steps what to do. Any failure thaws. The dump is runc's, or, for an
 * init's later dumps, the request runc made for its first sent without
 * runc (`dump` below).
 */
export async function runcCheckpoint(d: CheckpointDeps, id: string, o: CheckpointOptions): Promise<CheckpointStats> {
  await mkdir(o.imagesDir, { recursive: true, mode: 0o700 });
  await mkdir(o.workDir, { recursive: true, mode: 0o700 });
  const hook = await writeHook(o.imagesDir, d.cgroupPath, o.whileFrozen?.argv);
  if (o.leaveRunning) await offerThaw(hook);
  let settled = !o.leaveRunning;
  const t0 = performance.now();
  // A task stopped by SIGSTOP (a tenant's `kill -STOP`, a shell's Ctrl-Z) in a frozen cgroup wedges CRIU: its
  // ptrace attach waits for the stopped task to trap, which a frozen task never does. The action script
  // turns each into a frozen task with SIGSTOP pending, which CRIU attaches to and dumps as stopped; but
  // a task stopped just after the freeze, or anything else that hangs CRIU, would hold the dump, its freeze
  // and the sandbox's lifecycle lock for ever: past the deadline the cgroup is thawed (a stuck attach then
  // goes on) and the dump, whatever it became, is given up with TIMEOUT.
  let expired = false;
  const watchdog = setTimeout(() => {
    expired = true;
    void d.thaw().catch(() => {});
  }, d.deadlineMs);
  try {
    const args = ['checkpoint', '--image-path', o.imagesDir, '--work-path', o.workDir, '--leave-running', '--tcp-established', '--file-locks', id];
    const { r, cmd } = await dump(d, args, hook, o.imagesDir, o.workDir).finally(() => clearTimeout(watchdog));
    if (expired) throw new ForkdError('TIMEOUT', `the memory dump of ${id} did not finish within ${d.deadlineMs / 1000} s (a stopped process in it?)`, { timeoutMs: d.deadlineMs, logPath: join(o.workDir, 'dump.log') });
    if (r.code !== 0) {
      const log = await readFile(join(o.workDir, 'dump.log'), 'utf8').catch(() => '');
      throw new ForkdError('INTERNAL', `criu dump failed: ${criuError(log) || r.stderr.trim().slice(-300)}`, { cmd, exitCode: r.code, stderrTail: (log || r.stderr).slice(-4000), logPath: join(o.workDir, 'dump.log') });
    }
    const dumpMs = performance.now() - t0;
    // Thawed first (most often by the relay or the script's watcher already): nothing below needs the freeze.
    settled = true;
    const thawedAt = o.leaveRunning ? await settleThaw(hook, d.thaw) : nowNs();
    const frozenAt = await readNs(`${hook}.frozen-at`);
    if (frozenAt === undefined) throw new ForkdError('INTERNAL', 'the criu action script did not run: run forkd setup again', { logPath: join(o.workDir, 'dump.log') });
    const copies = [[d.idmapFile, IDMAP_FILE], [d.layoutFile, LAYOUT_FILE]] as const;
    await Promise.all(
      copies.map(([from, name]) =>
        copyFile(from, join(o.imagesDir, name)).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') throw err;
        }),
      ),
    );
    return { frozenMs: Number(thawedAt - frozenAt) / 1e6, dumpMs };
  } catch (err) {
    // Settled first: a watcher still waiting must not thaw the retry's freeze.
    if (!settled) await settleThaw(hook, d.thaw).catch(() => {});
    await d.thaw().catch(() => {});
    await awaitSnapshot(d.criuAction, hook);
    throw err;
  } finally {
    // At once: each is a trip through the thread pool, and the snapshot's caller waits for them.
    await Promise.all(['', '.frozen-at', '.snap-fifo', '.snap-rc', '.snap-rc.tmp', ...EARLY_THAW_FILES].map((suffix) => rm(`${hook}${suffix}`, { force: true })));
  }
}

/**
 * runc's dump, or runc's kept request sent without it (CRIU is always told
 * to leave the tree running: whether it stays frozen is the thaw token's
 * business, so one request serves both). A kept one that fails is
 * forgotten; when it failed before anything froze (its wrapper could not
 * start it), runc dumps instead. Its result, and what ran (for the logs).
 */
async function dump(d: CheckpointDeps, args: string[], hook: string, imagesDir: string, workDir: string): Promise<{ r: ExecResult; cmd: string }> {
  const { direct } = d;
  const kept = await direct?.kept();
  if (direct && kept) {
    const r = await direct.run(kept, imagesDir, workDir);
    if (r.code === 0) return { r, cmd: 'criu dump-saved' };
    await direct.forget();
    if (existsSync(`${hook}.frozen-at`)) return { r, cmd: 'criu dump-saved' };
  }
  const r = await d.runc(args, direct?.saveEnv);
  if (direct) await (r.code === 0 ? direct.keep(imagesDir) : direct.forget());
  return { r, cmd: `runc ${args.join(' ')}` };
}

/** What freezing ahead of a dump needs of the runtime. */
export interface FreezeDeps {
  /** forkd-criu-action: its pre-dump freeze is the one every dump uses. */
  criuAction: string;
  cgroupPath: string;
  /** A directory of root's for the hook file (made anew, removed after). */
  hookDir: string;
  thaw(): Promise<void>;
}

/**
 * Freezes the tree as a checkpoint would (forkd's CRIU action script at
 * pre-dump, run directly: stopped tasks turned into frozen ones with
 * SIGSTOP pending, a vfork caught in the freeze let through first), without
 * the dump: a later runcCheckpoint finds it frozen, freezes nothing more
 * and leaves it frozen. On failure it is thawed again.
 */
export async function runcFreeze(d: FreezeDeps, id: string): Promise<void> {
  if (!d.criuAction) throw new ForkdError('FAILED_PRECONDITION', 'the criu action script is not installed: run forkd setup again');
  if (!existsSync(dirname(freezerControl(d.cgroupPath).file))) throw new ForkdError('NOT_FOUND', `sandbox ${id} has no cgroup to freeze`);
  await rm(d.hookDir, { recursive: true, force: true });
  await mkdir(d.hookDir, { recursive: true, mode: 0o700 });
  try {
    await writeHook(d.hookDir, d.cgroupPath);
    const r = await runAction(d.criuAction, 'pre-dump', d.hookDir);
    if (r.code !== 0) {
      await d.thaw().catch(() => {});
      throw new ForkdError('INTERNAL', `the freeze of ${id} failed: ${r.stderr.trim().slice(-300)}`, { cmd: d.criuAction, exitCode: r.code, stderrTail: r.stderr.slice(-4000) });
    }
  } finally {
    await rm(d.hookDir, { recursive: true, force: true });
  }
}

/**
 * A dump that failed after the action script started the filesystem
 * snapshot: that snapshot still runs, and the caller is about to remove
 * its target. The action script's own post-dump wait (FIFO, deadline in
 * seconds) tells when it is done.
 */
async function awaitSnapshot(criuAction: string, hook: string): Promise<void> {
  if (!criuAction || !existsSync(`${hook}.snap-fifo`)) return;
  await runAction(criuAction, 'post-dump', dirname(hook)).catch(() => {});
}

/**
 * The hook file the action steps follow (its format: criu-action/actions.c's header),
 * for the cgroup at `cgroupPath`, with `argv` of the filesystem snapshot to
 * take while frozen. Root's own file, made anew (never through something
 * already there): the action script refuses any other. Returns its path.
 */
async function writeHook(dir: string, cgroupPath: string, argv: readonly string[] = []): Promise<string> {
  const f = freezerControl(cgroupPath);
  const hook = join(dir, CHECKPOINT_HOOK);
  await writeFile(hook, [f.file, f.freeze, f.checkFile, f.frozenPattern, ...argv].join('\n') + '\n', { mode: 0o600, flag: 'wx' });
  return hook;
}

/** The action script run directly, as CRIU runs it for `action`, on the hook file in `dir`. */
function runAction(criuAction: string, action: 'pre-dump' | 'post-dump', dir: string) {
  return exec(criuAction, [], { env: { ...process.env, CRTOOLS_SCRIPT_ACTION: action, CRTOOLS_IMAGE_DIR: dir }, allowFailure: true });
}

/**
 * The error that failed CRIU, from its log, without the timestamp: the last
 * one before its "Restoring FAILED" / "Dumping FAILED" (what follows is the
 * teardown's fallout, e.g. "cgroupd: recv req error" after a mount was
 * refused); the last one when nothing comes before it.
 */
export function criuError(log: string): string {
  const errs = log.split('\n').filter((l) => /Error \(/.test(l));
  const failed = errs.findIndex((l) => /\b(Restoring|Dumping) FAILED/.test(l));
  const cause = errs[(failed > 0 ? failed : errs.length) - 1] ?? '';
  return cause.replace(/^\([0-9.]+\)\s*/, '').slice(0, 500);
}

/** A wall-clock instant in ns written by the action script (`date +%s%N`). */
async function readNs(file: string): Promise<bigint | undefined> {
  const s = (await readFile(file, 'utf8').catch(() => '')).trim();
  return /^\d+$/.test(s) ? BigInt(s) : undefined;
}
