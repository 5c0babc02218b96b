import type { AuditRecord } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';

const USAGE = `Usage: forkd logs ID [-f] [--json]

Shows what happened to a sandbox, oldest first: every call on it (create,
exec with its command, file paths, snapshots, pause, resume, fork, rewind,
delete) with its result and duration, from the audit log, and what happened
without a call: its processes lost (\`lost\`) and brought back (\`recover\`,
with the snapshot used and the work lost). Output of its processes is
forkd attach.

Options:
  -f, --follow   keep printing new events until interrupted
      --json     one JSON record per line
`;

export function parseLogsArgs(argv: string[]): { id: string; follow: boolean; json: boolean } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { follow: { type: 'boolean', short: 'f' }, json: { type: 'boolean' } } });
  const [id] = expectPositionals(positionals, ['ID']);
  return { id: id!, follow: !!values.follow, json: !!values.json };
}

export function logLine(r: AuditRecord): string {
  const target = r.target ? ` ${r.target}` : '';
  return `${r.at} ${r.operation}${target} -> ${r.code} (${Math.round(r.durationMs)} ms)\n`;
}

export const logsCommand: CliCommand = {
  name: 'logs',
  usage: USAGE,
  async run(argv) {
    const { id, follow, json } = parseLogsArgs(argv);
    const client = connect();
    await client.sandboxes.get(id);
    const print = (r: AuditRecord) => process.stdout.write(json ? `${JSON.stringify(r)}\n` : logLine(r));
    let last = 0;
    const drain = async () => {
      for (;;) {
        const page = await client.audit.list({ sandbox: id, after: last, limit: 1000 });
        for (const r of page) print(r);
        if (page.length) last = page[page.length - 1]!.id;
        if (page.length < 1000) return;
      }
    };
    await drain();
    if (!follow) return 0;
    let stop = false;
    const onInt = () => {
      stop = true;
    };
    process.once('SIGINT', onInt);
    try {
      while (!stop) {
        await new Promise((r) => setTimeout(r, 1000));
        await drain();
      }
    } finally {
      process.off('SIGINT', onInt);
    }
    return 0;
  },
};
