import type { SnapshotInfo } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox } from '../connect.js';
import { formatAge, formatBytes, printJson, table } from '../format.js';

const USAGE = `Usage: forkd timeline ID [--json]

Lists a sandbox's snapshots, oldest first. REASON tells what took each:
manual (forkd snapshot), pause, rewind, fork (a live fork) or policy.
FREEZE is how long its processes were frozen for the dump.

Options:
      --json   print the snapshots as a JSON array
`;

export function parseTimelineArgs(argv: string[]): { id: string; json: boolean } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' } } });
  const [id] = expectPositionals(positionals, ['ID']);
  return { id: id!, json: !!values.json };
}

export function timelineTable(snaps: readonly SnapshotInfo[], now = Date.now()): string {
  const rows = snaps.map((s) => [
    s.id,
    s.name ?? '-',
    formatAge(s.createdAt, now),
    formatBytes(s.sizeBytes),
    String(Math.round(s.frozenMs * 10) / 10),
    s.pinned ? 'yes' : 'no',
    s.reason,
  ]);
  return table(['ID', 'NAME', 'CREATED', 'SIZE', 'FREEZE ms', 'PINNED', 'REASON'], rows);
}

export const timelineCommand: CliCommand = {
  name: 'timeline',
  usage: USAGE,
  async run(argv) {
    const args = parseTimelineArgs(argv);
    const snaps = await (await openSandbox(args.id)).timeline();
    if (args.json) printJson(snaps);
    else process.stdout.write(timelineTable(snaps));
    return 0;
  },
};
