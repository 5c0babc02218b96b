import { z } from 'zod';
import { NetworkLimitFields } from './network-limits.js';

/**
 * A sandbox's network: `none` (loopback only, the default) or `egress`
 * (outbound through NAT on the host; inbound only through the port proxy).
 * Rules are IPv4 addresses or CIDRs of destinations, or domain names
 * (`example.com`: that name exactly; `*.example.com`: any name under it, not
 * the apex itself); allow wins over deny, and private, link-local and host
 * addresses are denied unless allowed explicitly (by address).
 */
export const NETWORK_MODES = ['none', 'egress'] as const;
export type NetworkMode = (typeof NETWORK_MODES)[number];

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

const LABEL = '[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?';
const DOMAIN = new RegExp(`^(\\*\\.)?${LABEL}(\\.${LABEL})*\\.?$`);

/** Whether `rule` (a valid one) names a domain rather than an address. */
export function isDomainRule(rule: string): boolean {
  return !/^[\d./]*$/.test(rule) && !rule.includes(':');
}

/** Why `rule` is not an address or domain rule, or undefined when it is one. */
export function addressRuleError(rule: string): string | undefined {
  const [addr = '', len, ...rest] = rule.split('/');
  if (IPV4.test(addr) && rest.length === 0 && (len === undefined || (/^\d{1,2}$/.test(len) && Number(len) <= 32))) return undefined;
  if (/^[\d./]*$/.test(rule)) return `${rule}: not an IPv4 address or CIDR`;
  if (addr.includes(':')) return `${rule}: IPv6 rules are not supported (sandboxes have IPv4 egress only)`;
  if (DOMAIN.test(rule) && rule.length <= 253 && rule.includes('.')) return undefined;
  if (DOMAIN.test(rule)) return `${rule}: a domain rule needs at least two labels (example.com, *.example.com)`;
  return `${rule}: not an IPv4 address, CIDR or domain name (example.com, *.example.com)`;
}

export const NetworkRule = z
  .string()
  .max(256)
  .superRefine((v, ctx) => {
    const err = addressRuleError(v);
    if (err) ctx.addIssue({ code: 'custom', message: err });
  });

export const NetworkRules = z.strictObject({
  mode: z.enum(NETWORK_MODES).default('none'),
  allowOut: z.array(NetworkRule).max(1024).default([]),
  denyOut: z.array(NetworkRule).max(1024).default([]),
  /**
   * Denied before allowOut is consulted. The control plane puts the tenant's
   * forced denials here, so a sandbox's allow never overrides them (a caller
   * may add to it; its tenant's entries are put back on every change).
   */
  forcedDenyOut: z.array(NetworkRule).max(1024).optional(),
  ...NetworkLimitFields,
});
export type NetworkRules = z.infer<typeof NetworkRules>;
export type NetworkRulesInput = z.input<typeof NetworkRules>;

/** A sandbox without recorded rules: loopback only (mode `none`, nothing allowed or denied). */
export const LOOPBACK_ONLY: NetworkRules = Object.freeze({ mode: 'none', allowOut: [], denyOut: [] }) as NetworkRules;

/** `PUT /v1/sandboxes/{id}/network`: replaces the rules (and mode); the next connection follows them. */
export const SetNetworkRequest = NetworkRules;
export type SetNetworkRequest = z.input<typeof SetNetworkRequest>;
