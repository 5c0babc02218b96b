import { readFileSync } from 'node:fs';
import { PolicyDocument } from '@forkd/protocol';
import type { ForkdClient } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { printJson } from '../format.js';
import { UsageError } from '../usage-error.js';

const USAGE = `Usage: forkd policy set ID --file FILE [--tenant | --template]
       forkd policy get ID [--tenant | --template] [--json]

Sets (replaces whole; {} removes it) or shows the per-call policy of a
sandbox, or with --tenant of a tenant (admin keys only) or with --template
of a template (its owner's or admin keys). Every scope applies: a deny
anywhere refuses, a requireApproval anywhere waits, the strictest limits win.

FILE is JSON ("-": standard input), for example:
  {"exec": {"deny": ["^rm -rf /$"], "requireApproval": ["^git push"]},
   "files": {"readOnly": ["/etc"], "hidden": ["/root/.ssh"]},
   "maxDurationSeconds": 600}

Options:
      --file FILE   the policy document (set)
      --tenant      ID names a tenant
      --template    ID names a template
      --json        print JSON (get)
`;

export type PolicyTarget = 'sandbox' | 'tenant' | 'template';

export interface PolicyArgs {
  action: 'set' | 'get';
  id: string;
  target: PolicyTarget;
  file?: string | undefined;
  json: boolean;
}

export function parsePolicyArgs(argv: string[]): PolicyArgs {
  const [action, ...rest] = argv;
  if (action !== 'set' && action !== 'get') throw new UsageError(action === undefined ? 'missing subcommand: set or get' : `unknown subcommand ${JSON.stringify(action)}: expected set or get`);
  const { values, positionals } = parseOptions({
    args: rest,
    allowPositionals: true,
    options: { file: { type: 'string' }, tenant: { type: 'boolean' }, template: { type: 'boolean' }, json: { type: 'boolean' } },
  });
  const [id] = expectPositionals(positionals, ['ID']);
  if (values.tenant && values.template) throw new UsageError('give at most one of --tenant and --template');
  if (action === 'set' && values.file === undefined) throw new UsageError('policy set needs --file FILE');
  if (action === 'get' && values.file !== undefined) throw new UsageError('--file is for policy set');
  return { action, id: id!, target: values.tenant ? 'tenant' : values.template ? 'template' : 'sandbox', file: values.file, json: !!values.json };
}

/** The document in FILE, checked here first so a typo answers before any call. */
export function readPolicyFile(file: string, read: (f: string | 0) => string = (f) => readFileSync(f, 'utf8')): PolicyDocument {
  let raw: unknown;
  try {
    raw = JSON.parse(read(file === '-' ? 0 : file));
  } catch (err) {
    throw new UsageError(`${file}: not JSON: ${(err as Error).message}`);
  }
  const r = PolicyDocument.safeParse(raw);
  if (!r.success) throw new UsageError(`${file}: not a policy: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  return r.data;
}

async function apply(client: ForkdClient, a: PolicyArgs, doc: PolicyDocument | undefined): Promise<PolicyDocument> {
  switch (a.target) {
    case 'tenant':
      return doc ? client.tenants.setPolicy(a.id, doc) : client.tenants.policy(a.id);
    case 'template':
      return doc ? client.templates.setPolicy(a.id, doc) : client.templates.policy(a.id);
    case 'sandbox': {
      const sb = await client.sandboxes.get(a.id);
      return doc ? sb.setPolicy(doc) : sb.getPolicy();
    }
  }
}

export const policyCommand: CliCommand = {
  name: 'policy',
  usage: USAGE,
  async run(argv) {
    const args = parsePolicyArgs(argv);
    const doc = args.action === 'set' ? readPolicyFile(args.file!) : undefined;
    const policy = await apply(connect(), args, doc);
    if (args.action === 'get') {
      if (args.json) printJson(policy);
      else process.stdout.write(`${JSON.stringify(policy, null, 2)}\n`);
    }
    return 0;
  },
};
