import { ForkdError, type SandboxInfo } from '@forkd/protocol';
import { crashPoint } from '../../shared/crash-point.js';
import type { SandboxRecord, SnapshotRecord } from '../../store/store.js';
import { commitOf } from './admission.js';
import type { ManagerContext } from './manager-context.js';
import { freshLifetime, toInfo } from './sandbox-info.js';

/** Pause: snapshot, then stop. The sandbox uses no CPU or memory until resumed. Under the sandbox's lock. */
export async function pauseSandbox(c: ManagerContext, id: string): Promise<SandboxInfo> {
  const r = await c.record(id);
  if (r.state === 'paused') return toInfo(r);
  if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
  const snap = await c.takeSnapshot(r, { reason: 'pause', leaveRunning: false });
  await c.store.setResumeFrom(id, snap.id);
  await c.transition(r, 'paused');
  crashPoint('pause:recorded');
  // Only now that the snapshot is recorded do the (frozen) processes go.
  await c.runtime.destroy(r.instance ?? r.id);
  return toInfo(await c.record(id));
}

/** Resume from the paused state (or bring back a lost sandbox). Under the sandbox's lock. */
export async function resumeSandbox(c: ManagerContext, id: string): Promise<SandboxInfo> {
  const r = await c.record(id);
  if (r.state === 'running') return toInfo(r);
  if (c.recovery.isLost(r)) return revived(c, r, { trigger: 'resume' });
  if (r.state !== 'paused' || !r.resumeFrom) throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
  const key = r.instance ?? r.id;
  // Held while the restore runs (the record says paused until it is done), so two resumes cannot both take the last room.
  const ticket = await c.admission.admit({ memory: commitOf(r.limits), ids: [id] });
  try {
    await c.instances.restoreInto(key, r, await c.snapshotRecord(r.resumeFrom));
    await c.instances.waitReady(key);
    await c.transition(r, 'running');
  } finally {
    ticket.release();
  }
  await c.store.setOrigin(id, { at: new Date().toISOString(), snapshot: r.resumeFrom });
  await c.store.setResumeFrom(id, undefined);
  // A lifetime that ran out starts anew; a hibernated sandbox keeps the one it had.
  if (r.policy?.timeoutSeconds && !r.policy.expiresAt) await c.store.setPolicy(id, freshLifetime(r.policy));
  c.markActive(id);
  return toInfo(await c.record(id));
}

/** A lost sandbox brought back by resume or rewind (see Recovery.revive). */
export async function revived(c: ManagerContext, r: SandboxRecord, opts: { trigger: 'resume' | 'rewind'; snapshot?: SnapshotRecord }): Promise<SandboxInfo> {
  await c.recovery.revive(r, opts);
  c.markActive(r.id);
  return toInfo(await c.record(r.id));
}
