import type { CreateSandboxRequest, SandboxInfo, SetNetworkRequest } from '@forkd/protocol';
import type { ClaimSandbox, ForkOptions, NodeService } from '../../node-contract/index.js';
import type { NetworkPolicySource } from './network-policies.js';
import { capNetwork, parseRules, resolveNetwork, sameRules } from './network-policy.js';

/**
 * The NodeService with one tenant's network policy in front of every call
 * that sets a sandbox's network: a create gets the request's network, else
 * its template's default, else the tenant's default, capped by the tenant's
 * policy (see capNetwork); a network change is capped the same way; a fork
 * is refused when its source's network breaks the policy now (egress
 * forbidden since, limits over the maximum) and otherwise gets the capped
 * rules (new forced denials, new maxima) right after it is made.
 */
export function networkGate(svc: NodeService, policies: NetworkPolicySource, tenant: string): NodeService {
  const policy = () => policies.tenant(tenant);
  const sourceNetwork = async (source: string): Promise<SandboxInfo['network']> => (await svc.get(source.startsWith('snap-') ? (await svc.getSnapshot(source)).sandboxId : source)).network;

  return {
    async create(req: CreateSandboxRequest, claim?: ClaimSandbox) {
      const p = await policy();
      const network = capNetwork(resolveNetwork(req.network, await policies.template(req.template ?? 'base'), p), p, tenant);
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
    async setNetwork(id: string, rules: SetNetworkRequest) {
      const want = capNetwork(parseRules(rules), await policy(), tenant);
      return svc.setNetwork(id, want ?? { mode: 'none' });
    },
    resume: (id, opts) => svc.resume(id, opts),
    rewind: (id, snapId) => svc.rewind(id, snapId),
    spawn: (id, ...rest) => svc.spawn(id, ...rest),
    attach: (id, ...rest) => svc.attach(id, ...rest),
    listProcesses: (id) => svc.listProcesses(id),
    signal: (id, ...rest) => svc.signal(id, ...rest),
    writeStdin: (id, ...rest) => svc.writeStdin(id, ...rest),
    readFile: (id, ...rest) => svc.readFile(id, ...rest),
    writeFile: (id, ...rest) => svc.writeFile(id, ...rest),
    listDir: (id, ...rest) => svc.listDir(id, ...rest),
    stat: (id, ...rest) => svc.stat(id, ...rest),
    mkdir: (id, ...rest) => svc.mkdir(id, ...rest),
    move: (id, ...rest) => svc.move(id, ...rest),
    remove: (id, ...rest) => svc.remove(id, ...rest),
    watch: (id, ...rest) => svc.watch(id, ...rest),
    connectPort: (id, port) => svc.connectPort(id, port),
    setCredentials: (id, creds) => svc.setCredentials(id, creds),
    snapshot: (id, opts) => svc.snapshot(id, opts),
    buildTemplate: (req, progress, claim) => svc.buildTemplate(req, progress, claim),
    get: (id) => svc.get(id),
    list: () => svc.list(),
    delete: (id) => svc.delete(id),
    metrics: (id) => svc.metrics(id),
    templates: () => svc.templates(),
    timeline: (id) => svc.timeline(id),
    getSnapshot: (snapId) => svc.getSnapshot(snapId),
    deleteSnapshot: (snapId) => svc.deleteSnapshot(snapId),
    pinSnapshot: (snapId, pinned) => svc.pinSnapshot(snapId, pinned),
    pause: (id, opts) => svc.pause(id, opts),
    setTimeout: (id, seconds) => svc.setTimeout(id, seconds),
    tree: (id) => svc.tree(id),
    deleteTemplate: (name) => svc.deleteTemplate(name),
    stats: () => svc.stats(),
  };
}
