import type { CreateSandboxRequest, SandboxInfo, SetNetworkRequest } from '@forkd/protocol';
import { forwardTo, type ClaimSandbox, type ForkOptions, type NodeService } from '../../node-contract/index.js';
import type { NetworkPolicySource } from './network-policies.js';
import { templateIdOf, templateKey } from '../template-scope.js';
import { capNetwork, parseRules, resolveNetwork, sameRules } from './network-policy.js';

/**
 * The NodeService with one tenant's network policy in front of every call
 * that sets a sandbox's network: a create gets the request's network, else
 * its template's default (this tenant's, of that template's id), else the tenant's default, capped by the tenant's
 * policy (see capNetwork); a network change is capped the same way; a fork
 * is refused when its source's network breaks the policy now (egress
 * forbidden since, limits over the maximum) and otherwise gets the capped
 * rules (new forced denials, new maxima) right after it is made.
 */
export function networkGate(svc: NodeService, policies: NetworkPolicySource, tenant: string): NodeService {
  const policy = () => policies.tenant(tenant);
  // This tenant's default of the template now published under the name (the node creates from that one).
  const templateId = async (name: string) => {
    const t = (await svc.templates()).find((x) => x.name === name);
    return t && templateIdOf(t);
  };
  const templateDefault = async (name: string) => {
    const id = await templateId(name);
    return id === undefined ? undefined : policies.template(templateKey(tenant, id));
  };
  const sourceNetwork = async (source: string): Promise<SandboxInfo['network']> => (await svc.get(source.startsWith('snap-') ? (await svc.getSnapshot(source)).sandboxId : source)).network;

  return {
    ...forwardTo(svc),
    async create(req: CreateSandboxRequest, claim?: ClaimSandbox) {
      const p = await policy();
      const network = capNetwork(resolveNetwork(req.network, await templateDefault(req.template ?? 'base'), p), p, tenant);
      const { network: _, ...rest } = req;
      return svc.create(network ? { ...rest, network } : rest, claim);
    },
    async fork(source: string, count: number, claim?: ClaimSandbox, opts?: ForkOptions) {
      let had: SandboxInfo['network'];
      try {
        had = await sourceNetwork(source);
      } catch {
        // No such source: the node answers for it (NOT_FOUND).
        return svc.fork(source, count, claim, opts);
      }
      const want = capNetwork(had, await policy(), tenant);
      const forks = await svc.fork(source, count, claim, opts);
      if (sameRules(had, want) || !want) return forks;
      return Promise.all(forks.map((f) => svc.setNetwork(f.id, want)));
    },
    /** Its default network goes with it (a later template of the name has another id: this is tidiness, not safety). */
    async deleteTemplate(name: string) {
      const id = await templateId(name);
      await svc.deleteTemplate(name);
      if (id !== undefined) await policies.setTemplate(templateKey(tenant, id), undefined);
    },
    async setNetwork(id: string, rules: SetNetworkRequest) {
      const want = capNetwork(parseRules(rules), await policy(), tenant);
      return svc.setNetwork(id, want ?? { mode: 'none' });
    },
  };
}
