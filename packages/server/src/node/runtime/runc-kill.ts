import { killCgroup } from '../cgroups/cgroups.js';
import { awaitExit, processOf } from './live-process.js';

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
  const init = await processOf(pidFile);
  if (!(await killCgroup(cgroupPath))) return false;
  if (!init) return true;
  return awaitExit(init, Date.now() + INIT_EXIT_MS);
}
