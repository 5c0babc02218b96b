import type { ApprovalInfo, ExecContext } from '@forkd/sdk';
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

const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 3)}...` : s);

/** What a call runs with besides its command, in one line: every variable's name is shown, long values cut (`--json` has them whole). */
export function contextSummary(ctx: ExecContext | undefined): string {
  if (!ctx) return '';
  return [
    ctx.cwd !== undefined ? `cwd=${ctx.cwd}` : undefined,
    ctx.user !== undefined ? `user=${ctx.user}` : undefined,
    ctx.program !== undefined ? `program=${ctx.program}` : undefined,
    ...Object.entries(ctx.env).map(([k, v]) => `${k}=${cut(JSON.stringify(v), 40)}`),
  ]
    .filter((p) => p !== undefined)
    .join(' ');
}

export function approvalsTable(list: readonly ApprovalInfo[], now = Date.now()): string {
  return table(
    ['ID', 'SANDBOX', 'TENANT', 'AGE', 'RULE', 'COMMAND', 'WITH'],
    list.map((a) => [a.id, a.sandbox, a.tenant, formatAge(a.createdAt, now), a.rule, cut(a.command, 80), contextSummary(a.context)]),
  );
}

export const approvalsCommand: CliCommand = {
  name: 'approvals',
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
    usage: `Usage: forkd ${name} ID\n\n${name === 'approve' ? 'Approves the waiting call ID: it runs.' : 'Denies the waiting call ID: it ends with PERMISSION_DENIED.'} See \`forkd approvals\`.\n`,
    async run(argv) {
      const { positionals } = parseOptions({ args: argv, allowPositionals: true, options: {} });
      const [id] = expectPositionals(positionals, ['ID']);
      const a = await connect().approvals[name](id!);
      const ctx = contextSummary(a.context);
      process.stdout.write(`${name === 'approve' ? 'approved' : 'denied'} ${a.id}: ${a.command}${ctx ? ` (${ctx})` : ''}\n`);
      return 0;
    },
  };
}

export const approveCommand = decideCommand('approve');
export const denyCommand = decideCommand('deny');
