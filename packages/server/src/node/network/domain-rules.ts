import { isDomainRule, type NetworkRules } from '@forkd/protocol';
import { DENIED_BY_DEFAULT } from './egress-nft.js';

/**
 * A sandbox's rules split into address and name rules, and the decisions
 * made from them. A name pattern `example.com` matches that name only;
 * `*.example.com` any name under it (not the apex). Allow wins over deny,
 * for names as for addresses; a tenant's forced denials (forcedDenyOut)
 * win over every allow.
 */
export interface SplitRules {
  forcedAddrs: string[];
  forcedNames: string[];
  allowAddrs: string[];
  denyAddrs: string[];
  allowNames: string[];
  denyNames: string[];
}

export type NameVerdict = 'allow' | 'deny' | 'neutral';

const norm = (n: string) => n.toLowerCase().replace(/\.$/, '');

export function splitRules(r: Pick<NetworkRules, 'allowOut' | 'denyOut' | 'forcedDenyOut'>): SplitRules {
  const forced = r.forcedDenyOut ?? [];
  return {
    forcedAddrs: forced.filter((x) => !isDomainRule(x)),
    forcedNames: forced.filter(isDomainRule).map(norm),
    allowAddrs: r.allowOut.filter((x) => !isDomainRule(x)),
    denyAddrs: r.denyOut.filter((x) => !isDomainRule(x)),
    allowNames: r.allowOut.filter(isDomainRule).map(norm),
    denyNames: r.denyOut.filter(isDomainRule).map(norm),
  };
}

export function nameMatches(pattern: string, name: string): boolean {
  const n = norm(name);
  return pattern.startsWith('*.') ? n.endsWith(pattern.slice(1)) && n.length > pattern.length - 1 : n === pattern;
}

/** Whether a tenant's forced denial names `name` (its addresses are then denied before any allow). */
export function forcedName(s: SplitRules, name: string): boolean {
  return s.forcedNames.some((p) => nameMatches(p, name));
}

export function nameVerdict(s: SplitRules, name: string): NameVerdict {
  if (forcedName(s, name)) return 'deny';
  if (s.allowNames.some((p) => nameMatches(p, name))) return 'allow';
  if (s.denyNames.some((p) => nameMatches(p, name))) return 'deny';
  return 'neutral';
}

// No leading zeros: `0177.0.0.2` is not an address here (getaddrinfo would read it as octal, 127.0.0.2).
const IPV4 = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/;

export function isIpv4(s: string): boolean {
  const m = IPV4.exec(s);
  return !!m && m.slice(1).every((o) => Number(o) <= 255);
}

function toInt(a: string): number {
  return a.split('.').reduce((n, o) => n * 256 + Number(o), 0);
}

export function inCidr(addr: string, cidr: string): boolean {
  const [net = '', len = '32'] = cidr.split('/');
  const bits = Number(len);
  if (bits === 0) return true;
  const mask = bits === 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0;
  return ((toInt(addr) & mask) >>> 0) === ((toInt(net) & mask) >>> 0);
}

/**
 * Whether the proxy may connect to `addr` for a destination whose name got
 * `verdict` (neutral: no name, or one no rule names). An allowed name's
 * address passes the address deny rules but not the private ranges unless
 * an address rule allows them; a neutral one follows the address rules,
 * and is refused when forkd's resolver returned it for a denied name. An
 * address learned for a tenant's forced-denied name is refused before any
 * allow, like a forced address. (The host's own and never-reachable
 * addresses are DestinationGuard's, checked before this.)
 */
export function addressAllowed(s: SplitRules, addr: string, verdict: NameVerdict, learned: { denied: boolean; forced: boolean }): boolean {
  if (verdict === 'deny' || learned.forced || s.forcedAddrs.some((c) => inCidr(addr, c))) return false;
  if (s.allowAddrs.some((c) => inCidr(addr, c))) return true;
  const privateAddr = DENIED_BY_DEFAULT.some((c) => inCidr(addr, c));
  if (verdict === 'allow') return !privateAddr;
  if (learned.denied) return false;
  return !privateAddr && !s.denyAddrs.some((c) => inCidr(addr, c));
}
