import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { killCgroup } from '../cgroups/cgroups.js';

/** How long the init may take to become a zombie once its cgroup is empty (it reaps its namespace's tasks first). */
const INIT_EXIT_MS = 2_000;

/**
 * Kills a container's every task (killCgroup: no fork outruns it) and waits
 * until runc would call it stopped: its init a zombie or gone. An empty
 * cgroup.procs is not that yet (the kernel unlists a task early in its
 * exit; a pid namespace's init then still waits for the rest to be reaped).
 * Done here because `runc delete --force` (1.1) signals the init only and
 * then sleeps 100 ms before it looks; a delete that finds the container
 * stopped only removes its state. False when tasks or the init are left at
 * the deadline: runc's own kill is the fallback.
 */
export async function killContainer(cgroupPath: string, pidFile: string): Promise<boolean> {
  const init = await initOf(pidFile);
  if (!(await killCgroup(cgroupPath))) return false;
  if (!init) return true;
  const deadline = Date.now() + INIT_EXIT_MS;
  for (let delay = 1; ; delay = Math.min(delay * 2, 20)) {
    if (await exited(init)) return true;
    if (Date.now() >= deadline) return false;
    await sleep(delay);
  }
}

interface Proc {
  pid: number;
  startTime: string;
}

/** The init's pid (runc writes it at run and restore) and start time, which tells it from a later process with its pid. */
async function initOf(pidFile: string): Promise<Proc | undefined> {
  const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const st = await procStat(pid);
  return st && !st.gone ? { pid, startTime: st.startTime } : undefined;
}

async function exited(p: Proc): Promise<boolean> {
  const st = await procStat(p.pid);
  return !st || st.gone || st.startTime !== p.startTime;
}

/** State and start time from /proc/PID/stat (fields 3 and 22; the name before them may hold spaces and parentheses). */
export async function procStat(pid: number): Promise<{ gone: boolean; startTime: string } | undefined> {
  const s = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (s === undefined) return undefined;
  const fields = s.slice(s.lastIndexOf(')') + 2).split(' ');
  const state = fields[0] ?? '';
  return { gone: state === 'Z' || state === 'X' || state === 'x', startTime: fields[19] ?? '' };
}
