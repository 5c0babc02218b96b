import type { NetworkRules } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import { connect } from '../connect.js';
import { printJson } from '../format.js';
import { UsageError } from '../usage-error.js';
import { NETWORK_LIMIT_OPTIONS, parseMode, parseNetworkLimits } from './network-args.js';
import { formatRules } from './network.js';

/** `forkd template network`'s synopsis, what it does and its options, for `forkd template --help`. */
export const TEMPLATE_NETWORK_SYNOPSIS = `       forkd template network NAME [--mode none|egress] [--allow-out RULE]...
                     [--deny-out RULE]... [--bandwidth MBPS] [--max-connections N]
                     [--clear] [--json]
`;

export const TEMPLATE_NETWORK_SUMMARY = `  network Shows template NAME's default network (what a create from it that
          names none gets; its tenant's policy still caps it); with --mode it
          is replaced, with --clear removed. Its owner sets it (admin keys
          for shared templates: the key's own tenant's).
`;

export const TEMPLATE_NETWORK_OPTIONS = `      --mode M          network: none or egress
      --allow-out RULE  network: an allowed destination (repeatable)
      --deny-out RULE   network: a denied destination (repeatable)
      --bandwidth MBPS  network: bandwidth cap in Mbit/s, each direction
      --max-connections N
                        network: concurrent connections
      --clear           network: remove the template's default network
`;

export interface TemplateNetworkArgs {
  name: string;
  /** undefined: show; null: remove. */
  change: NetworkRules | null | undefined;
  json: boolean;
}

export function parseTemplateNetworkArgs(argv: string[]): TemplateNetworkArgs {
  const { values, positionals } = parseOptions({
    args: argv,
    allowPositionals: true,
    options: { mode: { type: 'string' }, 'allow-out': { type: 'string', multiple: true }, 'deny-out': { type: 'string', multiple: true }, ...NETWORK_LIMIT_OPTIONS, clear: { type: 'boolean' }, json: { type: 'boolean' } },
  });
  const [name] = expectPositionals(positionals, ['NAME']);
  const mode = parseMode('--mode', values.mode);
  const allowOut = values['allow-out'] ?? [];
  const denyOut = values['deny-out'] ?? [];
  const limits = parseNetworkLimits(values);
  const rulesGiven = allowOut.length > 0 || denyOut.length > 0 || Object.keys(limits).length > 0;
  if (values.clear && (mode !== undefined || rulesGiven)) throw new UsageError('--clear takes no other network option');
  if (rulesGiven && mode === undefined) throw new UsageError('rules and limits need --mode');
  const change = values.clear ? null : mode !== undefined ? { mode, allowOut, denyOut, ...limits } : undefined;
  return { name: name!, change, json: !!values.json };
}

export async function runTemplateNetwork(args: TemplateNetworkArgs): Promise<number> {
  const t = connect().templates;
  const info = args.change === undefined ? await t.network(args.name) : await t.setNetwork(args.name, args.change);
  if (args.json) printJson(info);
  else process.stdout.write(info.network ? formatRules(info.network) : 'no default network (creates get none unless the tenant has a default)\n');
  return 0;
}
