import type { Logger } from '../../shared/logger.js';
import type { SandboxRecord, Store } from '../../store/store.js';
import type { Runtime } from '../runtime/runtime.js';
import { poolLayout } from '../storage/pool-layout.js';
import type { Storage } from '../storage/storage.js';
import type { SnapshotFiles } from '../storage/snapshot-files.js';
import type { TemplateRegistry } from '../templates/template-registry.js';
import { finishFrozenDrafts } from './deferred-dump.js';
import { eachBounded } from './each-bounded.js';
import type { GuestTransport } from '../runtime/guest-transport.js';
import { LOST_AT_START, type Recovery } from './recovery.js';
import type { SandboxDisk } from './sandbox-disk.js';
import type { SandboxInstances } from './sandbox-instances.js';
import { RECOVERY_CONCURRENCY } from './sandbox-timeout.js';

/** What the start-up check needs of the node. */
export interface StartUpContext {
  store: Store;
  storage: Storage;
  runtime: Runtime;
  templates: TemplateRegistry;
  files: SnapshotFiles;
  guests: GuestTransport;
  instances: SandboxInstances;
  space: SandboxDisk;
  recovery: Recovery;
  logger: Logger;
  /** Ids the warm pool holds (no record: not orphans). */
  pooled(): ReadonlySet<string>;
  /** Per-sandbox timeout of the checks and recoveries (see sandboxTimeoutMs). */
  timeoutMs: number;
  /** Bring lost sandboxes back (default true). */
  recoverOnStart: boolean;
  /** Runs a recovery under the sandbox's lock. */
  exclusive<T>(id: string, fn: () => Promise<T>): Promise<T>;
}

/**
 * Reconciles the store with reality after a (possibly unclean) restart:
 * takes the dumps rewinds left to do, finishes interrupted creates and deletes, marks sandboxes whose processes
 * are gone as lost, removes runtime state, volumes, snapshot directories
 * and staging directories nobody owns, and then (unless turned off) brings
 * the lost sandboxes back (see Recovery).
 */
export async function checkAtStartUp(c: StartUpContext): Promise<void> {
  await c.templates.sweep();
  // Before the sweep would take their instances: rewinds that answered before the state they left was dumped.
  await finishFrozenDrafts(c);
  const known = new Set<string>();
  const lost: SandboxRecord[] = [];
  const records = await c.store.listSandboxes();
  for (const r of records) known.add(r.instance ?? r.id);
  // A few at a time, each within a timeout: an agent that does not answer costs one guest deadline, and delays no other sandbox.
  await eachBounded(
    records,
    {
      concurrency: RECOVERY_CONCURRENCY,
      timeoutMs: c.timeoutMs,
      onTimeout: (r) => c.logger.warn('start-up check of a sandbox overran its timeout; going on without it', { sandbox: r.id }),
      onError: (r, err) => c.logger.warn('start-up check of a sandbox failed', { sandbox: r.id, error: String(err) }),
    },
    (r) => checkOne(c, r, lost),
  );
  await sweep(c, known, lost);
}

/** One sandbox: finishes an interrupted create or delete, or finds it lost. */
async function checkOne(c: StartUpContext, r: SandboxRecord, lost: SandboxRecord[]): Promise<void> {
  const key = r.instance ?? r.id;
  if (r.state === 'creating' || r.state === 'stopping') {
    await c.instances.release(r.id).catch((err) => c.logger.warn('cleanup failed', { sandbox: r.id, error: String(err) }));
    await c.store.deleteSandbox(r.id);
    return;
  }
  if (r.state === 'paused') {
    // Crashed between recording the pause and stopping the frozen processes.
    if ((await c.runtime.state(key)).status !== 'missing') await c.runtime.destroy(key).catch(() => {});
    return;
  }
  if (r.state === 'running') {
    let st = await c.runtime.state(key);
    // Crashed mid-snapshot (or mid-rewind, before the switch): the sandbox is still frozen.
    if (st.status === 'paused') {
      await c.runtime.thaw(key).catch(() => {});
      st = await c.runtime.state(key);
    }
    let ok = st.status === 'running';
    if (ok) ok = await c.guests.at(key).info().then(() => true, () => false);
    // A root from before quotas, or left with its start headroom by a crash, gets its exact limit.
    if (ok) await c.space.apply(c.instances.rootfsOf(key), await c.instances.templateRoot(r), r.limits.diskMb).catch((err: unknown) => c.logger.warn('disk quota not applied', { sandbox: r.id, error: String(err) }));
    // Its namespace's holder lost (killed): the sandbox's own processes still have it.
    if (ok && st.pid > 0) await c.instances.reholdNetwork(key, st.pid, r.network).then((again) => again && c.logger.warn('network namespace held again', { sandbox: r.id }), (err: unknown) => c.logger.warn('network namespace not held again', { sandbox: r.id, error: String(err) }));
    // Its network as recorded, again: the kernel keeps it across a daemon restart, but forkd's table may have
    // been removed meanwhile (a host firewall reload), and a crash mid-change leaves the record ahead.
    if (ok && r.network) await c.instances.setNetwork(key, r.network).catch((err: unknown) => c.logger.warn('network rules not applied', { sandbox: r.id, error: String(err) }));
    if (!ok) {
      await c.recovery.markLost(r, st.status === 'running' ? 'its agent did not answer when the daemon started' : LOST_AT_START);
      lost.push(r);
    }
  }
  // Lost earlier and not brought back (recovery off, or it failed): its runc state is cleaned below.
  else if (c.recovery.isLost(r)) lost.push(r);
}

/** The second half: what no record owns goes, then lost sandboxes come back. */
async function sweep(c: StartUpContext, known: Set<string>, lost: SandboxRecord[]): Promise<void> {
  const pooled = c.pooled();
  for (const id of await c.runtime.list()) {
    if (!known.has(id) && !pooled.has(id)) await c.runtime.destroy(id).catch(() => {});
  }
  for (const key of await c.storage.list(poolLayout.sandboxes)) {
    const id = key.split('/')[1] ?? '';
    if (!known.has(id) && !pooled.has(id)) await c.storage.remove(key).catch(() => {});
  }
  // Instances a crashed rewind left (the target not yet switched to, or the state left) went above.
  await c.files.recoverAtStart(
    (name) => c.store.getSnapshot(name),
    (snapId) => c.store.deleteSnapshot(snapId),
  );
  // The dead processes' runc state, cgroup and namespace; their root volumes stay.
  for (const r of lost) await c.runtime.destroy(await c.instances.key(r.id)).catch((err) => c.logger.warn('cleanup failed', { sandbox: r.id, error: String(err) }));
  if (!c.recoverOnStart) return;
  // Before the API listens, a few at a time (a host that ran them all before can run them again, not restore
  // them all at once), each within a timeout: one that overruns goes on under its lock, so calls on it wait
  // for it while the daemon starts.
  await eachBounded(
    lost,
    {
      concurrency: RECOVERY_CONCURRENCY,
      timeoutMs: c.timeoutMs,
      onTimeout: (r) => c.logger.warn('recovery of a sandbox overran its timeout; the daemon starts without waiting for it', { sandbox: r.id }),
      onError: () => {},
    },
    (r) => c.exclusive(r.id, () => c.recovery.revive(r, { trigger: 'start' })),
  );
}
