import { z } from 'zod';
import { NetworkRule, NetworkRules } from './network.js';
import { BandwidthMbps, ConnectionCount } from './network-limits.js';

/**
 * A tenant's network policy, set by admin keys. `default`: the network a
 * create gets when neither it nor its template names one. The rest caps
 * every sandbox of the tenant, at create, fork and every network change:
 * `egress: false` refuses egress (PERMISSION_DENIED); `denyOut` is forced
 * (a sandbox's allowOut never overrides it); `maxBandwidthMbps` and
 * `maxConnections` are what a sandbox gets when it asks for none, and the
 * most it may ask for (more is PERMISSION_DENIED). Absent: no cap.
 */
export const TenantNetworkPolicy = z.strictObject({
  default: NetworkRules.optional(),
  egress: z.boolean().optional(),
  denyOut: z.array(NetworkRule).max(1024).optional(),
  maxBandwidthMbps: BandwidthMbps.optional(),
  maxConnections: ConnectionCount.optional(),
});
export type TenantNetworkPolicy = z.infer<typeof TenantNetworkPolicy>;

/** `PUT /v1/tenants/{tenant}/network`: replaces the tenant's policy whole; `{}` removes it. */
export const PutTenantNetworkRequest = TenantNetworkPolicy;
export type PutTenantNetworkRequest = z.input<typeof PutTenantNetworkRequest>;

export const TenantNetworkInfo = z.object({ tenant: z.string(), policy: TenantNetworkPolicy });
export type TenantNetworkInfo = z.infer<typeof TenantNetworkInfo>;

/**
 * A template's default network: what a create from it gets when the
 * request names none (the tenant's caps still apply). `network: null` removes it.
 */
export const PutTemplateNetworkRequest = z.strictObject({ network: NetworkRules.nullable() });
export type PutTemplateNetworkRequest = z.input<typeof PutTemplateNetworkRequest>;

export const TemplateNetworkInfo = z.object({ template: z.string(), network: NetworkRules.nullable() });
export type TemplateNetworkInfo = z.infer<typeof TemplateNetworkInfo>;
