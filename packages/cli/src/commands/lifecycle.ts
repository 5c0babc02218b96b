import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox } from '../connect.js';
import { expectSnapshotId } from './snapshot.js';
import { UsageError } from '../usage-error.js';

const PAUSE_USAGE = `Usage: forkd pause ID

Snapshots a sandbox and stops it, releasing its memory. forkd resume brings
it back as it was; exec, cp and other calls on it resume it by themselves.
`;

const RESUME_USAGE = `Usage: forkd resume ID

Brings a paused sandbox back, its processes where they were.
`;

const TIMEOUT_USAGE = `Usage: forkd timeout ID SECONDS

Sets a sandbox's lifetime: it times out SECONDS from now (0: never), which
pauses it or deletes it as its --on-timeout says (forkd create). Prints the
time it now times out.
`;

export function parseTimeoutArgs(argv: string[]): { id: string; seconds: number } {
  const { positionals } = parseOptions({ args: argv, allowPositionals: true, options: {} });
  const [id, seconds] = expectPositionals(positionals, ['ID', 'SECONDS']);
  if (!/^\d+$/.test(seconds!)) throw new UsageError(`SECONDS must be a whole number, got ${JSON.stringify(seconds)}`);
  return { id: id!, seconds: Number(seconds) };
}

export const timeoutCommand: CliCommand = {
  name: 'timeout',
  summary: "set a sandbox's lifetime",
  usage: TIMEOUT_USAGE,
  async run(argv) {
    const { id, seconds } = parseTimeoutArgs(argv);
    const info = await (await openSandbox(id)).setTimeout(seconds);
    process.stdout.write(`${info.expiresAt ? `${info.expiresAt} (${info.onTimeout})` : 'no lifetime'}\n`);
    return 0;
  },
};

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
