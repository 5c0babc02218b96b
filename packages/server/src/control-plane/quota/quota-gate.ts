import { Limits, type BuildTemplateRequest, type CreateSandboxRequest, type SandboxInfo, type TenantUsage } from '@forkd/protocol';
import type { ControlStore } from '../../store/control-store.js';
import type { ClaimSandbox, SandboxService } from '../http/sandbox-service.js';
import type { Reservation, TenantHoldings, TenantQuotas } from './tenant-quotas.js';
import { NO_USAGE, addUsage, newSandboxDemand, sandboxUsage } from './tenant-usage.js';

/** A template build's sandbox (see template-builder.ts): counted like any other while the build runs. */
const BUILD_DEMAND = newSandboxDemand({ memoryMb: 2048, cpus: 2 });
const ONE_SNAPSHOT: TenantUsage = { ...NO_USAGE, snapshots: 1 };

/** What a tenant holds on the node: its own sandboxes as listed, and their snapshots. */
export function tenantHoldings(svc: SandboxService, store: ControlStore, tenant: string): TenantHoldings {
  const mine = store.owned('sandbox', tenant);
  const sandboxes = svc.list().filter((s) => mine.has(s.id));
  let snapshots = 0;
  for (const s of sandboxes) {
    try {
      snapshots += svc.timeline(s.id).length;
    } catch {
      /* deleted meanwhile */
    }
  }
  return { sandboxes, snapshots };
}

/**
 * The SandboxService with one tenant's limits in front of everything that
 * makes a sandbox run or a snapshot exist: create, fork (N forks count N; a
 * live fork also takes a snapshot), a template build's sandbox, and every
 * call that wakes a paused sandbox (resume, rewind, exec, files, streams,
 * ports). Ownership is checked before (TenantView wraps this); the node's
 * own admission control (can the host take it) comes after.
 */
export function quotaGate(svc: SandboxService, store: ControlStore, quotas: TenantQuotas, tenant: string): SandboxService {
  const holdings = () => tenantHoldings(svc, store, tenant);
  const admit = (demand: TenantUsage) => quotas.admit(tenant, demand, holdings);
  const guarded = async <T>(r: Reservation, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } finally {
      r.release();
    }
  };
  const claiming = (r: Reservation, claim: ClaimSandbox | undefined): ClaimSandbox => (id) => {
    r.bind(id);
    claim?.(id);
  };
  /** A call that may bring a paused (or lost) sandbox back to running: its CPU and memory count again. */
  // Async: a refusal is a rejection, like the node's own; the check still runs before the first await.
  const waking = async <T>(id: string, fn: () => Promise<T>): Promise<T> => {
    let s: SandboxInfo;
    try {
      s = svc.get(id);
    } catch {
      return fn();
    }
    if (s.state === 'running' || s.state === 'creating') return fn();
    // Its disk is already counted (paused sandboxes keep it). Not bound: between
    // the node marking it running and the release it counts twice, which can only refuse, never over-admit.
    const u = sandboxUsage({ ...s, state: 'running' });
    return guarded(admit({ ...u, diskMb: 0 }), fn);
  };
  const limitsOf = (source: string): SandboxInfo['limits'] => svc.get(source.startsWith('snap-') ? svc.getSnapshot(source).sandboxId : source).limits;

  return {
    async create(req: CreateSandboxRequest, claim?: ClaimSandbox) {
      // The node's defaults for what the request leaves out (the schema's).
      const l = Limits.parse({ memoryMb: req.memoryMb, cpus: req.cpus });
      const d = newSandboxDemand({ memoryMb: l.memoryMb, cpus: l.cpus, diskMb: req.diskMb ?? quotas.defaultDiskMb });
      const r = admit(d);
      return guarded(r, () => svc.create(req, claiming(r, claim)));
    },
    async fork(source: string, count: number, claim?: ClaimSandbox) {
      let l: SandboxInfo['limits'];
      try {
        l = limitsOf(source);
      } catch {
        // No such source: the node answers for it (NOT_FOUND), and makes nothing.
        return svc.fork(source, count, claim);
      }
      let d = addUsage(NO_USAGE, newSandboxDemand({ memoryMb: l.memoryMb, cpus: l.cpus, diskMb: l.diskMb }), Math.max(1, count));
      if (!source.startsWith('snap-')) d = addUsage(d, ONE_SNAPSHOT);
      const r = admit(d);
      return guarded(r, () => svc.fork(source, count, claiming(r, claim)));
    },
    async snapshot(id, opts) {
      return guarded(admit(ONE_SNAPSHOT), () => svc.snapshot(id, opts));
    },
    async buildTemplate(req: BuildTemplateRequest, progress, claim?: ClaimSandbox) {
      const r = admit(BUILD_DEMAND);
      return guarded(r, () => svc.buildTemplate(req, progress, claiming(r, claim)));
    },
    resume: (id) => waking(id, () => svc.resume(id)),
    rewind: (id, snapId) => waking(id, () => svc.rewind(id, snapId)),
    guest: (id) => waking(id, () => svc.guest(id)),
    spawn: (id, ...rest) => waking(id, () => svc.spawn(id, ...rest)),
    attach: (id, ...rest) => waking(id, () => svc.attach(id, ...rest)),
    watch: (id, ...rest) => waking(id, () => svc.watch(id, ...rest)),
    connectPort: (id, port) => waking(id, () => svc.connectPort(id, port)),
    get: (id) => svc.get(id),
    list: () => svc.list(),
    delete: (id) => svc.delete(id),
    metrics: (id) => svc.metrics(id),
    templates: () => svc.templates(),
    timeline: (id) => svc.timeline(id),
    getSnapshot: (snapId) => svc.getSnapshot(snapId),
    deleteSnapshot: (snapId) => svc.deleteSnapshot(snapId),
    pinSnapshot: (snapId, pinned) => svc.pinSnapshot(snapId, pinned),
    pause: (id) => svc.pause(id),
    setTimeout: (id, seconds) => svc.setTimeout(id, seconds),
    tree: (id) => svc.tree(id),
    deleteTemplate: (name) => svc.deleteTemplate(name),
    stats: () => svc.stats(),
  };
}
