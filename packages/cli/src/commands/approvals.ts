import type { ApprovalInfo } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { formatAge, printJson, table } from '../format.js';

const LIST_USAGE = `Usage: forkd approvals [--json]

Lists the calls waiting for an approver (a policy's requireApproval): a
tenant's keys see its own, admin keys every tenant's. Decide with
\`forkd approve ID\` or \`forkd deny ID\`.

Options:
      --json   print JSON
`;

export function approvalsTable(list: readonly ApprovalInfo[], now = Date.now()): string {
  return table(
    ['ID', 'SANDBOX', 'TENANT', 'AGE', 'RULE', 'COMMAND'],
    list.map((a) => [a.id, a.sandbox, a.tenant, formatAge(a.createdAt, now), a.rule, a.command.length > 80 ? `${a.command.slice(0, 77)}...` : a.command]),
  );
}

export const approvalsCommand: CliCommand = {
  name: 'approvals',
  summary: 'list calls waiting for approval',
  usage: LIST_USAGE,
  async run(argv) {
    const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' } } });
    expectPositionals(positionals, []);
    const list = await connect().approvals.list();
    if (values.json) printJson(list);
    else process.stdout.write(approvalsTable(list));
    return 0;
  },
};

function decideCommand(name: 'approve' | 'deny'): CliCommand {
  return {
    name,
    summary: name === 'approve' ? 'approve a waiting call (it runs)' : 'deny a waiting call (it fails with PERMISSION_DENIED)',
    usage: `Usage: forkd ${name} ID\n\n${name === 'approve' ? 'Approves the waiting call ID: it runs.' : 'Denies the waiting call ID: it ends with PERMISSION_DENIED.'} See \`forkd approvals\`.\n`,
    async run(argv) {
      const { positionals } = parseOptions({ args: argv, allowPositionals: true, options: {} });
      const [id] = expectPositionals(positionals, ['ID']);
      const a = await connect().approvals[name](id!);
      process.stdout.write(`${name === 'approve' ? 'approved' : 'denied'} ${a.id}: ${a.command}\n`);
      return 0;
    },
  };
}

export const approveCommand = decideCommand('approve');
export const denyCommand = decideCommand('deny');
