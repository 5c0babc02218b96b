import { ForkdError, NetworkRules, type TenantNetworkPolicy } from '@forkd/protocol';

/** A caller's network rules, checked (INVALID_ARGUMENT naming the field, like the node's own check). */
export function parseRules(input: unknown, field = 'network'): NetworkRules {
  const parsed = NetworkRules.safeParse(input ?? {});
  if (!parsed.success) throw new ForkdError('INVALID_ARGUMENT', parsed.error.issues.map((i) => `${field}${i.path.length ? '.' + i.path.join('.') : ''}: ${i.message}`).join('; '));
  return parsed.data;
}

/** What a create gets: the request's network, else its template's default, else its tenant's default, else none. */
export function resolveNetwork(requested: unknown, templateDefault: NetworkRules | undefined, tenant: TenantNetworkPolicy): NetworkRules | undefined {
  if (requested !== undefined && requested !== null) return parseRules(requested);
  return templateDefault ?? tenant.default;
}

/**
 * `rules` held to a tenant's policy: egress refused when the policy forbids
 * it; bandwidth and connections at most the policy's (its maximum when the
 * rules name none); the policy's denials forced (put in forcedDenyOut,
 * which wins over allowOut). A refusal is PERMISSION_DENIED: the request
 * is well formed, the tenant may not have it. `none` needs no cap.
 */
export function capNetwork(rules: NetworkRules | undefined, policy: TenantNetworkPolicy, tenant: string): NetworkRules | undefined {
  if (!rules || rules.mode === 'none') return rules;
  const refuse = (what: string) => {
    throw new ForkdError('PERMISSION_DENIED', `tenant ${tenant}'s network policy: ${what}`);
  };
  if (policy.egress === false) refuse('egress is not allowed');
  const capped = (name: string, asked: number | undefined, max: number | undefined): number | undefined => {
    if (max === undefined) return asked;
    if (asked !== undefined && asked > max) refuse(`${name} ${asked} is over the maximum ${max}`);
    return asked ?? max;
  };
  const bandwidthMbps = capped('bandwidthMbps', rules.bandwidthMbps, policy.maxBandwidthMbps);
  const maxConnections = capped('maxConnections', rules.maxConnections, policy.maxConnections);
  const forced = [...new Set([...(rules.forcedDenyOut ?? []), ...(policy.denyOut ?? [])])];
  const { bandwidthMbps: _b, maxConnections: _c, forcedDenyOut: _f, ...rest } = rules;
  return {
    ...rest,
    ...(forced.length ? { forcedDenyOut: forced } : {}),
    ...(bandwidthMbps !== undefined ? { bandwidthMbps } : {}),
    ...(maxConnections !== undefined ? { maxConnections } : {}),
  };
}

/** Whether two rule sets are the same (a fork whose parent's rules already meet the policy needs no change). */
export function sameRules(a: NetworkRules | undefined, b: NetworkRules | undefined): boolean {
  const norm = (r: NetworkRules | undefined) => (r ? JSON.stringify(Object.entries(r).sort(([x], [y]) => x.localeCompare(y))) : '');
  return norm(a) === norm(b);
}
