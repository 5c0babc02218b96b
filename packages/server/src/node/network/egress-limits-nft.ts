import { addressRuleError, isDomainRule, type NetworkRules } from '@forkd/protocol';
import type { Attachment } from './egress-nft.js';

/**
 * A sandbox's limits in forkd's table, beside its rules (egress-nft.ts):
 * one prerouting chain after conntrack (-150: a packet's ct state is known)
 * and before destination NAT (-100), so it sees every packet a sandbox
 * sends with its original destination, whether the packet is then
 * forwarded or redirected to a host-side listener (input). Per sandbox:
 * the forced denials (before any allow), the upload policer and the count
 * of concurrent connections (`ct count`: a closed TCP connection stops
 * counting once conntrack sees it closed; a new one over the count is
 * dropped, so the client's connect times out).
 */
export function limitsTableScript(table: string): string {
  const t = `inet ${table}`;
  return [
    `add map ${t} limits { type ifname : verdict; }`,
    `add chain ${t} lim_sb { type filter hook prerouting priority -150; policy accept; }`,
    `flush chain ${t} lim_sb`,
    `add rule ${t} lim_sb iifname @ifs iifname vmap @limits`,
  ].join('\n') + '\n';
}

const chainOf = (a: Attachment) => `lim_${a.ifname}`;

/**
 * Upload (bytes/s) from Mbit/s; the burst lets a TCP window through without a drop at every ack round.
 * (nftables' byte limit holds a second at the rate on top of the burst: the first second goes unpoliced.)
 */
export function uploadRate(mbps: number): { bytesPerSecond: number; burstBytes: number } {
  const bytesPerSecond = Math.max(1, Math.round(mbps * 125_000));
  return { bytesPerSecond, burstBytes: Math.max(64 * 1024, Math.round(bytesPerSecond / 10)) };
}

/** Adds or replaces one sandbox's limits chain (part of the same nft transaction as its rules). */
export function limitsAttachScript(table: string, a: Attachment, rules: NetworkRules): string {
  const t = `inet ${table}`;
  const c = chainOf(a);
  // Address rules only: a forced name's addresses are learned (EgressPolicy) into the sandbox's chain; nft
  // would try to resolve a name itself here, and fail the whole transaction.
  const forced = (rules.forcedDenyOut ?? []).filter((r) => !isDomainRule(r) && addressRuleError(r) === undefined);
  const lines = [
    `add set ${t} ${c}_deny { type ipv4_addr; flags interval; auto-merge; }`,
    `flush set ${t} ${c}_deny`,
    ...(forced.length ? [`add element ${t} ${c}_deny { ${forced.join(', ')} }`] : []),
    `add chain ${t} ${c}`,
    `flush chain ${t} ${c}`,
    `add rule ${t} ${c} ip daddr @${c}_deny drop`,
  ];
  if (rules.bandwidthMbps !== undefined) {
    const r = uploadRate(rules.bandwidthMbps);
    lines.push(`add rule ${t} ${c} limit rate over ${r.bytesPerSecond} bytes/second burst ${r.burstBytes} bytes drop`);
  }
  if (rules.maxConnections !== undefined) lines.push(`add rule ${t} ${c} ct state new ct count over ${rules.maxConnections} drop`);
  lines.push(`add element ${t} limits { "${a.ifname}" : goto ${c} }`);
  return lines.join('\n') + '\n';
}

/** Removes one sandbox's limits, whatever of them is there (see detachScript). */
export function limitsDetachScript(table: string, a: Attachment): string {
  const t = `inet ${table}`;
  const c = chainOf(a);
  return [
    `add chain ${t} ${c}`,
    `add set ${t} ${c}_deny { type ipv4_addr; flags interval; }`,
    `add map ${t} limits { type ifname : verdict; }`,
    `add element ${t} limits { "${a.ifname}" : goto ${c} }`,
    `delete element ${t} limits { "${a.ifname}" }`,
    `flush chain ${t} ${c}`,
    `delete chain ${t} ${c}`,
    `delete set ${t} ${c}_deny`,
  ].join('\n') + '\n';
}
