import { parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { reportError } from '../report-error.js';
import { UsageError } from '../usage-error.js';

const USAGE = `Usage: forkd rm ID... | forkd rm --all

Deletes sandboxes (their processes are killed, their files are gone).
Prints each id deleted; carries on past failures and exits 1 if any failed.

Options:
      --all   delete every sandbox
`;

export function parseRmArgs(argv: string[]): { ids: string[]; all: boolean } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { all: { type: 'boolean' } } });
  if (values.all && positionals.length) throw new UsageError('give ids or --all, not both');
  if (!values.all && !positionals.length) throw new UsageError('missing ID');
  return { ids: positionals, all: !!values.all };
}

export const rmCommand: CliCommand = {
  name: 'rm',
  usage: USAGE,
  async run(argv) {
    const args = parseRmArgs(argv);
    const client = connect();
    const ids = args.all ? (await client.sandboxes.list()).map((s) => s.id) : args.ids;
    let status = 0;
    for (const id of ids) {
      try {
        await client.sandboxes.delete(id);
        process.stdout.write(`${id}\n`);
      } catch (err) {
        status = reportError(err);
      }
    }
    return status;
  },
};
