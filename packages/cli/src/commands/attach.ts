import { ForkdError } from '@forkd/sdk';
import { expectPositionals, parseOptions, parseProcessArg } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox } from '../connect.js';
import { exitStatus } from '../exit-status.js';

const USAGE = `Usage: forkd attach ID PID|tag:TAG

Follows a process's output (what it already printed first) until it exits,
then exits with its status. Ctrl-C detaches; the process keeps running.
`;

export const attachCommand: CliCommand = {
  name: 'attach',
  usage: USAGE,
  async run(argv) {
    const { positionals } = parseOptions({ args: argv, allowPositionals: true, options: {} });
    const [id, sel] = expectPositionals(positionals, ['ID', 'PID|tag:TAG']);
    const target = parseProcessArg(sel!);
    const sb = await openSandbox(id!);
    const abort = new AbortController();
    const detach = () => abort.abort();
    process.once('SIGINT', detach);
    try {
      const exit = await sb.attach(target, {
        abortSignal: abort.signal,
        onStdout: (c) => process.stdout.write(c),
        onStderr: (c) => process.stderr.write(c),
      });
      if (!exit) throw new ForkdError('UNAVAILABLE', 'the output stream ended before the process exited; it keeps running');
      return exitStatus(exit);
    } catch (err) {
      if (abort.signal.aborted) return 130;
      throw err;
    } finally {
      process.off('SIGINT', detach);
    }
  },
};
