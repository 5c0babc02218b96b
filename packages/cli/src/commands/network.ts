import { LOOPBACK_ONLY } from '@forkd/protocol';
import type { NetworkRules, SetNetworkRequest } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox } from '../connect.js';
import { printJson } from '../format.js';
import { UsageError } from '../usage-error.js';
import { NETWORK_LIMIT_OPTIONS, NETWORK_LIMIT_USAGE, parseMode, parseNetworkLimits } from './network-args.js';

const USAGE = `Usage: forkd network ID [--mode none|egress] [--allow-out RULE]... [--deny-out RULE]... [--bandwidth MBPS] [--max-connections N] [--json]

Shows a sandbox's network, or replaces it: with any option the rules given
replace all of its rules (the mode stays unless --mode is given). A running
sandbox's next connection follows them; open connections go on.

Modes: none (loopback only) and egress (outbound through NAT on the host;
inbound only through the port proxy). A RULE is an IPv4 address or CIDR,
or a domain name (example.com; *.example.com: any name under it, not the
apex), enforced by forkd's DNS resolver and HTTP/TLS proxy; allow wins over deny; private, link-local and host addresses are denied
unless allowed explicitly (deny 0.0.0.0/0 and allow some: an allowlist).
Limits given replace the old ones too (none given: unlimited, or the
tenant's maxima). A tenant's forced denials stay whatever is given.

Options:
      --mode M          none or egress
      --allow-out RULE  allowed destination (repeatable)
      --deny-out RULE   denied destination (repeatable)
${NETWORK_LIMIT_USAGE}      --json            print the rules as JSON
`;

export interface NetworkArgs {
  id: string;
  /** Undefined: show only. */
  change?: ({ mode?: NetworkRules['mode'] | undefined; allowOut: string[]; denyOut: string[] } & Pick<NetworkRules, 'bandwidthMbps' | 'maxConnections'>) | undefined;
  json: boolean;
}

export function parseNetworkArgs(argv: string[]): NetworkArgs {
  const { values, positionals } = parseOptions({
    args: argv,
    allowPositionals: true,
    options: { mode: { type: 'string' }, 'allow-out': { type: 'string', multiple: true }, 'deny-out': { type: 'string', multiple: true }, ...NETWORK_LIMIT_OPTIONS, json: { type: 'boolean' } },
  });
  const [id] = expectPositionals(positionals, ['ID']);
  const mode = parseMode('--mode', values.mode);
  const allowOut = values['allow-out'] ?? [];
  const denyOut = values['deny-out'] ?? [];
  const limits = parseNetworkLimits(values);
  const change = mode !== undefined || allowOut.length > 0 || denyOut.length > 0 || Object.keys(limits).length > 0 ? { mode, allowOut, denyOut, ...limits } : undefined;
  return { id: id!, change, json: !!values.json };
}

export function formatRules(r: NetworkRules): string {
  const lines = [
    `mode ${r.mode}`,
    ...(r.forcedDenyOut ?? []).map((x) => `forced-deny-out ${x}`),
    ...r.allowOut.map((x) => `allow-out ${x}`),
    ...r.denyOut.map((x) => `deny-out ${x}`),
    ...(r.bandwidthMbps !== undefined ? [`bandwidth ${r.bandwidthMbps} Mbit/s`] : []),
    ...(r.maxConnections !== undefined ? [`max-connections ${r.maxConnections}`] : []),
  ];
  return lines.join('\n') + '\n';
}

export const networkCommand: CliCommand = {
  name: 'network',
  usage: USAGE,
  async run(argv) {
    const args = parseNetworkArgs(argv);
    const sb = await openSandbox(args.id);
    let rules = sb.info.network ?? LOOPBACK_ONLY;
    if (args.change) {
      const { mode, ...rest } = args.change;
      const req: SetNetworkRequest = { mode: mode ?? rules.mode, ...rest };
      rules = (await sb.setNetwork(req)).network ?? LOOPBACK_ONLY;
    }
    if (args.json) printJson(rules);
    else process.stdout.write(formatRules(rules));
    return 0;
  },
};
