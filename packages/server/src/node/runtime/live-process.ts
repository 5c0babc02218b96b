import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

/** A process told apart from a later one given its pid by its start time. */
export interface LiveProcess {
  pid: number;
  startTime: string;
}

/** `pid` while it runs (not a zombie), with its start time. */
export async function liveProcess(pid: number): Promise<LiveProcess | undefined> {
  const st = await procStat(pid);
  return st && !st.gone ? { pid, startTime: st.startTime } : undefined;
}

/** The process a pid file names (runc writes one at run and restore) while it runs, with its start time. */
export async function processOf(pidFile: string): Promise<LiveProcess | undefined> {
  const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  return liveProcess(pid);
}

/** Whether `p` has ended: gone, a zombie, or its pid another process's by now. */
export async function hasExited(p: LiveProcess): Promise<boolean> {
  const st = await procStat(p.pid);
  return !st || st.gone || st.startTime !== p.startTime;
}

/** Waits until `p` has ended, looking at doubling intervals up to 20 ms; false at `deadline` (epoch ms) if it has not. */
export async function awaitExit(p: LiveProcess, deadline: number): Promise<boolean> {
  for (let delay = 1; ; delay = Math.min(delay * 2, 20)) {
    if (await hasExited(p)) return true;
    if (Date.now() >= deadline) return false;
    await sleep(delay);
  }
}

/** State and start time from /proc/PID/stat (fields 3 and 22; the name before them may hold spaces and parentheses). */
async function procStat(pid: number): Promise<{ gone: boolean; startTime: string } | undefined> {
  const s = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (s === undefined) return undefined;
  const fields = s.slice(s.lastIndexOf(')') + 2).split(' ');
  const state = fields[0] ?? '';
  return { gone: state === 'Z' || state === 'X' || state === 'x', startTime: fields[19] ?? '' };
}
