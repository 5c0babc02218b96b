import { readFile, rename, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The early thaw of a dump that leaves the tree running, before runc exits:
 * criu's wrapper, relaying the dump, thaws at CRIU's answer (CRIU has put the
 * cgroup back to frozen and detached by then); without the relay, forkd's
 * CRIU action script, at network-unlock, starts a watcher that thaws as soon
 * as CRIU has refrozen the cgroup (3-7 ms of an 80 ms freeze on a slow host).
 * Whoever of them (the "watcher" below) and forkd first renames the token
 * thaws, so one late for any reason can never thaw a later freeze (see
 * packages/host-tools/src/criu-action/thaw.c).
 */
export const THAW_TOKEN = '.thaw-token';
export const THAW_CLAIMED = '.thaw-claimed';
export const THAWED_AT = '.thawed-at';
/** Every file of the handshake beside the hook, for the dump's clean-up. */
export const EARLY_THAW_FILES = [THAW_TOKEN, THAW_CLAIMED, '.thaw-forkd', THAWED_AT, `${THAWED_AT}.tmp`] as const;

/** How long forkd waits for the report of a watcher that claimed the thaw (it has, at most, a thaw to write). */
const REPORT_DEADLINE_MS = 10_000;

/** Offers the thaw to the watcher: before the dump starts. */
export async function offerThaw(hook: string): Promise<void> {
  await writeFile(`${hook}${THAW_TOKEN}`, '', { mode: 0o600, flag: 'wx' });
}

/**
 * Once runc has exited (whatever its outcome): the tree is thawed when this
 * resolves, by the watcher or by `thaw`, and no watcher will touch it again.
 * Resolves to the instant of the thaw, ns since the epoch.
 */
export async function settleThaw(hook: string, thaw: () => Promise<void>, deadlineMs = REPORT_DEADLINE_MS): Promise<bigint> {
  if (!(await claimedByWatcher(hook))) {
    await thaw();
    return nowNs();
  }
  const at = await watcherReport(hook, deadlineMs);
  if (at === undefined || at === 0n) {
    // Its thaw failed, or it died between its claim and its report: thaw here (it writes nothing more).
    await thaw();
    return nowNs();
  }
  return at;
}

async function claimedByWatcher(hook: string): Promise<boolean> {
  try {
    await rename(`${hook}${THAW_TOKEN}`, `${hook}.thaw-forkd`);
    return false;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw err;
  }
}

/** The watcher's report, looked for every millisecond (it is due within microseconds of its claim). */
async function watcherReport(hook: string, deadlineMs: number): Promise<bigint | undefined> {
  const end = performance.now() + deadlineMs;
  for (;;) {
    const s = await readFile(`${hook}${THAWED_AT}`, 'utf8').catch(() => undefined);
    if (s !== undefined) return /^\d+\n?$/.test(s) ? BigInt(s.trim()) : undefined;
    if (performance.now() >= end) return undefined;
    await sleep(1);
  }
}

/** Now, ns since the epoch (the resolution of Date.now: the action script's instants are finer). */
export function nowNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}
