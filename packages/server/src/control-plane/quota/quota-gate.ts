import { Limits, type BuildTemplateRequest, type CreateSandboxRequest, type SandboxInfo, type TenantUsage } from '@forkd/protocol';
import { forwardTo, type ClaimSandbox, type ForkOptions, type NodeService } from '../../node-contract/index.js';
import type { ControlStore } from '../../store/control-store.js';
import type { Reservation, TenantHoldings, TenantQuotas } from './tenant-quotas.js';
import { NO_USAGE, addUsage, newSandboxDemand, sandboxUsage } from './tenant-usage.js';

/** A template build's sandbox (see template-builder.ts): counted like any other while the build runs. */
const BUILD_DEMAND = newSandboxDemand({ memoryMb: 2048, cpus: 2 });
const ONE_SNAPSHOT: TenantUsage = { ...NO_USAGE, snapshots: 1 };

/** What a tenant holds on the node: its own sandboxes as listed, and their snapshots. */
export async function tenantHoldings(svc: NodeService, store: ControlStore, tenant: string): Promise<TenantHoldings> {
  const mine = await store.owned('sandbox', tenant);
  const sandboxes = (await svc.list()).filter((s) => mine.has(s.id));
  const counts = await Promise.all(
    sandboxes.map((s) =>
      svc.timeline(s.id).then(
        (t) => t.length,
        /* deleted meanwhile */
        () => 0,
      ),
    ),
  );
  return { sandboxes, snapshots: counts.reduce((a, b) => a + b, 0) };
}

/**
 * The NodeService with one tenant's limits in front of everything that
 * makes a sandbox run or a snapshot exist: create, fork (N forks count N; a
 * live fork also takes a snapshot), a template build's sandbox, and every
 * call that wakes a paused sandbox (resume, rewind, exec, processes, files,
 * streams, ports). Ownership is checked before (TenantView wraps this); the
 * node's own admission control (can the host take it) comes after.
 */
export function quotaGate(svc: NodeService, store: ControlStore, quotas: TenantQuotas, tenant: string): NodeService {
  const holdings = () => tenantHoldings(svc, store, tenant);
  const admit = (demand: TenantUsage) => quotas.admit(tenant, demand, holdings);
  const guarded = async <T>(r: Reservation, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } finally {
      // A release that fails leaves the reservation to expire (RESERVATION_TTL_MS): it can only refuse, never over-admit.
      await r.release().catch(() => {});
    }
  };
  const claiming = (r: Reservation, claim: ClaimSandbox | undefined): ClaimSandbox => async (id) => {
    await r.bind(id);
    return claim?.(id);
  };
  /** A call that may bring a paused (or lost) sandbox back to running: its CPU and memory count again. */
  const waking = async <T>(id: string, fn: () => Promise<T>): Promise<T> => {
    let s: SandboxInfo;
    try {
      s = await svc.get(id);
    } catch {
      return fn();
    }
    if (s.state === 'running' || s.state === 'creating') return fn();
    // Its disk is already counted (paused sandboxes keep it). Not bound: between
    // the node marking it running and the release it counts twice, which can only refuse, never over-admit.
    const u = sandboxUsage({ ...s, state: 'running' });
    return guarded(await admit({ ...u, diskMb: 0 }), fn);
  };
  const limitsOf = async (source: string): Promise<SandboxInfo['limits']> => (await svc.get(source.startsWith('snap-') ? (await svc.getSnapshot(source)).sandboxId : source)).limits;

  return {
    ...forwardTo(svc),
    async create(req: CreateSandboxRequest, claim?: ClaimSandbox) {
      // The node's defaults for what the request leaves out (the schema's).
      const l = Limits.parse({ memoryMb: req.memoryMb, cpus: req.cpus });
      const d = newSandboxDemand({ memoryMb: l.memoryMb, cpus: l.cpus, diskMb: req.diskMb ?? quotas.defaultDiskMb });
      const r = await admit(d);
      return guarded(r, () => svc.create(req, claiming(r, claim)));
    },
    async fork(source: string, count: number, claim?: ClaimSandbox, opts?: ForkOptions) {
      let l: SandboxInfo['limits'];
      try {
        l = await limitsOf(source);
      } catch {
        // No such source: the node answers for it (NOT_FOUND), and makes nothing.
        return svc.fork(source, count, claim, opts);
      }
      let d = addUsage(NO_USAGE, newSandboxDemand({ memoryMb: l.memoryMb, cpus: l.cpus, diskMb: l.diskMb }), Math.max(1, count));
      if (!source.startsWith('snap-')) d = addUsage(d, ONE_SNAPSHOT);
      const r = await admit(d);
      return guarded(r, () => svc.fork(source, count, claiming(r, claim), opts));
    },
    async snapshot(id, opts) {
      return guarded(await admit(ONE_SNAPSHOT), () => svc.snapshot(id, opts));
    },
    async buildTemplate(req: BuildTemplateRequest, progress, claim?: ClaimSandbox) {
      const r = await admit(BUILD_DEMAND);
      return guarded(r, () => svc.buildTemplate(req, progress, claiming(r, claim)));
    },
    resume: (id, opts) => waking(id, () => svc.resume(id, opts)),
    rewind: (id, snapId) => waking(id, () => svc.rewind(id, snapId)),
    spawn: (id, ...rest) => waking(id, () => svc.spawn(id, ...rest)),
    attach: (id, ...rest) => waking(id, () => svc.attach(id, ...rest)),
    listProcesses: (id) => waking(id, () => svc.listProcesses(id)),
    signal: (id, ...rest) => waking(id, () => svc.signal(id, ...rest)),
    writeStdin: (id, ...rest) => waking(id, () => svc.writeStdin(id, ...rest)),
    readFile: (id, ...rest) => waking(id, () => svc.readFile(id, ...rest)),
    writeFile: (id, ...rest) => waking(id, () => svc.writeFile(id, ...rest)),
    listDir: (id, ...rest) => waking(id, () => svc.listDir(id, ...rest)),
    stat: (id, ...rest) => waking(id, () => svc.stat(id, ...rest)),
    mkdir: (id, ...rest) => waking(id, () => svc.mkdir(id, ...rest)),
    move: (id, ...rest) => waking(id, () => svc.move(id, ...rest)),
    remove: (id, ...rest) => waking(id, () => svc.remove(id, ...rest)),
    watch: (id, ...rest) => waking(id, () => svc.watch(id, ...rest)),
    connectPort: (id, port) => waking(id, () => svc.connectPort(id, port)),
  };
}
