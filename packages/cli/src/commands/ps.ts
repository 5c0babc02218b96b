import { constants } from 'node:os';
import type { ProcessInfo } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox } from '../connect.js';
import { printJson, table } from '../format.js';

const USAGE = `Usage: forkd ps ID [--json]

Lists the processes forkd started in a sandbox (running and recently exited).

Options:
      --json   print the processes as a JSON array
`;

const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, n]) => [n as number, name]));

export function processStatus(p: ProcessInfo): string {
  if (p.running) return 'running';
  if (p.signal) return `killed (${SIGNAL_NAMES.get(p.signal) ?? p.signal})`;
  return `exited (${p.exitCode ?? '?'})`;
}

export const psCommand: CliCommand = {
  name: 'ps',
  usage: USAGE,
  async run(argv) {
    const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' } } });
    const [id] = expectPositionals(positionals, ['ID']);
    const procs = await (await openSandbox(id!)).processes();
    if (values.json) {
      printJson(procs);
      return 0;
    }
    const rows = procs.map((p) => [String(p.pid), p.tag ?? '', processStatus(p), p.pty ? 'pty' : '', p.cmd.join(' ')]);
    process.stdout.write(table(['PID', 'TAG', 'STATUS', 'TTY', 'COMMAND'], rows));
    return 0;
  },
};
