import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { formatAge, printJson, table } from '../format.js';

const USAGE = `Usage: forkd ls [--json]

Lists sandboxes.

Options:
      --json   print the sandboxes as a JSON array
`;

export const lsCommand: CliCommand = {
  name: 'ls',
  summary: 'list sandboxes',
  usage: USAGE,
  async run(argv) {
    const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' } } });
    expectPositionals(positionals, []);
    const infos = (await connect().sandboxes.list()).map((s) => s.info);
    if (values.json) {
      printJson(infos);
      return 0;
    }
    const rows = infos.map((i) => [i.id, i.template, i.error ? `${i.state} (${i.error})` : i.state, `${i.limits.memoryMb}M`, String(i.limits.cpus), formatAge(i.createdAt)]);
    process.stdout.write(table(['ID', 'TEMPLATE', 'STATE', 'MEM', 'CPUS', 'CREATED'], rows));
    return 0;
  },
};
