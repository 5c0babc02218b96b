import type { SandboxInfo } from '@forkd/protocol';
import { SANDBOX_STATES, type SandboxState } from '@forkd/protocol/sandbox-state';
import type { ListSandboxesFilter } from '@forkd/sdk';
import { expectPositionals, parseLabelPairs, parseOptions } from '../args.js';
import { UsageError } from '../usage-error.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { formatAge, printJson, table } from '../format.js';

const USAGE = `Usage: forkd ls [--state S[,S...]] [--metadata K=V]... [--all-tenants] [--json]

Lists sandboxes, oldest first.

Options:
      --state S        only sandboxes in these states (running, paused, failed, ...)
      --metadata K=V   only sandboxes with this metadata (repeatable: all must match)
      --all-tenants    every tenant's sandboxes, with a TENANT column (admin keys; act on one
                       with FORKD_TENANT=<tenant> forkd ...)
      --json           print the sandboxes as a JSON array
`;

export function parseLsArgs(argv: string[]): { filter: ListSandboxesFilter; json: boolean } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' }, state: { type: 'string' }, metadata: { type: 'string', multiple: true }, 'all-tenants': { type: 'boolean' } } });
  expectPositionals(positionals, []);
  const filter: ListSandboxesFilter = {};
  if (values.state !== undefined) {
    const states = values.state.split(',');
    const bad = states.find((s) => !(SANDBOX_STATES as readonly string[]).includes(s));
    if (bad !== undefined) throw new UsageError(`--state ${JSON.stringify(bad)}: expected ${SANDBOX_STATES.join(', ')}`);
    filter.state = states as SandboxState[];
  }
  const metadata = parseLabelPairs('--metadata', values.metadata);
  if (metadata) filter.metadata = metadata;
  if (values['all-tenants']) filter.allTenants = true;
  return { filter, json: !!values.json };
}

/** The state, with why it failed, or when it last came back after losing its processes and what that cost. */
export function stateCell(i: SandboxInfo, now = Date.now()): string {
  if (i.error) return `${i.state} (${i.error})`;
  const r = i.recovered;
  if (!r || i.state !== 'running') return i.state;
  const how = r.fromSnapshot ? `from ${r.fromSnapshot}, ${r.lostSeconds ?? 0}s lost` : 'cold from its files, memory lost';
  return `${i.state} (recovered ${formatAge(r.at, now)} ${how})`;
}

export const lsCommand: CliCommand = {
  name: 'ls',
  usage: USAGE,
  async run(argv) {
    const { filter, json } = parseLsArgs(argv);
    const infos = (await connect().sandboxes.list(filter)).map((s) => s.info);
    if (json) {
      printJson(infos);
      return 0;
    }
    const rows = infos.map((i) => [i.id, ...(filter.allTenants ? [i.tenant ?? '-'] : []), i.template, stateCell(i), `${i.limits.memoryMb}M`, String(i.limits.cpus), formatAge(i.createdAt)]);
    process.stdout.write(table(['ID', ...(filter.allTenants ? ['TENANT'] : []), 'TEMPLATE', 'STATE', 'MEM', 'CPUS', 'CREATED'], rows));
    return 0;
  },
};
