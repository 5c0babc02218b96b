import { ForkdError, LOOPBACK_ONLY, type SandboxInfo } from '@forkd/protocol';
import { crashPoint } from '../../shared/crash-point.js';
import type { PauseOptions, ResumeOptions } from '../../node-contract/node-types.js';
import type { SandboxRecord, SnapshotRecord } from '../../store/store.js';
import { commitOf } from './admission.js';
import type { HotPause } from './hot-pauses.js';
import type { ManagerContext } from './manager-context.js';
import { freshLifetime, toInfo } from './sandbox-info.js';

/**
 * Pause: snapshot, then stop. The sandbox uses no CPU until resumed, and no
 * memory once its frozen tree goes: at once for a hibernation (`hot` false),
 * after the hot window for a pause asked for (see hot-pauses.ts). With
 * `memory: false` there is no snapshot: the processes are stopped and the
 * instance's own root volume is what is kept (a paused record without
 * `resumeFrom`), so the resume starts it cold. Under the sandbox's lock.
 */
export async function pauseSandbox(c: ManagerContext, id: string, opts: PauseOptions = {}, hot = false): Promise<SandboxInfo> {
  const r = await c.record(id);
  if (r.state === 'paused') return toInfo(r);
  if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
  if (opts.memory === false) return pauseFilesOnly(c, r);
  const snap = await c.takeSnapshot(r, { reason: 'pause', leaveRunning: false });
  await c.store.setResumeFrom(id, snap.id);
  await c.transition(r, 'paused');
  crashPoint('pause:recorded');
  // Only now that the snapshot is recorded do the (frozen) processes go, or are kept as its cache.
  const key = r.instance ?? r.id;
  c.instances.frozenAt(key, snap.id);
  if (!hot || !c.hot.keep(id, key, snap.id, r.network)) await c.runtime.destroy(key);
  return toInfo(await c.record(id));
}

/**
 * A filesystem-only pause. The record says paused (without a snapshot to
 * resume from) before anything is stopped: a crash after that leaves a
 * paused sandbox whose leftover processes the start-up check removes; one
 * before leaves it running. The root volume, its quota and its id range stay.
 */
async function pauseFilesOnly(c: ManagerContext, r: SandboxRecord): Promise<SandboxInfo> {
  await c.store.setResumeFrom(r.id, undefined);
  await c.transition(r, 'paused');
  crashPoint('pause:recorded');
  await c.instances.dropProcesses(r.instance ?? r.id);
  return toInfo(await c.record(r.id));
}

/** Resume from the paused state (or bring back a lost sandbox). Under the sandbox's lock. */
export async function resumeSandbox(c: ManagerContext, id: string, opts: ResumeOptions = {}): Promise<SandboxInfo> {
  const r = await c.record(id);
  if (r.state === 'running') return toInfo(r);
  if (c.recovery.isLost(r)) return revived(c, r, { trigger: 'resume' });
  if (r.state !== 'paused') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
  const frozen = await c.hot.take(id);
  if (frozen && frozen.snapshot === r.resumeFrom && opts.memory !== false && (await thawed(c, r, frozen))) return resumed(c, r, r.resumeFrom);
  // Not the state asked for (a rewind of a paused sandbox, a cold resume), or it did not thaw: the snapshot is.
  if (frozen) await c.instances.dropProcesses(frozen.key);
  if (!r.resumeFrom || opts.memory === false) return resumeCold(c, r);
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
  return resumed(c, r, r.resumeFrom);
}

/**
 * A hot pause's frozen tree thawed: it is the pause snapshot's state, its
 * root volume untouched since (frozen processes write nothing, and every
 * call on a paused sandbox resumes it first), its network rules those
 * recorded now. False when it did not come back (killed behind forkd's
 * back): the caller restores from the snapshot.
 */
async function thawed(c: ManagerContext, r: SandboxRecord, frozen: HotPause): Promise<boolean> {
  const key = frozen.key;
  const ticket = await c.admission.admit({ memory: commitOf(r.limits), ids: [r.id] });
  try {
    // Its rules as recorded now: a change while it was paused is applied, as a restore applies it.
    if (JSON.stringify(r.network) !== JSON.stringify(frozen.network)) await c.instances.setNetwork(key, r.network ?? LOOPBACK_ONLY);
    c.instances.thawing(key);
    await c.runtime.thaw(key);
    await c.instances.waitAlive(key);
    await c.transition(r, 'running');
    return true;
  } catch (err) {
    if (err instanceof ForkdError && err.code === 'CONFLICT') throw err;
    c.logger.warn('hot pause did not thaw; restoring from its snapshot', { sandbox: r.id, error: String(err) });
    return false;
  } finally {
    ticket.release();
  }
}

/**
 * A cold resume: a fresh init and agent on the instance's own root volume
 * (its files as the pause left them; for a pause that kept memory, the same
 * files its snapshot holds, since the frozen processes wrote nothing after
 * it). Same id, limits, env and id range; no process of before. The record
 * says paused until the agent answers: a crash in between leaves it paused
 * (the start-up check removes the half-started container) and it can be
 * resumed again.
 */
async function resumeCold(c: ManagerContext, r: SandboxRecord): Promise<SandboxInfo> {
  const key = r.instance ?? r.id;
  const ticket = await c.admission.admit({ memory: commitOf(r.limits), ids: [r.id] });
  try {
    // Leftovers of an interrupted pause or resume (none normally).
    await c.instances.dropProcesses(key);
    await c.instances.startCold(key, r);
    await c.instances.waitReady(key);
    await c.transition(r, 'running');
  } finally {
    ticket.release();
  }
  return resumed(c, r, undefined);
}

/** After a resume: where its state began, the pause's snapshot unpinned, a fresh lifetime if the old one ran out. */
async function resumed(c: ManagerContext, r: SandboxRecord, snapshot: string | undefined): Promise<SandboxInfo> {
  const id = r.id;
  await c.store.setOrigin(id, { at: new Date().toISOString(), ...(snapshot ? { snapshot } : {}) });
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
