import { ForkdError, type PtyOptions } from '@forkd/sdk';
import { expectPositionals, parseEnvPairs, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox, requireWebSocket } from '../connect.js';
import { exitStatus } from '../exit-status.js';

const USAGE = `Usage: forkd shell [options] ID

Opens an interactive terminal in sandbox ID (default: bash -l) and exits with
its status when it ends. Everything typed, Ctrl-C included, goes to the
sandbox.

Options:
  -c, --cmd "CMD"     run CMD (through bash -lc) instead of a login shell
  -e, --env K=V       environment variable (repeatable; a bare K copies it from here)
  -w, --cwd DIR       working directory
  -u, --user USER     run as USER (default root)
`;

export interface ShellArgs {
  id: string;
  command: string | undefined;
  env: Record<string, string> | undefined;
  cwd: string | undefined;
  user: string | undefined;
}

export function parseShellArgs(argv: string[]): ShellArgs {
  const { values, positionals } = parseOptions({
    args: argv,
    allowPositionals: true,
    options: {
      cmd: { type: 'string', short: 'c' },
      env: { type: 'string', short: 'e', multiple: true },
      cwd: { type: 'string', short: 'w' },
      user: { type: 'string', short: 'u' },
    },
  });
  const [id] = expectPositionals(positionals, ['ID']);
  return { id: id!, command: values.cmd, env: parseEnvPairs(values.env), cwd: values.cwd, user: values.user };
}

export const shellCommand: CliCommand = {
  name: 'shell',
  usage: USAGE,
  async run(argv) {
    const args = parseShellArgs(argv);
    requireWebSocket('forkd shell');
    const sb = await openSandbox(args.id);
    const { stdin, stdout } = process;
    const opts: PtyOptions = {
      cols: stdout.columns || 80,
      rows: stdout.rows || 24,
      env: { TERM: process.env.TERM || 'xterm-256color', ...args.env },
    };
    if (args.command !== undefined) opts.cmd = args.command;
    if (args.cwd !== undefined) opts.cwd = args.cwd;
    if (args.user !== undefined) opts.user = args.user;
    const session = await sb.pty(opts);
    session.onData((d) => void stdout.write(d));
    // Snapshots and pauses pass unseen; a rewind changes what the shell is looking at, so say so.
    session.onRewound(() => void process.stderr.write('\r\n[forkd] the sandbox was rewound; this shell goes on from that state\r\n'));

    const raw = !!stdin.isTTY;
    const onInput = (d: Buffer) => void session.write(d).catch(() => {});
    const onResize = () => {
      try {
        session.resize(stdout.columns || 80, stdout.rows || 24);
      } catch {
        // closing
      }
    };
    // However forkd ends, the local terminal must not stay in raw mode.
    const restore = () => {
      stdin.off('data', onInput);
      process.off('SIGWINCH', onResize);
      if (raw && stdin.isRaw) stdin.setRawMode(false);
      stdin.pause();
    };
    const hangUp = (status: number) => () => {
      restore();
      session.close();
      process.exit(status);
    };
    const onHup = hangUp(129);
    const onTerm = hangUp(143);
    process.on('exit', restore);
    process.once('SIGHUP', onHup);
    process.once('SIGTERM', onTerm);
    process.on('SIGWINCH', onResize);
    if (raw) stdin.setRawMode(true);
    stdin.on('data', onInput);
    stdin.resume();
    try {
      const exit = await session.exit.catch((err: unknown) => {
        if (err instanceof ForkdError && err.code === 'REWOUND') throw new ForkdError('REWOUND', 'the sandbox was rewound to a state before this shell started; open a new one');
        throw err;
      });
      if (!exit) throw new ForkdError('UNAVAILABLE', 'the terminal stream closed before the shell exited');
      return exitStatus(exit);
    } finally {
      restore();
      process.off('exit', restore);
      process.off('SIGHUP', onHup);
      process.off('SIGTERM', onTerm);
    }
  },
};
