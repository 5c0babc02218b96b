import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox } from '../connect.js';
import { expectSnapshotId } from './snapshot.js';

const PAUSE_USAGE = `Usage: forkd pause ID

Snapshots a sandbox and stops it, releasing its memory. forkd resume brings
it back as it was; exec, cp and other calls on it resume it by themselves.
`;

const RESUME_USAGE = `Usage: forkd resume ID

Brings a paused sandbox back, its processes where they were.
`;

const REWIND_USAGE = `Usage: forkd rewind ID SNAPSHOT

Puts a sandbox back to one of its own snapshots (see forkd timeline):
memory, processes and files. The state it leaves is snapshotted first
(reason rewind), so you can rewind forward again.
`;

export function parseIdArg(argv: string[]): { id: string } {
  const { positionals } = parseOptions({ args: argv, allowPositionals: true, options: {} });
  const [id] = expectPositionals(positionals, ['ID']);
  return { id: id! };
}

export function parseRewindArgs(argv: string[]): { id: string; snapshot: string } {
  const { positionals } = parseOptions({ args: argv, allowPositionals: true, options: {} });
  const [id, snapshot] = expectPositionals(positionals, ['ID', 'SNAPSHOT']);
  return { id: id!, snapshot: expectSnapshotId(snapshot!) };
}

export const pauseCommand: CliCommand = {
  name: 'pause',
  summary: 'snapshot a sandbox and stop it',
  usage: PAUSE_USAGE,
  async run(argv) {
    const { id } = parseIdArg(argv);
    await (await openSandbox(id)).pause();
    return 0;
  },
};

export const resumeCommand: CliCommand = {
  name: 'resume',
  summary: 'resume a paused sandbox',
  usage: RESUME_USAGE,
  async run(argv) {
    const { id } = parseIdArg(argv);
    await (await openSandbox(id)).resume();
    return 0;
  },
};

export const rewindCommand: CliCommand = {
  name: 'rewind',
  summary: 'put a sandbox back to one of its snapshots',
  usage: REWIND_USAGE,
  async run(argv) {
    const args = parseRewindArgs(argv);
    await (await openSandbox(args.id)).rewind(args.snapshot);
    return 0;
  },
};
