import { ForkdError } from '@forkd/sdk';
import { SNAPSHOT_NAME_PATTERN } from '@forkd/protocol/ids';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect, openSandbox } from '../connect.js';
import { printJson } from '../format.js';
import { reportError } from '../report-error.js';
import { UsageError } from '../usage-error.js';

const USAGE = `Usage: forkd snapshot ID [--name NAME] [--json]

Snapshots a sandbox (memory and files) and prints the snapshot's id. Its
processes are frozen only for the dump; the sandbox keeps running.
See forkd timeline, fork, rewind, snapshot-rm.

Options:
      --name NAME   a label for the timeline (letters, digits, . _ -; at most 64)
      --json        print the snapshot as JSON
`;

export function parseSnapshotArgs(argv: string[]): { id: string; name: string | undefined; json: boolean } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { name: { type: 'string' }, json: { type: 'boolean' } } });
  if (positionals[0] === 'rm') throw new UsageError("to delete a snapshot use 'forkd snapshot-rm SNAP'");
  const [id] = expectPositionals(positionals, ['ID']);
  if (values.name !== undefined && !SNAPSHOT_NAME_PATTERN.test(values.name)) {
    throw new UsageError(`invalid --name ${JSON.stringify(values.name)}: use 1 to 64 letters, digits, '.', '_' or '-'`);
  }
  return { id: id!, name: values.name, json: !!values.json };
}

export const snapshotCommand: CliCommand = {
  name: 'snapshot',
  usage: USAGE,
  async run(argv) {
    const args = parseSnapshotArgs(argv);
    const snap = await (await openSandbox(args.id)).snapshot(args.name !== undefined ? { name: args.name } : {});
    if (args.json) printJson(snap);
    else process.stdout.write(`${snap.id}\n`);
    return 0;
  },
};

const RM_USAGE = `Usage: forkd snapshot-rm SNAP...

Deletes snapshots. Sandboxes forked from one keep running. The snapshot
holding a paused sandbox's state cannot be deleted (resume it first).
Prints each id deleted; carries on past failures and exits 1 if any failed.
`;

/** A snapshot of a sandbox's own timeline on the command line: its id, or its name (the newest of that name). */
export type SnapshotRef = { id: string } | { name: string };

export function expectSnapshotRef(value: string): SnapshotRef {
  if (value.startsWith('snap-')) return { id: value };
  if (SNAPSHOT_NAME_PATTERN.test(value) && !value.startsWith('sbx-')) return { name: value };
  throw new UsageError(`expected a snapshot id (snap-...) or name, got ${JSON.stringify(value)}`);
}

/** The snapshot id a reference names in a sandbox's timeline (oldest first: the last of a name is the newest). */
export function resolveSnapshotRef(ref: SnapshotRef, timeline: readonly { id: string; name?: string | undefined }[], sandbox: string): string {
  if ('id' in ref) return ref.id;
  const found = timeline.filter((s) => s.name === ref.name).at(-1);
  if (!found) throw new ForkdError('NOT_FOUND', `no snapshot named ${JSON.stringify(ref.name)} in ${sandbox}'s timeline (see forkd timeline ${sandbox})`);
  return found.id;
}

/** A snapshot id on the command line: anything else (a sandbox id above all) is a mistake worth catching early. */
export function expectSnapshotId(value: string): string {
  if (!value.startsWith('snap-')) throw new UsageError(`expected a snapshot id (snap-...), got ${JSON.stringify(value)}`);
  return value;
}

export function parseSnapshotRmArgs(argv: string[]): { ids: string[] } {
  const { positionals } = parseOptions({ args: argv, allowPositionals: true, options: {} });
  if (!positionals.length) throw new UsageError('missing SNAP');
  return { ids: positionals.map(expectSnapshotId) };
}

export const snapshotRmCommand: CliCommand = {
  name: 'snapshot-rm',
  usage: RM_USAGE,
  async run(argv) {
    const { ids } = parseSnapshotRmArgs(argv);
    const client = connect();
    let status = 0;
    for (const id of ids) {
      try {
        await client.snapshots.delete(id);
        process.stdout.write(`${id}\n`);
      } catch (err) {
        status = reportError(err);
      }
    }
    return status;
  },
};

const PIN_USAGE = `Usage: forkd pin SNAP [--off] [--json]

Pins a snapshot so the rolling timeline never thins it away (named snapshots
start pinned); --off unpins it.
`;

export function parsePinArgs(argv: string[]): { id: string; pinned: boolean; json: boolean } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { off: { type: 'boolean' }, json: { type: 'boolean' } } });
  const [id] = expectPositionals(positionals, ['SNAP']);
  return { id: expectSnapshotId(id!), pinned: !values.off, json: !!values.json };
}

export const pinCommand: CliCommand = {
  name: 'pin',
  usage: PIN_USAGE,
  async run(argv) {
    const { id, pinned, json } = parsePinArgs(argv);
    const s = await connect().snapshots.pin(id, pinned);
    if (json) printJson(s);
    else process.stdout.write(`${s.id} ${s.pinned ? 'pinned' : 'unpinned'}\n`);
    return 0;
  },
};
