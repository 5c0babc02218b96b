import { ForkdError, type SandboxInfo, type SnapshotInfo } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type { Logger } from '../shared/logger.js';
import type { FleetService } from './fleet-service.js';
import { newestFirst } from './newest-first.js';

const MB = 1024 * 1024;

export interface Migration {
  sandbox: SandboxInfo;
  from: string;
  to: string;
  /** Bytes the export put into the blob store (what the store held already is not counted). */
  bytesUploaded: number;
  ms: number;
}

/** A sandbox's snapshots, newest first: after a pause, the first is the one its resume restores. */
async function snapshotsNewestFirst(svc: NodeService, id: string) {
  const tl = newestFirst(await svc.timeline(id));
  if (!tl[0]) throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} has no snapshot to move`);
  return tl as [SnapshotInfo, ...SnapshotInfo[]];
}

/**
 * Snapshots of a sandbox's timeline follow it from `a` to `b` (node `to`),
 * as ordinary snapshots there; each export is incremental (mostly chunks
 * the store holds). One that fails is logged and named in `failed`, not
 * fatal: the others still go.
 */
export async function moveTimeline(fleet: FleetService, a: NodeService, b: NodeService, to: string, snaps: SnapshotInfo[], logger: Logger | undefined): Promise<{ bytes: number; failed: string[] }> {
  let bytes = 0;
  const failed: string[] = [];
  for (const snap of snaps) {
    try {
      const exp = await a.exportSnapshot(snap.id);
      bytes += exp.bytesUploaded;
      await b.importSnapshot(exp.manifest);
      await fleet.store.place('snapshot', snap.id, to);
    } catch (err) {
      failed.push(snap.id);
      logger?.warn('a timeline snapshot did not follow its sandbox', { snapshot: snap.id, to, error: String(err) });
    }
  }
  return { bytes, failed };
}

/**
 * Before the pause: the newest snapshot the sandbox has goes to the target
 * while it still runs, so the paused snapshot's export and import after the
 * pause mostly compare with it and copy from it there (images-reference.ts)
 * instead of hashing and fetching every page. Undefined when there is none
 * or the copy failed (the move goes on without it).
 */
async function preCopy(a: NodeService, b: NodeService, id: string, logger: Logger | undefined): Promise<{ snap: SnapshotInfo; bytesUploaded: number } | undefined> {
  const [newest] = newestFirst(await a.timeline(id));
  if (!newest) return undefined;
  try {
    const exp = await a.exportSnapshot(newest.id);
    await b.importSnapshot(exp.manifest);
    return { snap: newest, bytesUploaded: exp.bytesUploaded };
  } catch (err) {
    logger?.warn('a snapshot was not copied ahead of a move', { sandbox: id, snapshot: newest.id, error: String(err) });
    return undefined;
  }
}

/**
 * Moves a sandbox to another node under the same id: its newest snapshot
 * copied ahead while it runs (preCopy) → pause (memory kept) → export of
 * that snapshot to the blob store → import on the target as the paused
 * sandbox → resume there (when it was running) → delete on the source.
 * Until the target has it running, the source's copy is the sandbox: a
 * failure after the export removes the target's copies, places the sandbox
 * back and resumes it where it was. The older snapshots of its timeline
 * follow once it runs on the target (the source's copies go with the
 * source's sandbox).
 */
export async function migrateSandbox(fleet: FleetService, id: string, opts: { to?: string | undefined; logger?: Logger | undefined } = {}): Promise<Migration> {
  const t0 = performance.now();
  const { node: from, svc: a } = await fleet.locate('sandbox', id);
  const before = await a.get(id);
  if (before.state !== 'running' && before.state !== 'paused') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${before.state}: only running or paused sandboxes move`);
  if (opts.to === from) throw new ForkdError('INVALID_ARGUMENT', `sandbox ${id} is on ${from} already`);
  const target = opts.to
    ? { node: opts.to, svc: await fleet.directory.client(opts.to) }
    : await fleet.choose({ memoryBytes: before.limits.memoryMb * MB, template: before.template, avoid: new Set([from]) });
  const b = target.svc;
  const wasRunning = before.state === 'running';
  const copied = wasRunning ? await preCopy(a, b, id, opts.logger) : undefined;
  const ahead = copied?.snap;
  const dropAhead = async () => {
    if (ahead) await b.deleteSnapshot(ahead.id).catch(() => {});
  };
  let snap, older, exported;
  try {
    if (wasRunning) await a.pause(id);
    [snap, ...older] = await snapshotsNewestFirst(a, id);
    exported = await a.exportSnapshot(snap.id);
  } catch (err) {
    await dropAhead();
    if (wasRunning) await a.resume(id).catch(() => {});
    throw err;
  }
  await fleet.store.recordExport({ snapshotId: snap.id, sandboxId: id, manifest: exported.manifest, node: from, exportedAt: new Date().toISOString() });
  try {
    await b.importSnapshot(exported.manifest, { asSandbox: true });
    await fleet.store.place('sandbox', id, target.node);
    await fleet.store.place('snapshot', snap.id, target.node);
    if (ahead) await fleet.store.place('snapshot', ahead.id, target.node);
    const after = wasRunning ? await b.resume(id) : await b.get(id);
    const { bytes: timelineBytes } = await moveTimeline(fleet, a, b, target.node, older.filter((o) => o.id !== ahead?.id), opts.logger);
    await a.delete(id).catch((err: unknown) => opts.logger?.warn('the source copy of a moved sandbox was not deleted', { sandbox: id, node: from, error: String(err) }));
    const bytesUploaded = (copied?.bytesUploaded ?? 0) + exported.bytesUploaded + timelineBytes;
    opts.logger?.info('sandbox moved', { sandbox: id, from, to: target.node, bytesUploaded, snapshots: older.length + 1 });
    return { sandbox: after, from, to: target.node, bytesUploaded, ms: Math.round(performance.now() - t0) };
  } catch (err) {
    await b.delete(id).catch(() => {});
    await dropAhead();
    await fleet.store.place('sandbox', id, from);
    if (ahead) await fleet.store.place('snapshot', ahead.id, from).catch(() => {});
    if (wasRunning) await a.resume(id).catch(() => {});
    throw err;
  }
}
