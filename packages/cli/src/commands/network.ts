import type { NetworkRules, SetNetworkRequest } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox } from '../connect.js';
import { printJson } from '../format.js';
import { UsageError } from '../usage-error.js';

const USAGE = `Usage: forkd network ID [--mode none|egress] [--allow-out RULE]... [--deny-out RULE]... [--json]

Shows a sandbox's network, or replaces it: with any option the rules given
replace all of its rules (the mode stays unless --mode is given). A running
sandbox's next connection follows them; open connections go on.

Modes: none (loopback only) and egress (outbound through NAT on the host;
inbound only through the port proxy). A RULE is an IPv4 address or CIDR,
or a domain name (example.com; *.example.com: any name under it, not the
apex), enforced by forkd's DNS resolver and HTTP/TLS proxy; allow wins over deny; private, link-local and host addresses are denied
unless allowed explicitly (deny 0.0.0.0/0 and allow some: an allowlist).

Options:
      --mode M          none or egress
      --allow-out RULE  allowed destination (repeatable)
      --deny-out RULE   denied destination (repeatable)
      --json            print the rules as JSON
`;

export interface NetworkArgs {
  id: string;
  /** Undefined: show only. */
  change?: { mode?: NetworkRules['mode'] | undefined; allowOut: string[]; denyOut: string[] } | undefined;
  json: boolean;
}

export function parseMode(flag: string, v: string | undefined): NetworkRules['mode'] | undefined {
  if (v === undefined) return undefined;
  if (v !== 'none' && v !== 'egress') throw new UsageError(`${flag} must be none or egress, got ${JSON.stringify(v)}`);
  return v;
}

export function parseNetworkArgs(argv: string[]): NetworkArgs {
  const { values, positionals } = parseOptions({
    args: argv,
    allowPositionals: true,
    options: { mode: { type: 'string' }, 'allow-out': { type: 'string', multiple: true }, 'deny-out': { type: 'string', multiple: true }, json: { type: 'boolean' } },
  });
  const [id] = expectPositionals(positionals, ['ID']);
  const mode = parseMode('--mode', values.mode);
  const allowOut = values['allow-out'] ?? [];
  const denyOut = values['deny-out'] ?? [];
  const change = mode !== undefined || allowOut.length > 0 || denyOut.length > 0 ? { mode, allowOut, denyOut } : undefined;
  return { id: id!, change, json: !!values.json };
}

const NONE: NetworkRules = { mode: 'none', allowOut: [], denyOut: [] };

export function formatRules(r: NetworkRules): string {
  const lines = [`mode ${r.mode}`, ...r.allowOut.map((x) => `allow-out ${x}`), ...r.denyOut.map((x) => `deny-out ${x}`)];
  return lines.join('\n') + '\n';
}

export const networkCommand: CliCommand = {
  name: 'network',
  summary: "show or replace a sandbox's network mode and egress rules",
  usage: USAGE,
  async run(argv) {
    const args = parseNetworkArgs(argv);
    const sb = await openSandbox(args.id);
    let rules = sb.info.network ?? NONE;
    if (args.change) {
      const req: SetNetworkRequest = { mode: args.change.mode ?? rules.mode, allowOut: args.change.allowOut, denyOut: args.change.denyOut };
      rules = (await sb.setNetwork(req)).network ?? NONE;
    }
    if (args.json) printJson(rules);
    else process.stdout.write(formatRules(rules));
    return 0;
  },
};
