import { constants } from 'node:os';
import { expectPositionals, parseOptions, parseProcessArg } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox } from '../connect.js';
import { UsageError } from '../usage-error.js';

const USAGE = `Usage: forkd kill ID PID|tag:TAG [--signal SIG]

Sends a signal to a process in a sandbox.

Options:
  -s, --signal SIG   TERM (default), KILL, INT, HUP, USR1, ... or a number
`;

/** Signal names become numbers here, so every name the host knows works, not only the API's short list. */
export function parseSignal(value: string): number {
  if (/^[0-9]+$/.test(value)) {
    const n = Number(value);
    if (n >= 1 && n <= 64) return n;
  } else {
    const up = value.toUpperCase();
    const n = (constants.signals as Record<string, number>)[up.startsWith('SIG') ? up : `SIG${up}`];
    if (n) return n;
  }
  throw new UsageError(`unknown signal ${JSON.stringify(value)}`);
}

export function parseKillArgs(argv: string[]): { id: string; process: number | string; signal: number } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { signal: { type: 'string', short: 's' } } });
  const [id, sel] = expectPositionals(positionals, ['ID', 'PID|tag:TAG']);
  return { id: id!, process: parseProcessArg(sel!), signal: parseSignal(values.signal ?? 'TERM') };
}

export const killCommand: CliCommand = {
  name: 'kill',
  usage: USAGE,
  async run(argv) {
    const args = parseKillArgs(argv);
    await (await openSandbox(args.id)).signal(args.process, args.signal);
    return 0;
  },
};
