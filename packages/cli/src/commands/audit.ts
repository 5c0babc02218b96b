import type { AuditFilter, AuditRecord } from '@forkd/sdk';
import { expectPositionals, parseOptions, parsePositiveInt } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { printJson, table } from '../format.js';

const USAGE = `Usage: forkd audit [--sandbox ID] [--operation OP] [--code CODE] [--since TIME] [--limit N] [--tenant T] [--json]

Shows the audit log, newest first: one record per API call with its time, key,
tenant, sandbox, operation, command or path, result code and duration. A key
sees its own tenant's records; an admin key every tenant's.

Options:
      --sandbox ID      only calls on this sandbox
      --operation OP    only this operation, e.g. "POST /v1/sandboxes/:id/exec"
      --code CODE       only this result, e.g. OK, NOT_FOUND, UNAUTHENTICATED
      --since TIME      only records at or after this ISO time
      --limit N         at most N records (default 100, at most 1000)
      --tenant T        admin keys: only this tenant
      --json            print the records as a JSON array
`;

export function parseAuditArgs(argv: string[]): { filter: AuditFilter; json: boolean } {
  const { values, positionals } = parseOptions({
    args: argv,
    allowPositionals: true,
    options: { sandbox: { type: 'string' }, operation: { type: 'string' }, code: { type: 'string' }, since: { type: 'string' }, limit: { type: 'string' }, tenant: { type: 'string' }, json: { type: 'boolean' } },
  });
  expectPositionals(positionals, []);
  const filter: AuditFilter = {};
  for (const k of ['sandbox', 'operation', 'code', 'since', 'tenant'] as const) if (values[k] !== undefined) filter[k] = values[k];
  const limit = parsePositiveInt('--limit', values.limit);
  if (limit !== undefined) filter.limit = limit;
  return { filter, json: !!values.json };
}

export function auditTable(records: readonly AuditRecord[]): string {
  return table(
    ['TIME', 'TENANT', 'KEY', 'SANDBOX', 'OPERATION', 'CODE', 'MS', 'TARGET'],
    records.map((r) => [r.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z'), r.tenant ?? '-', r.keyId ?? '-', r.sandboxId ?? '-', r.operation, r.code, String(Math.round(r.durationMs)), r.target ?? '']),
  );
}

export const auditCommand: CliCommand = {
  name: 'audit',
  usage: USAGE,
  async run(argv) {
    const { filter, json } = parseAuditArgs(argv);
    const records = await connect().audit.list(filter);
    if (json) printJson(records);
    else process.stdout.write(auditTable(records));
    return 0;
  },
};
