import { randomBytes } from 'node:crypto';
import { ForkdError, type SandboxInfo } from '@forkd/protocol';
import type { SandboxRecord, SnapshotRecord } from '../../store/store.js';
import { crashPoint } from '../../shared/crash-point.js';
import type { ManagerContext } from './manager-context.js';
import { freezeToKeep, type FrozenState } from './deferred-dump.js';
import { resumeSandbox, revived } from './pause-resume.js';
import { toInfo } from './sandbox-info.js';

/**
 * Rewind in place to any snapshot of the sandbox's timeline. Non-destructive:
 * the state being left is kept as a snapshot, so one can rewind forward
 * again. A running sandbox's tree is frozen (that instant is the state
 * left) while the target is restored beside it as a new instance (own
 * runtime key, root volume and network namespace, so nothing collides with
 * the frozen tree) and its agent awaited; then the state left is recorded,
 * one store write switches the sandbox to the target, and it answers. The
 * frozen tree is dumped after that (see freezeToKeep: readers of that
 * snapshot wait for it, and a restart takes the dump if the daemon dies
 * first). A crash before the switch leaves the
 * old instance (thawed by recovery), after it the new one; recovery removes
 * the other once its dump is taken. Under the sandbox's lock.
 */
export async function rewindSandbox(c: ManagerContext, id: string, snapId: string): Promise<SandboxInfo> {
  let r = await c.record(id);
  const snap = await c.snapshotRecord(snapId);
  if (snap.sandboxId !== id) throw new ForkdError('INVALID_ARGUMENT', `snapshot ${snapId} is not in the timeline of ${id}`);
  // Nothing runs to snapshot: the target is restored in place of the processes lost.
  if (c.recovery.isLost(r)) return revived(c, r, { trigger: 'rewind', snapshot: snap });
  // A filesystem-only pause: its files are the state left, and no snapshot holds them. Started
  // cold first, it is rewound like a running sandbox, whose state left is snapshotted: nothing is lost.
  if (r.state === 'paused' && !r.resumeFrom) {
    await resumeSandbox(c, id);
    r = await c.record(id);
  }
  if (r.state === 'paused') {
    await c.store.setResumeFrom(id, snapId);
    crashPoint('rewind:recorded');
    return resumeSandbox(c, id);
  }
  if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
  return rewindRunning(c, r, snap);
}

/** A running sandbox: the state left frozen and kept, the target restored beside it, then the switch. */
async function rewindRunning(c: ManagerContext, r: SandboxRecord, snap: SnapshotRecord): Promise<SandboxInfo> {
  const id = r.id;
  // Rewinds asked for faster than their dumps finish would stack frozen trees: one dump at a time per sandbox.
  await c.background.get(id);
  const old = r.instance ?? r.id;
  const next = `${id}.${randomBytes(4).toString('hex')}`;
  const [left, target] = await Promise.allSettled([
    freezeToKeep({ ...c, reattach: c.locks.reattach }, r, old),
    c.instances.restoreInto(next, r, snap).then(() => c.instances.waitReady(next)),
  ]);
  // Nothing is lost by giving up: the old instance runs on as it was.
  const giveUp = async (err: unknown): Promise<never> => {
    if (left.status === 'fulfilled') await left.value.abandon();
    await c.store.setInstance(id, old);
    await c.instances.releaseKey(next).catch(() => {});
    await c.runtime.thaw(old).catch(() => {});
    throw err;
  };
  const failed = [left, target].find((x): x is PromiseRejectedResult => x.status === 'rejected');
  if (failed) return giveUp(failed.reason);
  const frozen = (left as PromiseFulfilledResult<FrozenState>).value;
  try {
    await frozen.commit();
    crashPoint('rewind:restored');
    // Snapshots older than this instant (the state left included) are no longer its line (see Recovery.candidates).
    await c.store.setInstance(id, next, { at: new Date().toISOString(), snapshot: snap.id });
  } catch (err) {
    return giveUp(err);
  }
  crashPoint('rewind:switched');
  c.markActive(id);
  c.logger.info('sandbox rewound', { sandbox: id, snapshot: snap.id, instance: next });
  dumpLeftLater(c, id, old, frozen);
  return toInfo(await c.record(id));
}

/**
 * After the answer, not under the lock (a delete asked for meanwhile waits
 * for it, under it): what reads or removes the state left waits for its
 * dump in SnapshotFiles, and the tree dumped is no longer the sandbox's.
 * Then the instance left is released.
 */
function dumpLeftLater(c: ManagerContext, id: string, old: string, frozen: FrozenState): void {
  // The tenant learns of a state left that could not be kept (the reason is the node's, in its log).
  const lost = (snapId: string) => c.onEvent?.({ at: new Date().toISOString(), sandboxId: id, operation: 'snapshot-lost', detail: `the state left by the rewind (snapshot ${snapId}) could not be dumped and is not kept`, code: 'INTERNAL', durationMs: 0 });
  const done = frozen
    .finish(lost)
    .then(() => c.instances.releaseKey(old))
    .catch((err) => c.logger.warn('release of the instance left failed', { sandbox: id, instance: old, error: String(err) }));
  c.background.set(id, done);
  void done.finally(() => {
    if (c.background.get(id) === done) c.background.delete(id);
  });
}
