import type { NodeService } from '../../node-contract/index.js';
import type { Principal } from '../auth/api-keys.js';
import type { ControlPlane } from '../control-plane.js';
import { policyGate } from '../policy/policy-gate.js';
import { newPolicyRuntime, type PolicyRuntime } from '../policy/policy-runtime.js';
import { networkGate } from '../network/network-gate.js';
import { NetworkPolicies } from '../network/network-policies.js';
import { quotaGate } from '../quota/quota-gate.js';
import { TenantView } from './tenant-view.js';

/** A control plane made without a policy runtime (tests that build one by hand) still gets one, shared by its callers. */
const fallbackRuntimes = new WeakMap<ControlPlane, PolicyRuntime>();

export function policyRuntime(control: ControlPlane): PolicyRuntime {
  if (control.policy) return control.policy;
  let r = fallbackRuntimes.get(control);
  if (!r) fallbackRuntimes.set(control, (r = newPolicyRuntime()));
  return r;
}

/**
 * What one caller may reach and do: its tenant's objects (TenantView), under
 * the per-call policies of the sandbox (policyGate), its networks held to its
 * tenant's network policy (networkGate), within its tenant's limits (quotaGate).
 */
export function callerView(svc: NodeService, control: ControlPlane, who: Principal): NodeService {
  const limited = networkGate(quotaGate(svc, control.store, control.quotas, who.tenant), new NetworkPolicies(control.store), who.tenant);
  return new TenantView(policyGate(limited, control.store, policyRuntime(control), who), control.store, who.tenant, who.admin);
}

/**
 * The service held to the limits of the tenant that owns `id`: for calls
 * authorised by something other than a key (a port-proxy token), whose
 * waking of a paused sandbox counts like any other. Unowned sandboxes are
 * the operator's: no tenant's limits apply.
 */
export async function ownerView(svc: NodeService, control: ControlPlane, id: string): Promise<NodeService> {
  const owner = await control.store.owner('sandbox', id);
  return owner === undefined ? svc : quotaGate(svc, control.store, control.quotas, owner);
}
