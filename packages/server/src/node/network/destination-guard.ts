import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { cidrList as listOf } from '../../shared/cidr.js';

/**
 * Never a sandbox's destination, whatever its own or its tenant's rules
 * allow: "this" network, loopback, link-local (cloud metadata at
 * 169.254.169.254), multicast, reserved and broadcast. Only the operator
 * lifts this (FORKD_EGRESS_OPERATOR_ALLOW). The nft path drops the same
 * ranges first in each sandbox's chain (egress-nft.ts); IPv6 never leaves a
 * sandbox, but the proxy connects from the host, so it is refused there too.
 */
export const NEVER_V4 = ['0.0.0.0/8', '127.0.0.0/8', '169.254.0.0/16', '224.0.0.0/3'];
/** Unspecified and IPv4-compatible (::/96, with ::1), link-local, multicast. IPv4-mapped forms are checked as IPv4. */
const NEVER_V6 = ['::/96', 'fe80::/10', 'ff00::/8'];

/** How long the host's interface addresses are trusted before they are read again (links come and go). */
const HOST_ADDRS_TTL_MS = 1000;

/** The one check of a destination address every egress path makes after resolution. */
export interface DestinationCheck {
  /** Why a sandbox may not reach addr:port (an operator's allow aside), or undefined when it may. */
  refusal(addr: string, port: number): string | undefined;
}

export interface DestinationGuardOptions {
  /** CIDRs (IPv4 or IPv6) the operator lets sandboxes reach despite the above (FORKD_EGRESS_OPERATOR_ALLOW). */
  operatorAllow?: readonly string[] | undefined;
  /** The node's own listening ports (API, E2B, resolver, proxy): never reached on a host or loopback address. */
  servicePorts?: () => Iterable<number>;
  /** The host's own addresses (default: every interface's, from the kernel). */
  hostAddresses?: () => Iterable<string>;
}

const kernelHostAddresses = (): string[] =>
  Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .map((i) => i.address);

/**
 * The host-protection check: an address that is not a canonical literal
 * (`0177.0.0.2` would reach 127.0.0.2 through getaddrinfo), one of the
 * host's own, one in NEVER_V4/NEVER_V6 (IPv4-mapped forms included) is
 * refused unless the operator allowed it; the node's service ports on the
 * host's or loopback addresses are refused even then.
 */
export class DestinationGuard implements DestinationCheck {
  readonly #never = listOf([...NEVER_V4, ...NEVER_V6]);
  readonly #loopback = listOf(['127.0.0.0/8', '::1/128']);
  readonly #operator: BlockList;
  readonly #servicePorts: () => Iterable<number>;
  readonly #hostAddresses: () => Iterable<string>;
  #host: { at: number; list: BlockList } | undefined;

  constructor(o: DestinationGuardOptions = {}) {
    this.#operator = listOf(o.operatorAllow ?? []);
    this.#servicePorts = o.servicePorts ?? (() => []);
    this.#hostAddresses = o.hostAddresses ?? kernelHostAddresses;
  }

  refusal(addr: string, port: number): string | undefined {
    const fam = addr.includes('%') ? 0 : isIP(addr);
    if (fam === 0) return `${addr} is not a plain IP address`;
    const type = fam === 4 ? 'ipv4' : 'ipv6';
    const host = this.#hostList().check(addr, type);
    if ((host || this.#loopback.check(addr, type)) && [...this.#servicePorts()].includes(port)) return `${addr}:${port} is a forkd service`;
    if (!host && !this.#never.check(addr, type)) return undefined;
    if (this.#operator.check(addr, type)) return undefined;
    return host ? `${addr} is the host's own address` : `${addr} is loopback, link-local, multicast or reserved`;
  }

  #hostList(): BlockList {
    const now = Date.now();
    if (this.#host && now - this.#host.at < HOST_ADDRS_TTL_MS) return this.#host.list;
    const list = new BlockList();
    for (const a of this.#hostAddresses()) {
      const plain = a.split('%')[0] ?? a;
      const fam = isIP(plain);
      if (fam) list.addAddress(plain, fam === 4 ? 'ipv4' : 'ipv6');
    }
    this.#host = { at: now, list };
    return list;
  }
}
