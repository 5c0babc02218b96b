import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { formatAge, formatBytes, printJson, table } from '../format.js';

const USAGE = `Usage: forkd templates [--json]

Lists the templates sandboxes can be created from.

Options:
      --json   print the templates as a JSON array
`;

export const templatesCommand: CliCommand = {
  name: 'templates',
  summary: 'list templates',
  usage: USAGE,
  async run(argv) {
    const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' } } });
    expectPositionals(positionals, []);
    const templates = await connect().sandboxes.templates();
    if (values.json) {
      printJson(templates);
      return 0;
    }
    const rows = templates.map((t) => [t.name, t.sizeBytes !== undefined ? formatBytes(t.sizeBytes) : '-', formatAge(t.createdAt)]);
    process.stdout.write(table(['NAME', 'SIZE', 'CREATED'], rows));
    return 0;
  },
};
