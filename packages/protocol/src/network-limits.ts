import { z } from 'zod';

/** Bandwidth cap (Mbit/s, each direction) and the most concurrent connections a sandbox may hold. */
export const MAX_BANDWIDTH_MBPS = 100_000;
export const MAX_CONNECTIONS = 1_000_000;

export const MIN_BANDWIDTH_MBPS = 0.1;
export const BandwidthMbps = z.number().min(MIN_BANDWIDTH_MBPS).max(MAX_BANDWIDTH_MBPS);
export const ConnectionCount = z.number().int().min(1).max(MAX_CONNECTIONS);

/**
 * The limit fields of NetworkRules (kept apart from the rules' validation).
 * Absent: unlimited (unless the tenant's policy caps it; see TenantNetworkPolicy).
 */
export const NetworkLimitFields = {
  /** Each direction, in Mbit/s: download shaped on the host's veth, upload policed as it enters the host. */
  bandwidthMbps: BandwidthMbps.optional(),
  /** Concurrent connections (TCP, UDP flows) the sandbox may open; the next new one is dropped while at it. */
  maxConnections: ConnectionCount.optional(),
};
