import { newSnapshotId } from '@forkd/protocol';
import { crashPoint } from '../../shared/crash-point.js';
import { span } from '../../shared/profile.js';
import type { SandboxRecord, SnapshotRecord } from '../../store/store.js';
import type { SnapshotDraft } from '../storage/snapshot-files.js';
import { dumpOnce, dumpRetrying, readyForDump, type SnapshotContext } from './take-snapshot.js';

const ms = (x: number) => Math.round(x * 10) / 10;

/** What a frozen draft's marker says (SnapshotDraft.markFrozen): enough for a restarted daemon to take the dump. */
export interface FrozenNote {
  /** The runtime key of the frozen instance. */
  instance: string;
  /** The guest protocol its agent speaks (recorded with the images). */
  guestProtocol: number;
}

/** The marker's text, or undefined when it is not one forkd wrote (never trusted beyond its shape). */
export function parseFrozenNote(text: string): FrozenNote | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const { instance, guestProtocol } = v as Record<string, unknown>;
  if (typeof instance !== 'string' || !/^[A-Za-z0-9._-]{1,128}$/.test(instance)) return undefined;
  if (typeof guestProtocol !== 'number' || !Number.isInteger(guestProtocol) || guestProtocol < 0) return undefined;
  return { instance, guestProtocol };
}

/** What taking interrupted dumps at a restart needs of the node. */
export type FrozenDraftsContext = Pick<SnapshotContext, 'store' | 'storage' | 'runtime' | 'files' | 'instances' | 'logger'>;

/** A tree frozen for a snapshot whose dump comes later (see freezeToKeep). */
export interface FrozenState {
  /** The snapshot it becomes: its id, its instant (the freeze's). */
  readonly record: SnapshotRecord;
  /** Records it (listed at once; anything reading its images waits for finish). */
  commit(): Promise<void>;
  /** Takes the dump and stores it; a dump that cannot be taken forgets the record and says so to `onLost`. Never throws. */
  finish(onLost?: (snapId: string) => void): Promise<void>;
  /** Given up before the switch (committed or not): the tree thawed and running on as it was, nothing of it recorded. */
  abandon(): Promise<void>;
}

/**
 * A rewind's state left, kept without its dump on the rewind's path: the
 * tree is frozen now (its instant), the target restored beside it on the
 * other core, and the dump taken after the rewind answers. Until then the
 * snapshot is recorded with its images pending (readers wait, see
 * SnapshotFiles.dumpLater) and its draft says which frozen instance it is
 * to be taken from, so a daemon that dies meanwhile takes it at its restart
 * (finishFrozenDrafts). Call under the sandbox's lock.
 */
export async function freezeToKeep(c: SnapshotContext, r: SandboxRecord, key: string): Promise<FrozenState> {
  const snapId = newSnapshotId();
  const used = (await c.runtime.usage(key).catch(() => undefined))?.memoryBytes;
  const first = await c.files.draft(snapId, await c.files.canStage(used));
  const previous = (await c.store.lastSnapshot(r.id))?.id ?? r.forkedFrom;
  const guestProtocol = c.guests.at(key).protocol;
  const note = JSON.stringify({ instance: key, guestProtocol } satisfies FrozenNote);
  const t0 = performance.now();
  let release: () => void;
  try {
    release = await readyForDump(c, key);
  } catch (err) {
    await first.discard();
    throw err;
  }
  try {
    await span('rewind: state left frozen', () => c.runtime.freeze(key));
    await first.markFrozen(note);
  } catch (err) {
    release();
    await c.runtime.thaw(key).catch(() => {});
    await first.discard();
    throw err;
  }
  const frozenAt = performance.now();
  const record: SnapshotRecord = { id: snapId, sandboxId: r.id, createdAt: new Date().toISOString(), frozenMs: 0, sizeBytes: 0, ...(previous ? { parentId: previous } : {}), pinned: false, reason: 'rewind' };
  let dumped!: () => void;
  const done = new Promise<void>((resolve) => (dumped = resolve));
  return {
    record,
    commit: async () => {
      record.frozenMs = ms(performance.now() - t0);
      c.files.dumpLater(snapId, done);
      await c.store.insertSnapshot(record);
    },
    finish: async (onLost) => {
      try {
        const dump = (d: SnapshotDraft, attempt: number) =>
          // A failed dump thawed the tree: once more as an ordinary one, the instant a moment later (nobody saw it
          // since). That dump quiesces the guest itself: ours is let go first, or its first request would wait on it.
          attempt === 1 ? dumpFrozen(c, key, d, guestProtocol) : (release(), d.markFrozen(note).then(() => dumpOnce(c, r, key, d, false)));
        const { draft } = await dumpRetrying(c, r.id, snapId, first, dump);
        await sealAndPublish(c, snapId, draft, previous);
        c.logger.info('snapshot taken', { sandbox: r.id, snapshot: snapId, reason: 'rewind', frozenMs: record.frozenMs, deferredDumpMs: ms(performance.now() - frozenAt) });
      } catch (err) {
        c.logger.error('the state a rewind left could not be dumped; its snapshot is removed', { sandbox: r.id, snapshot: snapId, error: String(err) });
        await c.store.deleteSnapshot(snapId).catch(() => {});
        onLost?.(snapId);
      } finally {
        release();
        dumped();
      }
    },
    abandon: async () => {
      release();
      await c.runtime.thaw(key).catch(() => {});
      await c.store.deleteSnapshot(snapId).catch(() => {});
      await first.discard();
      dumped();
    },
  };
}

