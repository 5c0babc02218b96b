import { TENANT_LIMIT_NAMES, TenantName, type TenantLimitName } from '@forkd/protocol';
import type { TenantLimits, TenantLimitsInfo } from '@forkd/sdk';
import { parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { connect } from '../connect.js';
import { printJson, table } from '../format.js';
import { UsageError } from '../usage-error.js';
import { runTenantNetwork, TENANT_NETWORK_OPTIONS, TENANT_NETWORK_SUMMARY, TENANT_NETWORK_SYNOPSIS } from './tenant-network.js';

const USAGE = `Usage: forkd tenants limits TENANT [--sandboxes N] [--memory MB] [--cpus N]
                     [--snapshots N] [--disk MB] [--reset] [--json]
${TENANT_NETWORK_SYNOPSIS}
  limits   Shows a tenant's limits and what it uses now; with options,
           changes them (admin keys only; every key may read its own
           tenant's). A call that would take a tenant past a limit answers
           RESOURCE_EXHAUSTED naming the limit. Each option takes a number,
           "unlimited", or "default" (the server's FORKD_TENANT_MAX_* value);
           limits not named keep what they were.
${TENANT_NETWORK_SUMMARY}
Options of limits:
      --sandboxes N     running sandboxes (creating or running; paused ones do not count)
      --memory MB       total memory limit of the running sandboxes
      --cpus N          total CPUs of the running sandboxes
      --snapshots N     snapshots held (API snapshots and live forks are refused at the limit)
      --disk MB         total disk quota of all the tenant's sandboxes
      --reset           every limit back to the server's default
      --json            print JSON

${TENANT_NETWORK_OPTIONS}`;

const FLAGS: Record<string, TenantLimitName> = { sandboxes: 'runningSandboxes', memory: 'memoryMb', cpus: 'cpus', snapshots: 'snapshots', disk: 'diskMb' };

/** A limit's new value: a number, null (unlimited), or undefined (the server's default). */
type Change = number | null | undefined;

export interface TenantsArgs {
  tenant: string;
  changes: Partial<Record<TenantLimitName, Change>>;
  reset: boolean;
  json: boolean;
}

function parseValue(flag: string, name: TenantLimitName, v: string): Change {
  if (v === 'unlimited') return null;
  if (v === 'default') return undefined;
  const n = Number(v);
  const integer = name !== 'cpus';
  if (v === '' || !Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n))) throw new UsageError(`--${flag} must be ${integer ? 'a whole number' : 'a number'} ≥ 0, unlimited or default`);
  return n;
}

export function parseTenantsArgs(argv: string[]): TenantsArgs {
  const [sub, ...rest] = argv;
  if (sub !== 'limits') throw new UsageError(sub === undefined ? 'missing subcommand: limits or network' : `unknown subcommand ${JSON.stringify(sub)}: expected limits or network`);
  const { values, positionals } = parseOptions({
    args: rest,
    allowPositionals: true,
    options: { sandboxes: { type: 'string' }, memory: { type: 'string' }, cpus: { type: 'string' }, snapshots: { type: 'string' }, disk: { type: 'string' }, reset: { type: 'boolean' }, json: { type: 'boolean' } },
  });
  if (positionals.length !== 1) throw new UsageError(positionals.length ? `unexpected argument ${JSON.stringify(positionals[1])}` : 'missing TENANT');
  const tenant = positionals[0]!;
  if (!TenantName.safeParse(tenant).success) throw new UsageError(`invalid tenant ${JSON.stringify(tenant)}: lowercase letters, digits and dashes`);
  const changes: TenantsArgs['changes'] = {};
  for (const [flag, name] of Object.entries(FLAGS)) {
    const v = values[flag as keyof typeof values];
    if (typeof v === 'string') changes[name] = parseValue(flag, name, v);
  }
  return { tenant, changes, reset: !!values.reset, json: !!values.json };
}

/** The overrides to PUT: the current ones (none after --reset) with the changes applied. */
export function mergedOverrides(current: TenantLimits, args: Pick<TenantsArgs, 'changes' | 'reset'>): TenantLimits {
  const out: TenantLimits = args.reset ? {} : { ...current };
  for (const [name, v] of Object.entries(args.changes) as [TenantLimitName, Change][]) {
    if (v === undefined) delete out[name];
    else out[name] = v;
  }
  return out;
}

export function limitsTable(info: TenantLimitsInfo): string {
  const units: Record<TenantLimitName, string> = { runningSandboxes: '', memoryMb: ' MB', cpus: '', snapshots: '', diskMb: ' MB' };
  return table(
    ['LIMIT', 'MAX', 'USED', 'SET BY'],
    TENANT_LIMIT_NAMES.map((n) => {
      const max = info.limits[n];
      return [n, max === null ? 'unlimited' : `${max}${units[n]}`, `${info.usage[n]}${units[n]}`, info.overrides[n] !== undefined ? 'tenant' : 'server default'];
    }),
  );
}

export const tenantsCommand: CliCommand = {
  name: 'tenants',
  usage: USAGE,
  async run(argv) {
    if (argv[0] === 'network') return runTenantNetwork(argv.slice(1));
    const args = parseTenantsArgs(argv);
    const client = connect();
    let info = await client.tenants.limits(args.tenant);
    if (args.reset || Object.keys(args.changes).length) info = await client.tenants.setLimits(args.tenant, mergedOverrides(info.overrides, args));
    if (args.json) printJson(info);
    else process.stdout.write(limitsTable(info));
    return 0;
  },
};
