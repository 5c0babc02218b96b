import { posix } from 'node:path';
import type { FileEntry } from '@forkd/protocol';

/** The PATH the guest agent gives a process that sets none (packages/guest/src/spawn.c, build_env): keep the two equal. */
export const GUEST_DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** An lstat inside the sandbox (through its guest agent, never a host path); undefined when there is nothing there. */
export type SandboxStat = (path: string) => Promise<FileEntry | undefined>;

/** PATH entries looked up at once, and at most (a longer PATH is not resolved: each entry is a round trip to the guest). */
const STAT_BATCH = 8;
const MAX_PATH_ENTRIES = 64;

/** Symlinks followed to check that a candidate exists (execve's own limit is 40; a chain this long is someone's game). */
const MAX_LINKS = 8;

/** `p` made absolute against `cwd`, with `.` and repeated slashes gone; undefined when that needs an unknown cwd or a `..` (lexical `..` is not the kernel's once a symlink is on the way). */
function absolute(p: string, cwd: string | undefined): string | undefined {
  const full = p.startsWith('/') ? p : cwd?.startsWith('/') ? `${cwd}/${p}` : undefined;
  if (full === undefined || full.split('/').includes('..')) return undefined;
  return posix.normalize(full);
}

/** Whether execve of `path` would run something: a non-directory with an execute bit, through at most MAX_LINKS symlinks. */
async function runnable(path: string, stat: SandboxStat): Promise<boolean> {
  let at = path;
  for (let i = 0; i <= MAX_LINKS; i++) {
    const e = await stat(at).catch(() => undefined);
    if (!e) return false;
    if (e.type !== 'symlink') return e.type === 'file' && (e.mode & 0o111) !== 0;
    if (e.linkTarget === undefined) return false;
    at = posix.resolve(posix.dirname(at), e.linkTarget);
  }
  return false;
}

/**
 * The file the guest's `execvp(argv[0])` will run, as a path inside the
 * sandbox: argv[0] itself when it has a slash (against `cwd` if relative),
 * else the first entry of `pathVar` holding something runnable (an empty
 * or relative entry is taken from `cwd`). Undefined when it cannot be told
 * (no such file, or a relative step with no cwd given: the process would
 * start in the user's home, which the control plane does not know; a PATH
 * of more than MAX_PATH_ENTRIES entries). The
 * path is the one execve is handed, not the symlinks' end: `/usr/bin/sh`,
 * not `/usr/bin/dash`.
 */
export async function resolveProgram(name: string, pathVar: string, cwd: string | undefined, stat: SandboxStat): Promise<string | undefined> {
  if (name === '') return undefined;
  if (name.includes('/')) return absolute(name, cwd);
  const dirs = pathVar.split(':');
  if (dirs.length > MAX_PATH_ENTRIES) return undefined;
  const candidates: string[] = [];
  for (const dir of dirs) {
    const c = absolute(dir === '' ? name : `${dir}/${name}`, cwd);
    // An entry we cannot place (relative with no cwd, or with `..`) may hold the file: what runs is unknown.
    if (c === undefined) return undefined;
    candidates.push(c);
  }
  // Asked a batch at a time (each is a round trip to the guest), answered in PATH order.
  for (let i = 0; i < candidates.length; i += STAT_BATCH) {
    const batch = candidates.slice(i, i + STAT_BATCH);
    const ok = await Promise.all(batch.map((c) => runnable(c, stat)));
    const hit = ok.indexOf(true);
    if (hit >= 0) return batch[hit];
  }
  return undefined;
}
