import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { REPO_ROOT } from '../../shared/config.js';
import { exec } from '../../shared/exec.js';

export const SHARED_RANGES_TOOL = join(REPO_ROOT, 'packages/host-tools/build/forkd-shared-ranges');

/** [start, length) byte ranges, in order, not overlapping. */
export type ByteRanges = ReadonlyArray<readonly [number, number]>;

export type RangesParse = { ok: true; ranges: ByteRanges } | { ok: false; error: string };

/** forkd-shared-ranges' output: "START LEN" lines, ascending, disjoint, each length > 0. Anything else is refused whole. */
export function parseRanges(text: string): RangesParse {
  const ranges: Array<[number, number]> = [];
  let end = 0;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const m = /^(\d{1,16}) (\d{1,16})$/.exec(line);
    const start = m ? Number(m[1]) : NaN;
    const len = m ? Number(m[2]) : NaN;
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(len) || len <= 0 || start < end || !Number.isSafeInteger(start + len)) {
      return { ok: false, error: `bad range line: ${JSON.stringify(line.slice(0, 80))}` };
    }
    ranges.push([start, len]);
    end = start + len;
  }
  return { ok: true, ranges };
}

/**
 * Where files `a` and `b` (on one Btrfs filesystem) refer to the same bytes
 * on disk at the same offsets, so hold equal bytes there without either
 * being read (the tool reads the files' extent items).
 */
export async function sharedRanges(a: string, b: string, tool = SHARED_RANGES_TOOL): Promise<ByteRanges> {
  const r = await exec(tool, [a, b]);
  const p = parseRanges(r.stdout);
  if (!p.ok) throw new ForkdError('INTERNAL', `unexpected forkd-shared-ranges output: ${p.error}`, { cmd: tool });
  return p.ranges;
}
