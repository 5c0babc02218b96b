import { randomBytes } from 'node:crypto';
import { ForkdError, type SandboxInfo } from '@forkd/protocol';
import { crashPoint } from '../../shared/crash-point.js';
import type { ManagerContext } from './manager-context.js';
import { resumeSandbox, revived } from './pause-resume.js';
import { toInfo } from './sandbox-info.js';

/**
 * Rewind in place to any snapshot of the sandbox's timeline. Non-destructive:
 * the state being left is snapshotted first, so one can rewind forward again.
 * A running sandbox is dumped and the target restored at the same time: the
 * target comes up as a new instance (own runtime key, root volume and
 * network namespace, so nothing collides with the frozen tree being dumped),
 * its agent awaited while the dump goes on, and one store write switches the
 * sandbox to it once both are done. A crash
 * before the switch leaves the old instance (thawed by recovery), after it
 * the new one; recovery removes the other. Under the sandbox's lock.
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
  const old = r.instance ?? r.id;
  const next = `${id}.${randomBytes(4).toString('hex')}`;
  const [left, target] = await Promise.allSettled([
    c.takeSnapshot(r, { reason: 'rewind', leaveRunning: false, deferStore: true }),
    c.instances.restoreInto(next, r, snap).then(() => c.instances.waitReady(next)),
  ]);
  // Nothing is lost by giving up: the old instance runs on, the state it left (if dumped) stays a snapshot.
  const giveUp = async (err: unknown): Promise<never> => {
    await c.store.setInstance(id, old);
    await c.instances.releaseKey(next).catch(() => {});
    await c.runtime.thaw(old).catch(() => {});
    throw err;
  };
  const failed = [left, target].find((x): x is PromiseRejectedResult => x.status === 'rejected');
  if (failed) return giveUp(failed.reason);
  crashPoint('rewind:restored');
  // Snapshots older than this instant (the state left included) are no longer its line (see Recovery.candidates).
  await c.store.setInstance(id, next, { at: new Date().toISOString(), snapshot: snapId });
  crashPoint('rewind:switched');
  c.markActive(id);
  c.logger.info('sandbox rewound', { sandbox: id, snapshot: snapId, instance: next });
  const done = c.instances.releaseKey(old).catch((err) => c.logger.warn('release of the instance left failed', { sandbox: id, instance: old, error: String(err) }));
  c.background.add(done);
  void done.finally(() => c.background.delete(done));
  return toInfo(await c.record(id));
}
