import type { PolicyAnswer, PolicyDocument, PutTenantLimitsRequest, PutTenantNetworkRequest, TenantLimitsInfo, TenantNetworkInfo } from '@forkd/protocol';
import type { HttpTransport } from './http-transport.js';

/** Tenants' limits: every key reads its own tenant's; admin keys read and set any tenant's. */
export class Tenants {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  /** The limits that apply, the tenant's own overrides, and what it uses now. */
  limits(tenant: string): Promise<TenantLimitsInfo> {
    return this.#http.json('GET', `/v1/tenants/${encodeURIComponent(tenant)}/limits`);
  }

  /**
   * Replaces the tenant's overrides (admin keys only): a number sets a limit,
   * null removes it, an absent field falls back to the server's default.
   */
  setLimits(tenant: string, limits: PutTenantLimitsRequest): Promise<TenantLimitsInfo> {
    return this.#http.json('PUT', `/v1/tenants/${encodeURIComponent(tenant)}/limits`, { json: limits });
  }

  /** The tenant's per-call policy (`{}` when none): every key reads its own tenant's. */
  async policy(tenant: string): Promise<PolicyDocument> {
    return (await this.#http.json<PolicyAnswer>('GET', `/v1/tenants/${encodeURIComponent(tenant)}/policy`)).policy;
  }

  /** Replaces the tenant's per-call policy (admin keys only); it applies to every sandbox of the tenant. */
  async setPolicy(tenant: string, policy: PolicyDocument): Promise<PolicyDocument> {
    return (await this.#http.json<PolicyAnswer>('PUT', `/v1/tenants/${encodeURIComponent(tenant)}/policy`, { json: policy })).policy;
  }

  /** The tenant's network policy: default network, egress allowed, forced denials, maximum bandwidth and connections. */
  network(tenant: string): Promise<TenantNetworkInfo> {
    return this.#http.json('GET', `/v1/tenants/${encodeURIComponent(tenant)}/network`);
  }

  /** Replaces the tenant's network policy whole (admin keys only); `{}` removes it. */
  setNetwork(tenant: string, policy: PutTenantNetworkRequest): Promise<TenantNetworkInfo> {
    return this.#http.json('PUT', `/v1/tenants/${encodeURIComponent(tenant)}/network`, { json: policy });
  }
}
