import type { NetworkRules } from '@forkd/sdk';
import { parsePositiveInt, parsePositiveNumber } from '../args.js';
import { UsageError } from '../usage-error.js';

// The network flags, shared by create, network, template network and tenants network.

/** `--bandwidth MBPS` and `--max-connections N`. */
export const NETWORK_LIMIT_OPTIONS = {
  bandwidth: { type: 'string' },
  'max-connections': { type: 'string' },
} as const;

export const NETWORK_LIMIT_USAGE = `      --bandwidth MBPS  bandwidth cap in Mbit/s, each direction (fractions allowed)
      --max-connections N  concurrent connections (the next new one is dropped)
`;

export function parseNetworkLimits(values: { bandwidth?: string | undefined; 'max-connections'?: string | undefined }): Pick<NetworkRules, 'bandwidthMbps' | 'maxConnections'> {
  const bandwidthMbps = parsePositiveNumber('--bandwidth', values.bandwidth);
  const maxConnections = parsePositiveInt('--max-connections', values['max-connections']);
  return { ...(bandwidthMbps !== undefined ? { bandwidthMbps } : {}), ...(maxConnections !== undefined ? { maxConnections } : {}) };
}

/** `--network`, `--mode`, `--default-network`: here, not in network.ts, so that create does not load protocol's schemas (zod) with it. */
export function parseMode(flag: string, v: string | undefined): NetworkRules['mode'] | undefined {
  if (v === undefined) return undefined;
  if (v !== 'none' && v !== 'egress') throw new UsageError(`${flag} must be none or egress, got ${JSON.stringify(v)}`);
  return v;
}
