import { NetworkRules, TenantNetworkPolicy } from '@forkd/protocol';
import type { ControlStore } from '../../store/control-store.js';

/** Where tenants' network policies and templates' default networks are kept (the control store), read back checked. */
export interface NetworkPolicySource {
  tenant(tenant: string): Promise<TenantNetworkPolicy>;
  template(name: string): Promise<NetworkRules | undefined>;
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

  async template(name: string): Promise<NetworkRules | undefined> {
    const raw = await this.#store.networkSetting('template', name);
    if (raw === undefined) return undefined;
    const p = NetworkRules.safeParse(raw);
    return p.success ? p.data : undefined;
  }

  async setTemplate(name: string, network: NetworkRules | undefined): Promise<void> {
    await this.#store.setNetworkSetting('template', name, network);
  }
}
