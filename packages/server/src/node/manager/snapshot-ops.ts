import { ForkdError, type SnapshotInfo } from '@forkd/protocol';
import type { ForkTree } from '../../node-contract/node-types.js';
import type { SandboxRecord } from '../../store/store.js';
import type { ManagerContext } from './manager-context.js';
import { toInfo, toSnapshotInfo } from './sandbox-info.js';

/** A named or unnamed snapshot of a running sandbox, under its lock. */
export function snapshotSandbox(c: ManagerContext, id: string, opts: { name?: string | undefined }): Promise<SnapshotInfo> {
  return c.locks.exclusive(id, async () => {
    const r = await c.record(id);
    if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}; only a running sandbox can be snapshotted`);
    if (opts.name && (await c.store.listSnapshots(id)).some((s) => s.name === opts.name)) throw new ForkdError('ALREADY_EXISTS', `sandbox ${id} already has a snapshot named ${opts.name}`);
    return toSnapshotInfo(await c.takeSnapshot(r, { name: opts.name, reason: 'manual', leaveRunning: true }));
  });
}

/** The owner's lock, its place taken in the caller's turn (see SandboxLocks.exclusiveOf). */
export function underOwnerOf<T>(c: ManagerContext, snapId: string, fn: () => Promise<T>): Promise<T> {
  return c.locks.exclusiveOf(
    c.snapshotRecord(snapId).then((s) => s.sandboxId),
    () => fn(),
  );
}

/** Pinned snapshots are never thinned by the timeline policy (named ones start pinned). Under the owner's lock. */
export function pinSnapshot(c: ManagerContext, snapId: string, pinned: boolean): Promise<SnapshotInfo> {
  return underOwnerOf(c, snapId, async () => {
    await c.snapshotRecord(snapId);
    await c.store.setPinned(snapId, pinned);
    return toSnapshotInfo(await c.snapshotRecord(snapId));
  });
}

/** Under the owner's lock, so it never removes images a pause, rewind or fork is reading. */
export function deleteSnapshot(c: ManagerContext, snapId: string): Promise<void> {
  return underOwnerOf(c, snapId, async () => {
    const s = await c.snapshotRecord(snapId);
    const owner = await c.store.getSandbox(s.sandboxId);
    if (owner?.resumeFrom === snapId) throw new ForkdError('FAILED_PRECONDITION', `snapshot ${snapId} holds the paused state of ${s.sandboxId}`);
    await c.store.deleteSnapshot(snapId);
    await c.files.remove(snapId);
  });
}

/** The fork tree below a sandbox: its snapshots and the sandboxes forked from them, recursively. */
export async function forkTree(c: ManagerContext, id: string): Promise<ForkTree> {
  const node = async (rec: SandboxRecord): Promise<ForkTree> => {
    const children: ForkTree[] = [];
    for (const s of await c.store.listSnapshots(rec.id)) for (const f of await c.store.listForks(s.id)) children.push(await node(f));
    return { sandbox: toInfo(rec), children };
  };
  return node(await c.record(id));
}
