import { constants as osConstants } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxManager } from '@forkd/server';

/**
 * The longest silence an exec stream sees while a snapshot is taken: a
 * process prints a line every 10 ms, and for each snapshot the widest gap
 * between two arrivals around it is kept (the stream detaches before the
 * dump, waits for the thaw and resumes at its offset).
 */
export async function streamGapsAcrossSnapshots(m: SandboxManager, id: string, snapshots: number): Promise<number[]> {
  const arrivals: number[] = [];
  const { process, exit } = await m.spawn(id, { argv: ['python3', '-u', '-c', 'import time\nwhile True:\n  print("x")\n  time.sleep(0.01)'] }, { onStdout: () => void arrivals.push(performance.now()) });
  const gaps: number[] = [];
  try {
    await sleep(500);
    for (let i = 0; i < snapshots; i++) {
      const t0 = performance.now();
      await m.snapshot(id);
      const t1 = performance.now();
      await sleep(300);
      const before = arrivals.filter((a) => a < t0).pop() ?? t0;
      const around = arrivals.filter((a) => a >= before && a <= t1 + 300);
      let widest = 0;
      for (let k = 1; k < around.length; k++) widest = Math.max(widest, around[k]! - around[k - 1]!);
      gaps.push(widest);
    }
  } finally {
    process.signal(osConstants.signals.SIGKILL);
    await exit.catch(() => null);
  }
  return gaps;
}
