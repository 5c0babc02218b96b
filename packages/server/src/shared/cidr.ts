import { BlockList, isIP } from 'node:net';

/** Adds an IPv4 or IPv6 CIDR (or a bare address) to `list`; false when it is not one. */
export function addCidr(list: BlockList, cidr: string): boolean {
  const [net = '', len, extra] = cidr.split('/');
  const fam = extra === undefined ? isIP(net) : 0;
  if (fam === 0) return false;
  const max = fam === 4 ? 32 : 128;
  const bits = len === undefined ? max : /^\d{1,3}$/.test(len) ? Number(len) : NaN;
  if (!(bits >= 0 && bits <= max)) return false;
  list.addSubnet(net, bits, fam === 4 ? 'ipv4' : 'ipv6');
  return true;
}

/** Why `cidrs` has an entry that is not an IPv4 or IPv6 CIDR (config checking), or undefined. */
export function cidrListError(cidrs: readonly string[]): string | undefined {
  const bad = cidrs.find((c) => !addCidr(new BlockList(), c));
  return bad === undefined ? undefined : `${bad} is not an address or CIDR`;
}

/** A BlockList of the CIDRs that are ones (the others are the caller's to refuse: cidrListError). */
export function cidrList(cidrs: readonly string[]): BlockList {
  const l = new BlockList();
  for (const c of cidrs) addCidr(l, c);
  return l;
}