/** The dump of a tree already frozen (Runtime.freeze), left frozen; the root committed alongside. */
async function dumpFrozen(c: FrozenDraftsContext, key: string, draft: SnapshotDraft, guestProtocol: number) {
  const stats = await c.runtime.checkpoint(key, {
    imagesDir: draft.imagesDir,
    workDir: draft.workDir,
    leaveRunning: false,
    whileFrozen: await c.storage.frozenCommit(draft.rootfsKey, c.instances.volumeOf(key)),
    guestProtocol,
  });
  crashPoint('rewind:left-dumped');
  return stats;
}

/** Sealed (its images stored later when staged), published, its size recorded when known now. */
async function sealAndPublish(c: FrozenDraftsContext, snapId: string, draft: SnapshotDraft, previous: string | undefined): Promise<void> {
  let sealed: { memoryBytes: number; deferred: boolean };
  try {
    sealed = await draft.seal({ defer: true, previous });
  } catch (err) {
    await draft.discard();
    throw err;
  }
  await draft.publish();
  if (sealed.deferred) c.files.storeLater(snapId, previous);
  else await c.store.setSnapshotSize(snapId, sealed.memoryBytes);
}

/**
 * At a restart, before anything unowned is swept: each draft a crash left
 * marked frozen (a rewind that answered, its state left not yet dumped) is
 * dumped from its instance, still there and no longer the sandbox's (the
 * rewind switched), and the instance released. One whose rewind never
 * switched (the sandbox still runs that instance, thawed by the start-up
 * check: nothing was left) or whose instance is gone (a host reboot) is
 * forgotten, record and draft.
 */
export async function finishFrozenDrafts(c: FrozenDraftsContext): Promise<void> {
  for (const { snapId, note: text } of await c.files.frozenDrafts()) {
    const note = parseFrozenNote(text);
    const rec = await c.store.getSnapshot(snapId);
    const owner = rec ? await c.store.getSandbox(rec.sandboxId) : undefined;
    const status = note ? (await c.runtime.state(note.instance)).status : 'missing';
    const left = note && rec && owner && (owner.instance ?? owner.id) !== note.instance && (status === 'paused' || status === 'running');
    try {
      // Either way the draft goes: a dump at the restart starts from a fresh one.
      await c.files.remove(`.tmp-${snapId}`);
      if (!left) {
        if (rec) c.logger.warn('a rewind left a snapshot whose dump cannot be taken any more; it is removed', { snapshot: snapId });
        if (rec) await c.store.deleteSnapshot(snapId);
        continue;
      }
      const draft = await c.files.draft(snapId, false);
      await draft.markFrozen(text);
      const stats = await dumpRetrying(c, rec.sandboxId, snapId, draft, (d) => dumpFrozen(c, note.instance, d, note.guestProtocol));
      await sealAndPublish(c, snapId, stats.draft, rec.parentId);
      c.logger.info('the state a rewind left was dumped at the restart', { sandbox: rec.sandboxId, snapshot: snapId });
      await c.instances.releaseKey(note.instance);
    } catch (err) {
      c.logger.error('the state a rewind left could not be dumped at the restart; its snapshot is removed', { snapshot: snapId, error: String(err) });
      await c.store.deleteSnapshot(snapId).catch(() => {});
    }
  }
}
