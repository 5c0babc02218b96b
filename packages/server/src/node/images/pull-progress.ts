import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { byteRate, formatRemaining } from '@forkd/protocol/progress-estimate';

const MIB = 1024 * 1024;
const mib = (n: number) => `${(n / MIB).toFixed(n < 10 * MIB ? 1 : 0)} MiB`;

/** "(120 MiB of 300 MiB, 25 MiB/s, ~8s left)"; without a total "(120 MiB, 25 MiB/s)"; the rate once a byte moved. */
export function bytesNote(done: number, total: number | undefined, elapsedMs: number): string {
  const { perSecond, remainingMs } = byteRate({ done, total, elapsedMs });
  const parts = [total === undefined ? mib(done) : `${mib(done)} of ${mib(total)}`];
  if (perSecond !== undefined) parts.push(`${mib(perSecond)}/s`);
  if (remainingMs !== undefined && total !== undefined && done < total) parts.push(formatRemaining(remainingMs));
  return `(${parts.join(', ')})`;
}

/**
 * While `work` runs, calls `report` every `everyMs` with the bytes of the
 * files in `dir` (a pull's copy: skopeo says nothing until it is done).
 * Never throws for the directory (not there yet, a file renamed away).
 */
export async function whileGrowing<T>(dir: string, everyMs: number, report: (bytes: number) => Promise<void> | void, work: Promise<T>): Promise<T> {
  let busy = false;
  let stopped = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    // A count that lands after the work ended is not reported: its next line is already out.
    void dirBytes(dir)
      .then((b) => (b > 0 && !stopped ? report(b) : undefined))
      .catch(() => {})
      .finally(() => (busy = false));
  }, everyMs);
  try {
    return await work;
  } finally {
    stopped = true;
    clearInterval(timer);
  }
}

async function dirBytes(dir: string): Promise<number> {
  let sum = 0;
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (e.isFile()) sum += await stat(join(dir, e.name)).then((s) => s.size, () => 0);
  }
  return sum;
}
