import { ForkdError, Limits, MAX_FORK_COUNT, newSandboxId, type SandboxInfo } from '@forkd/protocol';
import type { ClaimSandbox, ForkOptions } from '../../node-contract/node-types.js';
import { crashPoint } from '../../shared/crash-point.js';
import type { SandboxRecord, SnapshotRecord } from '../../store/store.js';
import { commitOf } from './admission.js';
import type { ManagerContext } from './manager-context.js';
import { freshLifetime, toInfo } from './sandbox-info.js';

/**
 * Fork: new sandboxes from a snapshot, or from a running sandbox (an
 * implicit snapshot; the parent keeps running). Each gets its own id, root
 * volume, cgroup and network namespace and diverges independently. Its
 * env and metadata are the parent's, unless `opts` gives others (see
 * ForkOptions: the env is what processes started in the fork get).
 */
export async function forkSandboxes(c: ManagerContext, source: string, count: number, claim?: ClaimSandbox, opts: ForkOptions = {}): Promise<SandboxInfo[]> {
  if (!Number.isInteger(count) || count < 1 || count > MAX_FORK_COUNT) throw new ForkdError('INVALID_ARGUMENT', `count must be between 1 and ${MAX_FORK_COUNT}`);
  const fromSnapshot = source.startsWith('snap-');
  // The owner's lock is held until every fork has its root volume and its
  // restore has read the images (a lazy restore's page server keeps them
  // open), so a delete of the snapshot or of its sandbox waits for that.
  // Its place in line is taken in the caller's turn, before the owner of a
  // snapshot is looked up (see SandboxLocks.exclusiveOf): a delete asked for
  // after the fork waits for it.
  const owner = fromSnapshot ? c.snapshotRecord(source).then((s) => s.sandboxId) : Promise.resolve(source);
  const forks = await c.locks.exclusiveOf(owner, async (ownerId) => {
    // Early, so a refused live fork takes no snapshot; held below, where the forks are recorded.
    await c.admission.check(commitOf((await c.store.getSandbox(ownerId))?.limits ?? Limits.parse({}), count));
    const space = c.space.checkFree(count > 1 ? `fork ${count} sandboxes` : 'fork a sandbox');
    let snap: SnapshotRecord;
    if (fromSnapshot) snap = await c.snapshotRecord(source);
    else {
      const r = await c.record(source);
      if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${source} is ${r.state}; fork one of its snapshots instead`);
      snap = await c.takeSnapshot(r, { reason: 'fork', leaveRunning: true });
    }
    const parent = await c.store.getSandbox(snap.sandboxId);
    const ids = Array.from({ length: count }, () => newSandboxId());
    // Held until every fork is recorded (see AdmissionGate).
    const ticket = await c.admission.admit({
      memory: commitOf(parent?.limits ?? Limits.parse({}), count),
      disk: { mb: c.space.diskMbOf(parent?.limits ?? {}) * count, space },
      ids,
    });
    const started: Array<{ done: Promise<SandboxInfo>; imagesRead: Promise<void> }> = [];
    try {
      for (const id of ids) {
        const rec: SandboxRecord = {
          id,
          template: parent?.template ?? 'base',
          templateId: parent?.templateId ?? 'base',
          state: 'creating',
          limits: parent?.limits ?? Limits.parse({}),
          env: { ...parent?.env, ...opts.env },
          metadata: opts.metadata ?? parent?.metadata ?? {},
          createdAt: new Date().toISOString(),
          forkedFrom: snap.id,
          policy: freshLifetime(parent?.policy),
          // Its parent's network rules, as they are now.
          ...(parent?.network ? { network: parent.network } : {}),
          // An imported parent's root descends from a received template: so does the fork's.
          ...(parent?.base ? { base: parent.base } : {}),
          ...(parent?.defaults ? { defaults: parent.defaults } : {}),
        };
        await claim?.(rec.id);
        await c.store.insertSandbox(rec);
        let restored!: () => void;
        const imagesRead = new Promise<void>((resolve) => (restored = resolve));
        // Each fork holds its own lock until it runs: a delete of a listed `creating` fork waits.
        const done = c.locks.exclusive(rec.id, async () => {
          try {
            await c.instances.restoreInto(rec.id, rec, snap).finally(restored);
            await c.instances.waitReady(rec.id);
            crashPoint('fork:restored');
            await c.transition(rec, 'running');
            c.markActive(rec.id);
            return toInfo(rec);
          } catch (err) {
            await c.abandon(rec.id);
            throw err;
          }
        });
        // Awaited below, after the owner's lock: meanwhile a failure must not count as unhandled.
        done.catch(() => {});
        started.push({ done, imagesRead });
      }
    } catch (err) {
      // A claim refused part-way: the forks already recorded go with the rest (all or nothing).
      for (const f of started) await f.done.then((info) => c.delete(info.id)).catch(() => {});
      throw err;
    } finally {
      ticket.release();
    }
    await Promise.all(started.map((f) => f.imagesRead));
    return started;
  });
  // All or nothing: a caller told of a failure has no ids to clean up after, so no fork is left running.
  const results = await Promise.allSettled(forks.map((f) => f.done));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (!failed) return results.map((r) => (r as PromiseFulfilledResult<SandboxInfo>).value);
  for (const r of results) if (r.status === 'fulfilled') await c.delete(r.value.id).catch((err) => c.logger.warn('fork cleanup failed', { sandbox: r.value.id, error: String(err) }));
  throw failed.reason;
}
