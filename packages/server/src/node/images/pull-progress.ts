import { readdir, readFile, stat } from 'node:fs/promises';
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
 * While `work` runs, calls `report` every `everyMs` with what `measure`
 * says (bytes so far: skopeo says nothing until it is done). A measure that
 * fails or says 0 is not reported.
 */
export async function whileMeasured<T>(measure: () => Promise<number>, everyMs: number, report: (bytes: number) => Promise<void> | void, work: Promise<T>): Promise<T> {
  let busy = false;
  let stopped = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    // A count that lands after the work ended is not reported: its next line is already out.
    void measure()
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

/** The bytes of the files in `dir` (0 while it is not there). */
export async function dirBytes(dir: string): Promise<number> {
  let sum = 0;
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (e.isFile()) sum += await stat(join(dir, e.name)).then((s) => s.size, () => 0);
  }
  return sum;
}

/**
 * Bytes a process has read so far (`rchar` of /proc/PID/io: sockets and
 * files alike): for skopeo, what it fetched of the image, comparable with the
 * manifest's sizes (it writes the layers decompressed). 0 once it is gone.
 */
export async function bytesRead(pid: number): Promise<number> {
  const io = await readFile(`/proc/${pid}/io`, 'utf8').catch(() => '');
  const m = /^rchar: (\d+)$/m.exec(io);
  return m ? Number(m[1]) : 0;
}
