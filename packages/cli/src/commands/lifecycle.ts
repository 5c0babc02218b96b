import type { SandboxInfo } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import { printJson } from '../format.js';
import type { CliCommand } from '../command.js';
import { openSandbox } from '../connect.js';
import { expectSnapshotRef, resolveSnapshotRef, type SnapshotRef } from './snapshot.js';
import { UsageError } from '../usage-error.js';

const PAUSE_USAGE = `Usage: forkd pause [--no-memory] ID [--json]

Snapshots a sandbox and stops it: it uses no CPU, and its memory is released
once the server's hot window (FORKD_HOT_PAUSE_S, 60 s; a resume within it
is a thaw) ends or room runs out. forkd resume brings it back as it was;
exec, cp and other calls on it resume it by themselves.

  --no-memory   keep only its files: its processes are stopped without a
                memory image, and the resume starts it cold (same id, files,
                limits and env; new processes)
  --json        print the sandbox as JSON (otherwise nothing: the exit status says it worked)
`;

const RESUME_USAGE = `Usage: forkd resume [--no-memory] ID [--json]

Brings a paused sandbox back, its processes where they were (or, after a
pause --no-memory, started afresh on its files).

  --no-memory   start it cold from its files even if its pause kept memory
  --json        print the sandbox as JSON (otherwise nothing: the exit status says it worked)
`;

const TIMEOUT_USAGE = `Usage: forkd timeout ID SECONDS [--json]

Sets a sandbox's lifetime: it times out SECONDS from now (0: never), which
pauses it or deletes it as its --on-timeout says (forkd create). Prints the
time it now times out.

  --json        print the sandbox as JSON
`;

export function parseTimeoutArgs(argv: string[]): { id: string; seconds: number; json: boolean } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' } } });
  const [id, seconds] = expectPositionals(positionals, ['ID', 'SECONDS']);
  if (!/^\d+$/.test(seconds!)) throw new UsageError(`SECONDS must be a whole number, got ${JSON.stringify(seconds)}`);
  return { id: id!, seconds: Number(seconds), json: !!values.json };
}

export const timeoutCommand: CliCommand = {
  name: 'timeout',
  usage: TIMEOUT_USAGE,
  async run(argv) {
    const { id, seconds, json } = parseTimeoutArgs(argv);
    const info = await (await openSandbox(id)).setTimeout(seconds);
    if (json) return printInfo(info, true);
    process.stdout.write(`${info.expiresAt ? `${info.expiresAt} (${info.onTimeout})` : 'no lifetime'}\n`);
    return 0;
  },
};

const REWIND_USAGE = `Usage: forkd rewind ID SNAPSHOT [--json]

Puts a sandbox back to one of its own snapshots (see forkd timeline), by id
or by name (the newest of that name): memory, processes and files. The state it leaves is snapshotted first
(reason rewind), so you can rewind forward again.

  --json        print the sandbox as JSON (otherwise nothing: the exit status says it worked)
`;

export function parseIdArg(argv: string[]): { id: string; json: boolean } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' } } });
  const [id] = expectPositionals(positionals, ['ID']);
  return { id: id!, json: !!values.json };
}

export function parseRewindArgs(argv: string[]): { id: string; snapshot: SnapshotRef; json: boolean } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' } } });
  const [id, snapshot] = expectPositionals(positionals, ['ID', 'SNAPSHOT']);
  return { id: id!, snapshot: expectSnapshotRef(snapshot!), json: !!values.json };
}

/** `ID [--no-memory] [--json]`: pause and resume. */
export function parseMemoryArgs(argv: string[]): { id: string; memory: boolean; json: boolean } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' }, 'no-memory': { type: 'boolean' } } });
  const [id] = expectPositionals(positionals, ['ID']);
  return { id: id!, memory: !values['no-memory'], json: !!values.json };
}

/** With --json the sandbox as it is now; otherwise nothing (the exit status says it worked). */
function printInfo(info: SandboxInfo, json: boolean): number {
  if (json) printJson(info);
  return 0;
}

export const pauseCommand: CliCommand = {
  name: 'pause',
  usage: PAUSE_USAGE,
  async run(argv) {
    const { id, memory, json } = parseMemoryArgs(argv);
    return printInfo(await (await openSandbox(id)).pause(memory ? {} : { memory: false }), json);
  },
};

export const resumeCommand: CliCommand = {
  name: 'resume',
  usage: RESUME_USAGE,
  async run(argv) {
    const { id, memory, json } = parseMemoryArgs(argv);
    return printInfo(await (await openSandbox(id)).resume(memory ? {} : { memory: false }), json);
  },
};

export const rewindCommand: CliCommand = {
  name: 'rewind',
  usage: REWIND_USAGE,
  async run(argv) {
    const args = parseRewindArgs(argv);
    const sb = await openSandbox(args.id);
    const snapshot = 'id' in args.snapshot ? args.snapshot.id : resolveSnapshotRef(args.snapshot, await sb.timeline(), args.id);
    return printInfo(await sb.rewind(snapshot), args.json);
  },
};
