import { isStageName } from '../templates/template-registry.js';
import { canTransition, ForkdError, Limits, newSandboxId } from '@forkd/protocol';
import type { GuestClient } from '../guest/guest-client.js';
import { GUEST_DEADLINE_MS } from '../guest/guest-connection.js';
import { poolLayout } from '../storage/pool-layout.js';
import { PoolSnapshotFiles } from '../storage/snapshot-files.js';
import { NodeAdmission } from './admission.js';
import { AdmissionGate } from './admission-gate.js';
import { readHostCapacity } from './host-capacity.js';
import { HotPauses } from './hot-pauses.js';
import type { ManagerContext } from './manager-context.js';
import type { ManagerDeps } from './manager-deps.js';
import { Recovery } from './recovery.js';
import { SandboxDisk } from './sandbox-disk.js';
import { SandboxInstances } from './sandbox-instances.js';
import { SandboxLocks } from './sandbox-locks.js';
import { sandboxMaxima, type SandboxMaxima } from './sandbox-maxima.js';
import { SandboxStreams } from './sandbox-streams.js';
import { takeSnapshot } from './take-snapshot.js';
import { WarmPool } from './warm-pool.js';

/** What the parts call back into: the manager's public methods. */
export interface ManagerFacade {
  guest(id: string): Promise<GuestClient>;
  delete(id: string): Promise<void>;
  markActive(id: string): void;
}

export interface ManagerParts {
  ctx: ManagerContext;
  maxima: SandboxMaxima;
  streams: SandboxStreams;
  /** Disk use per sandbox, measured at most every 30 s (see SandboxManager.metrics); a released sandbox's goes. */
  diskUse: Map<string, { at: number; value: { totalBytes: number; exclusiveBytes: number } }>;
  guestDeadlineMs: number;
}

/** Builds the manager's parts from its deps (defaults for what they leave out) and wires them to each other. */
export function assembleManager(deps: ManagerDeps, m: ManagerFacade): ManagerParts {
  const { store } = deps;
  const guestDeadlineMs = deps.guestDeadlineMs ?? GUEST_DEADLINE_MS;
  const space = new SandboxDisk(deps.disk ?? { defaultDiskMb: 10240, free: { minFreeMb: 0, minFreePct: 0 }, overcommit: 0 }, deps.logger);
  const host = deps.admission?.host ?? readHostCapacity();
  const maxima = sandboxMaxima(host, deps.admission?.maxima);
  const summaries = deps.summaries ?? (() => store.listSandboxes());
  const locks = new SandboxLocks();
  // The runtime says how its guest is reached; Storage says where each instance's root is.
  const guests = deps.guests ?? deps.runtime.guests({ root: (key) => deps.storage.root(poolLayout.sandbox(key), deps.runtime.rootKind), guestBinary: deps.guestBinary, deadlineMs: guestDeadlineMs });
  const files = deps.snapshotFiles ?? new PoolSnapshotFiles({ storage: deps.storage, stagingDir: deps.stagingDir, images: deps.runtime.images, logger: deps.logger, onStored: (id, bytes) => store.setSnapshotSize(id, bytes) });
  const instances = new SandboxInstances({ ...deps, summaries, guests, files, space, userns: !!deps.userns, keepPausedRoot: deps.keepPausedRoot ?? true });
  const hot = new HotPauses(deps.hotPauseMs ?? 0, (key) => instances.dropProcesses(key), deps.logger);
  // A hot pause's frozen tree keeps its memory: counted as running until dropped, and dropped first when room runs out.
  const admissionRecords = async () => {
    const held = hot.ids();
    const records = await summaries();
    return held.size === 0 ? records : records.map((r) => (held.has(r.id) ? { ...r, state: 'running' as const } : r));
  };
  const admission = new AdmissionGate(admissionRecords, new NodeAdmission(host, deps.admission?.overcommit ?? { memory: 4, cpus: 0 }), space, () => hot.reclaim('admission needed its memory'));
  const diskUse: ManagerParts['diskUse'] = new Map();

  const record: ManagerContext['record'] = async (id) => {
    const r = await store.getSandbox(id);
    if (!r) throw new ForkdError('NOT_FOUND', `sandbox ${id} not found`);
    return r;
  };
  const transition: ManagerContext['transition'] = async (r, to, error) => {
    if (!canTransition(r.state, to)) throw new ForkdError('CONFLICT', `sandbox ${r.id} is ${r.state}, cannot become ${to}`);
    if (!(await store.transition(r.id, r.state, to, error))) throw new ForkdError('CONFLICT', `sandbox ${r.id} changed state concurrently`);
    r.state = to;
    r.error = error;
  };
  const release = async (id: string) => {
    diskUse.delete(id);
    await hot.forget(id);
    await instances.release(id);
  };
  const recovery = new Recovery({
    ...deps,
    key: (id) => instances.key(id),
    dropProcesses: (key) => instances.dropProcesses(key),
    restorable: (snapId) => files.restorable(snapId),
    restoreInto: (key, r, snap) => instances.restoreInto(key, r, snap),
    startCold: (key, r) => instances.startCold(key, r),
    waitReady: (key) => instances.waitReady(key),
    transition,
  });
  const pool = new WarmPool(
    {
      start: async (template) => {
        const id = newSandboxId();
        const t = await deps.templates.get(template);
        if (!t) throw new ForkdError('NOT_FOUND', `template ${template} not found`);
        instances.pooledIdmap.set(id, await instances.start(id, template, Limits.parse({})));
        return { id, templateId: t.id };
      },
      destroy: (id) => {
        instances.pooledIdmap.delete(id);
        return release(id);
      },
      keeps: (template) => !isStageName(template),
      logger: deps.logger,
    },
    { size: deps.warmPoolSize ?? 0, always: ['base'], recent: deps.warmPoolTemplates ?? 0 },
  );
  const ctx: ManagerContext = {
    ...deps,
    locks,
    admission,
    space,
    instances,
    files,
    guests,
    recovery,
    pool,
    hot,
    background: new Map(),
    record,
    snapshotRecord: async (snapId) => {
      const s = await store.getSnapshot(snapId);
      if (!s) throw new ForkdError('NOT_FOUND', `snapshot ${snapId} not found`);
      return s;
    },
    transition,
    takeSnapshot: (r, opts) => takeSnapshot({ ...deps, files, guests, instances, space, reattach: locks.reattach }, r, opts),
    markActive: (id) => m.markActive(id),
    release,
    abandon: async (id) => {
      await release(id).catch(() => {});
      await store.deleteSandbox(id);
    },
    delete: (id) => m.delete(id),
  };
  const streams = new SandboxStreams({ ...deps, guests, reattach: locks.reattach, guest: (id) => m.guest(id), key: (id) => instances.key(id), record });
  return { ctx, maxima, streams, diskUse, guestDeadlineMs };
}
