import { NetworkRules, TenantNetworkPolicy } from '@forkd/protocol';
import type { ControlStore } from '../../store/control-store.js';

/** Where tenants' network policies and templates' default networks are kept (the control store), read back checked. */
export interface NetworkPolicySource {
  tenant(tenant: string): Promise<TenantNetworkPolicy>;
  /** A template's default network for one tenant's creates, by templateKey (never by name). */
  template(key: string): Promise<NetworkRules | undefined>;
  setTemplate(key: string, network: NetworkRules | undefined): Promise<void>;
}

export class NetworkPolicies implements NetworkPolicySource {
  readonly #store: ControlStore;

  constructor(store: ControlStore) {
    this.#store = store;
  }

  /** A policy stored by an older forkd that no longer parses counts as none rather than failing every create. */
  async tenant(tenant: string): Promise<TenantNetworkPolicy> {
    const p = TenantNetworkPolicy.safeParse((await this.#store.networkSetting('tenant', tenant)) ?? {});
    return p.success ? p.data : {};
  }

  async setTenant(tenant: string, policy: TenantNetworkPolicy): Promise<void> {
    await this.#store.setNetworkSetting('tenant', tenant, Object.keys(policy).length ? policy : undefined);
  }

  async template(key: string): Promise<NetworkRules | undefined> {
    const raw = await this.#store.networkSetting('template', key);
    if (raw === undefined) return undefined;
    const p = NetworkRules.safeParse(raw);
    return p.success ? p.data : undefined;
  }

  async setTemplate(key: string, network: NetworkRules | undefined): Promise<void> {
    await this.#store.setNetworkSetting('template', key, network);
  }
}
