import { ForkdError, type NetworkRules } from '@forkd/protocol';
import { parseRules } from '../network/network-policy.js';
import type { NetworkConfig } from './api-schemas.js';
import { E2bApiError } from './e2b-errors.js';

/**
 * What forkd cannot map: refused, not ignored. (`allowPublicTraffic: false`
 * is what forkd's port proxy always does: a sandbox's ports answer only
 * requests that carry one of its credentials, the traffic token included.)
 */
function unmappable(n: NetworkConfig): string | undefined {
  if (n.rules && Object.keys(n.rules).length) return 'network.rules is not supported yet';
  if (n.egressProxy) return 'network.egressProxy is not supported yet';
  if (n.maskRequestHost) return 'network.maskRequestHost is not supported yet';
  return undefined;
}

/** forkd's rules, checked by the protocol's schema (what it accepts passes through); a bad rule is a 400. */
function checked(rules: unknown): NetworkRules {
  try {
    return parseRules(rules, 'network');
  } catch (err) {
    if (err instanceof ForkdError) throw new E2bApiError(400, err.message);
    throw err;
  }
}

/**
 * E2B's rules as forkd's: allowOut and denyOut as they are (allow beats deny
 * in both); `allow_internet_access: false` is E2B's `denyOut: ["0.0.0.0/0"]`,
 * so with no allowOut it is `none` (loopback only), else egress to the allowed only.
 */
function mapped(n: NetworkConfig | null | undefined, allowInternet: boolean | null | undefined, keep: Pick<NetworkRules, 'bandwidthMbps' | 'maxConnections'>): NetworkRules {
  const refused = n ? unmappable(n) : undefined;
  if (refused) throw new E2bApiError(400, refused);
  const allowOut = n?.allowOut ?? [];
  const denyOut = n?.denyOut ?? [];
  if (allowInternet === false || n?.allow_internet_access === false) {
    if (!allowOut.length) return checked({ mode: 'none' });
    return checked({ mode: 'egress', allowOut, denyOut: [...new Set([...denyOut, '0.0.0.0/0'])], ...keep });
  }
  return checked({ mode: 'egress', allowOut, denyOut, ...keep });
}

/**
 * A create's network. Nothing restrictive asked (no rules, internet access
 * not refused; SDKs up to 2.50 send `allow_internet_access: true` on every
 * create): undefined, so forkd's defaults apply (template, tenant, else
 * `none`) — forkd does not open egress unless asked or configured to.
 */
export function e2bCreateNetwork(n: NetworkConfig | null | undefined, allowInternet: boolean | null | undefined): NetworkRules | undefined {
  const asked = allowInternet === false || n?.allow_internet_access === false || !!n?.allowOut?.length || !!n?.denyOut?.length;
  const refused = n ? unmappable(n) : undefined;
  if (refused) throw new E2bApiError(400, refused);
  return asked ? mapped(n, allowInternet, {}) : undefined;
}

/**
 * `PUT …/network` replaces the configuration, an omitted field clearing it
 * (E2B's semantics: `{}` is full internet access, egress with no rules).
 * The sandbox's own bandwidth and connection limits, which E2B has no word
 * for, are kept; the tenant's policy still caps the result.
 */
export function e2bUpdateNetwork(n: NetworkConfig, current: NetworkRules | undefined): NetworkRules {
  const keep = { ...(current?.bandwidthMbps !== undefined ? { bandwidthMbps: current.bandwidthMbps } : {}), ...(current?.maxConnections !== undefined ? { maxConnections: current.maxConnections } : {}) };
  return mapped(n, undefined, keep);
}
