import { TenantName } from '@forkd/protocol';
import type { NetworkRules, TenantNetworkPolicy } from '@forkd/sdk';
import { parseOptions, parsePositiveInt, parsePositiveNumber } from '../args.js';
import { connect } from '../connect.js';
import { printJson } from '../format.js';
import { UsageError } from '../usage-error.js';
import { formatRules } from './network.js';
import { parseMode } from './network-args.js';

/** `forkd tenants network`'s synopsis, for `forkd tenants --help`'s usage lines. */
export const TENANT_NETWORK_SYNOPSIS = `       forkd tenants network TENANT [--egress allow|deny] [--deny-out RULE]...
                     [--max-bandwidth MBPS|unlimited] [--max-connections N|unlimited]
                     [--default-network none|egress] [--default-allow-out RULE]...
                     [--default-deny-out RULE]... [--no-default] [--reset] [--json]
`;

/** What it does, and its options, for `forkd tenants --help`. */
export const TENANT_NETWORK_SUMMARY = `  network  Shows a tenant's network policy; with options, changes it (admin
           keys only; every key may read its own tenant's). A call past the
           policy answers PERMISSION_DENIED.
`;

export const TENANT_NETWORK_OPTIONS = `Options of network:
      --egress allow|deny      deny: its sandboxes may not have egress
      --deny-out RULE          a forced denial: a sandbox's allow never overrides
                               it (repeatable; given, it replaces the list)
      --max-bandwidth MBPS     what a sandbox gets when it asks for none and the
                               most it may ask for, in Mbit/s (or unlimited)
      --max-connections N      the same for concurrent connections (or unlimited)
      --default-network MODE   none or egress: what its creates get when neither
                               they nor their template name a network
      --default-allow-out RULE the default network's allowed destinations (repeatable)
      --default-deny-out RULE  the default network's denied destinations (repeatable)
      --no-default             remove the default network
      --reset                  remove the whole policy (before the other options)
      --json                   print JSON
`;

export interface TenantNetworkArgs {
  tenant: string;
  /** Fields to set; undefined values are removed. */
  changes: { [K in keyof TenantNetworkPolicy]?: TenantNetworkPolicy[K] | undefined };
  reset: boolean;
  json: boolean;
}

const unlimitedOr = <T>(v: string | undefined, parse: (v: string) => T | undefined): T | undefined | 'unset' => (v === undefined ? undefined : v === 'unlimited' ? 'unset' : parse(v));

export function parseTenantNetworkArgs(argv: string[]): TenantNetworkArgs {
  const { values, positionals } = parseOptions({
    args: argv,
    allowPositionals: true,
    options: {
      egress: { type: 'string' },
      'deny-out': { type: 'string', multiple: true },
      'max-bandwidth': { type: 'string' },
      'max-connections': { type: 'string' },
      'default-network': { type: 'string' },
      'default-allow-out': { type: 'string', multiple: true },
      'default-deny-out': { type: 'string', multiple: true },
      'no-default': { type: 'boolean' },
      reset: { type: 'boolean' },
      json: { type: 'boolean' },
    },
  });
  if (positionals.length !== 1) throw new UsageError(positionals.length ? `unexpected argument ${JSON.stringify(positionals[1])}` : 'missing TENANT');
  const tenant = positionals[0]!;
  if (!TenantName.safeParse(tenant).success) throw new UsageError(`invalid tenant ${JSON.stringify(tenant)}: lowercase letters, digits and dashes`);
  const changes: TenantNetworkArgs['changes'] = {};
  if (values.egress !== undefined) {
    if (values.egress !== 'allow' && values.egress !== 'deny') throw new UsageError('--egress must be allow or deny');
    changes.egress = values.egress === 'allow' ? undefined : false;
  }
  if (values['deny-out']) changes.denyOut = values['deny-out'];
  const bw = unlimitedOr(values['max-bandwidth'], (v) => parsePositiveNumber('--max-bandwidth', v));
  if (bw !== undefined) changes.maxBandwidthMbps = bw === 'unset' ? undefined : bw;
  const mc = unlimitedOr(values['max-connections'], (v) => parsePositiveInt('--max-connections', v));
  if (mc !== undefined) changes.maxConnections = mc === 'unset' ? undefined : mc;
  const mode = parseMode('--default-network', values['default-network']);
  const allowOut = values['default-allow-out'] ?? [];
  const denyOut = values['default-deny-out'] ?? [];
  if ((allowOut.length || denyOut.length) && mode !== 'egress') throw new UsageError('--default-allow-out and --default-deny-out need --default-network egress');
  if (mode !== undefined && values['no-default']) throw new UsageError('--default-network and --no-default conflict');
  if (mode !== undefined) changes.default = { mode, allowOut, denyOut } satisfies NetworkRules;
  if (values['no-default']) changes.default = undefined;
  return { tenant, changes, reset: !!values.reset, json: !!values.json };
}

/** The policy to PUT: the current one (none after --reset) with the changes applied. */
export function mergedPolicy(current: TenantNetworkPolicy, args: Pick<TenantNetworkArgs, 'changes' | 'reset'>): TenantNetworkPolicy {
  const out: Record<string, unknown> = args.reset ? {} : { ...current };
  for (const [k, v] of Object.entries(args.changes)) {
    if (v === undefined) delete out[k];
    else out[k] = v;
  }
  return out as TenantNetworkPolicy;
}

export function formatPolicy(p: TenantNetworkPolicy): string {
  const lines = [
    `egress ${p.egress === false ? 'denied' : 'allowed'}`,
    ...(p.denyOut ?? []).map((r) => `forced deny-out ${r}`),
    `max bandwidth ${p.maxBandwidthMbps !== undefined ? `${p.maxBandwidthMbps} Mbit/s` : 'unlimited'}`,
    `max connections ${p.maxConnections ?? 'unlimited'}`,
  ];
  const def = p.default ? formatRules(p.default).trimEnd().split('\n').map((l) => `default ${l}`) : ['default none set'];
  return [...lines, ...def].join('\n') + '\n';
}

export async function runTenantNetwork(argv: string[]): Promise<number> {
  const args = parseTenantNetworkArgs(argv);
  const client = connect();
  let info = await client.tenants.network(args.tenant);
  if (args.reset || Object.keys(args.changes).length) info = await client.tenants.setNetwork(args.tenant, mergedPolicy(info.policy, args));
  if (args.json) printJson(info);
  else process.stdout.write(formatPolicy(info.policy));
  return 0;
}
