import { nameVerdict, type NameVerdict, type SplitRules } from './domain-rules.js';
import { DENIED_BY_DEFAULT } from './egress-nft.js';
import { CLASS_IN, RCODE, TYPE } from './dns-message.js';

/**
 * What forkd's resolver does with a sandbox's query before anything leaves
 * the host. A query name is a channel out (`<data>.attacker.example`
 * reaches the attacker's name server through any resolver that forwards
 * it), and an answer a channel in (TXT and NULL carry hundreds of bytes).
 * So nothing is asked upstream that the sandbox's rules make useless:
 *
 * - a denied name: NXDOMAIN, never asked (its addresses are learned only
 *   from forkd's own lookup of the rule's literal names, see egress.ts);
 * - a name no rule names, when the address rules reach no address at all:
 *   NXDOMAIN, never asked (whatever it resolved to would be refused);
 * - a name no rule names otherwise: only the types a client needs to
 *   connect (NEUTRAL_TYPES); a sandbox that reaches addresses freely gains
 *   nothing from TXT that a connection would not give it;
 * - a name an allow rule names: also TXT, NS, SOA and CAA (the tenant trusts
 *   that name's owner);
 * - NULL, ANY, zone transfers, any class but IN, any opcode but QUERY, and
 *   names that are not host names (letters, digits, `-`, `_`): refused.
 *
 * Whatever is asked is a fresh query forkd builds (not the sandbox's bytes),
 * and its answer is rebuilt from the parsed records (dns-answer.ts).
 */

/** Asked for a name only address rules govern: addresses, aliases, services, reverse names. */
export const NEUTRAL_TYPES: ReadonlySet<number> = new Set([TYPE.A, TYPE.CNAME, TYPE.PTR, TYPE.MX, TYPE.AAAA, TYPE.SRV, TYPE.SVCB, TYPE.HTTPS]);
/** Asked for a name an allow rule names. */
export const ALLOWED_TYPES: ReadonlySet<number> = new Set([...NEUTRAL_TYPES, TYPE.NS, TYPE.SOA, TYPE.TXT, TYPE.CAA]);

export interface DnsAsk {
  name: string;
  type: number;
  qclass: number;
  opcode: number;
}

export type DnsDecision = { ask: true; verdict: NameVerdict } | { ask: false; rcode: number };

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_-]{1,63}(\.[a-z0-9_-]{1,63})*$/;

/** Whether `name` is a host name forkd will put in a query of its own (lower case, no trailing dot). */
export function isHostName(name: string): boolean {
  return HOST_NAME.test(name);
}

export function dnsDecision(rules: SplitRules, q: DnsAsk): DnsDecision {
  if (q.opcode !== 0) return { ask: false, rcode: RCODE.NOTIMP };
  if (q.qclass !== CLASS_IN || !isHostName(q.name)) return { ask: false, rcode: RCODE.REFUSED };
  const verdict = nameVerdict(rules, q.name);
  if (verdict === 'deny') return { ask: false, rcode: RCODE.NXDOMAIN };
  if (verdict === 'neutral' && reachesNoAddress(rules)) return { ask: false, rcode: RCODE.NXDOMAIN };
  const types = verdict === 'allow' ? ALLOWED_TYPES : NEUTRAL_TYPES;
  return types.has(q.type) ? { ask: true, verdict } : { ask: false, rcode: RCODE.REFUSED };
}

/** Whether forkd may resolve `name` for this sandbox at all (the proxy's lookup of a Host or SNI name too). */
export function mayResolve(rules: SplitRules, name: string): boolean {
  return dnsDecision(rules, { name: name.toLowerCase().replace(/\.$/, ''), type: TYPE.A, qclass: CLASS_IN, opcode: 0 }).ask;
}

type Range = [number, number];

function range(cidr: string): Range {
  const [net = '', len = '32'] = cidr.split('/');
  const bits = Number(len);
  const start = net.split('.').reduce((n, o) => n * 256 + Number(o), 0);
  const size = 2 ** (32 - bits);
  const lo = Math.floor(start / size) * size;
  return [lo, lo + size - 1];
}

/** Whether the union of `cidrs` covers every address of `r`. */
function covers(cidrs: string[], r: Range): boolean {
  let next = r[0];
  for (const [lo, hi] of cidrs.map(range).sort((x, y) => x[0] - y[0])) {
    if (lo > next) break;
    next = Math.max(next, hi + 1);
    if (next > r[1]) return true;
  }
  return next > r[1];
}

/**
 * Whether no address passes the sandbox's address rules for a name no rule
 * names (addressAllowed with a neutral verdict): every allowed range is
 * forced-denied, and the denials and default-denied ranges cover the rest.
 */
export function reachesNoAddress(s: SplitRules): boolean {
  if (s.allowAddrs.some((c) => !covers(s.forcedAddrs, range(c)))) return false;
  return covers([...s.forcedAddrs, ...s.denyAddrs, ...DENIED_BY_DEFAULT], [0, 2 ** 32 - 1]);
}
