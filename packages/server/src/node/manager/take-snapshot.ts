import { ForkdError, newSnapshotId } from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';
import { crashPoint } from '../../shared/crash-point.js';
import { span } from '../../shared/profile.js';
import type { SandboxRecord, SnapshotRecord, Store } from '../../store/store.js';
import type { CheckpointStats, Runtime } from '../runtime/runtime.js';
import type { Storage } from '../storage/storage.js';
import type { SnapshotDraft, SnapshotFiles } from '../storage/snapshot-files.js';
import type { GuestTransport } from '../runtime/guest-transport.js';
import type { ReattachGate } from './reattach-gate.js';
import type { SandboxDisk } from './sandbox-disk.js';
import type { SandboxInstances } from './sandbox-instances.js';

const ms = (x: number) => Math.round(x * 10) / 10;

/** CRIU's words for a Unix socket whose peer is gone: the agent's end of a connection the host already closed. */
const PEERLESS_UNIX_SOCKET = /sk-unix\.c:\d+\): unix: Unix socket \d+ not found/;

function agentHeldAConnection(err: unknown): boolean {
  return err instanceof ForkdError && err.code === 'INTERNAL' && PEERLESS_UNIX_SOCKET.test(String(err.details?.stderrTail ?? ''));
}

/**
 * The guest made dumpable, its memory whole and every host connection let
 * go of (streams held back until the returned release).
 */
export async function readyForDump(c: Pick<SnapshotContext, 'guests' | 'runtime'>, key: string): Promise<() => void> {
  const guest = c.guests.at(key);
  // An agent that never answers cannot be dumped (it stays non-dumpable): say so rather than let CRIU fail.
  await guest.setDumpable(true).catch((err: unknown) => {
    if (err instanceof ForkdError && err.code === 'TIMEOUT') throw err;
  });
  // Before the guest's streams are held back: right after a lazy restore this waits for its last pages.
  await span('snapshot: memory settled', () => c.runtime.settleMemory(key));
  return guest.quiesce();
}

/**
 * One dump: the guest made dumpable and quiesced (every host connection let
 * go of, streams held back), the checkpoint with the root's commit while
 * frozen, then the guest let back in.
 */
export async function dumpOnce(c: SnapshotContext, r: SandboxRecord, key: string, draft: SnapshotDraft, leaveRunning: boolean) {
  const reopen = c.reattach.hold(r.id);
  const guest = c.guests.at(key);
  try {
    const release = await readyForDump(c, key);
    try {
      const stats = await c.runtime.checkpoint(key, {
        imagesDir: draft.imagesDir,
        workDir: draft.workDir,
        leaveRunning,
        whileFrozen: await c.storage.frozenCommit(draft.rootfsKey, c.instances.volumeOf(key)),
        guestProtocol: guest.protocol,
      });
      crashPoint('snapshot:dumped');
      return stats;
    } finally {
      release();
    }
  } finally {
    reopen();
    if (leaveRunning) await guest.setDumpable(false).catch(() => {});
  }
}

/**
 * `dump` into `first`, and once more into a fresh draft when the agent had
 * not yet closed its end of a connection the host let go of (a starved
 * agent on a loaded host): that dump failed before anything was frozen for
 * long, and `dump` quiesces again. A draft whose dump failed is discarded.
 */
export async function dumpRetrying(c: Pick<SnapshotContext, 'files' | 'logger'>, sandbox: string, snapId: string, first: SnapshotDraft, dump: (draft: SnapshotDraft, attempt: number) => Promise<CheckpointStats>): Promise<{ stats: CheckpointStats; draft: SnapshotDraft }> {
  let draft = first;
  for (let attempt = 1; ; attempt++) {
    try {
      return { stats: await dump(draft, attempt), draft };
    } catch (err) {
      await draft.discard();
      if (attempt > 1 || !agentHeldAConnection(err)) throw err;
      c.logger.warn('snapshot dump retried: the guest agent still held a closed connection', { sandbox, snapshot: snapId });
      draft = await c.files.draft(snapId, draft.staged);
    }
  }
}

/** What taking a snapshot needs of the node. */
export interface SnapshotContext {
  store: Store;
  storage: Storage;
  runtime: Runtime;
  files: SnapshotFiles;
  guests: GuestTransport;
  instances: SandboxInstances;
  space: SandboxDisk;
  reattach: ReattachGate;
  logger: Logger;
}

export interface TakeSnapshotOptions {
  name?: string | undefined;
  reason: SnapshotRecord['reason'];
  leaveRunning: boolean;
  /** Record it with its images still in staging; they are stored in the background (see SnapshotFiles.storeLater). */
  deferStore?: boolean;
}

/**
 * Memory + filesystem of a running sandbox at one instant (CRIU dump and a
 * read-only Btrfs snapshot of its root while it is frozen; see
 * Runtime.checkpoint). With leaveRunning it runs on; otherwise it stays
 * frozen for the caller (pause, rewind). Written under `.tmp-*` and renamed
 * into place, so a crash never leaves a half-made snapshot that looks whole.
 * Call under the sandbox's lock.
 */
export async function takeSnapshot(c: SnapshotContext, r: SandboxRecord, opts: TakeSnapshotOptions): Promise<SnapshotRecord> {
  // A pause or rewind keeps state that exists already (and frees memory): those may use the headroom the threshold keeps.
  if (opts.reason !== 'pause' && opts.reason !== 'rewind') c.space.checkFree('take a snapshot');
  const snapId = newSnapshotId();
  const key = await c.instances.key(r.id);
  const used = (await c.runtime.usage(key).catch(() => undefined))?.memoryBytes;
  const stage = await c.files.canStage(used);
  const previous = (await c.store.lastSnapshot(r.id))?.id ?? r.forkedFrom;
  const { stats, draft } = await dumpRetrying(c, r.id, snapId, await c.files.draft(snapId, stage), (d) => dumpOnce(c, r, key, d, opts.leaveRunning));
  let sealed: { memoryBytes: number; deferred: boolean };
  try {
    sealed = await draft.seal({ defer: !!opts.deferStore, previous });
  } catch (err) {
    await draft.discard();
    throw err;
  }
  await draft.publish();
  const rec: SnapshotRecord = {
    id: snapId,
    sandboxId: r.id,
    ...(opts.name ? { name: opts.name } : {}),
    createdAt: new Date().toISOString(),
    frozenMs: ms(stats.frozenMs),
    sizeBytes: sealed.memoryBytes,
    ...(previous ? { parentId: previous } : {}),
    pinned: !!opts.name,
    reason: opts.reason,
  };
  await c.store.insertSnapshot(rec);
  c.logger.info('snapshot taken', { sandbox: r.id, snapshot: snapId, reason: opts.reason, frozenMs: rec.frozenMs, sizeBytes: rec.sizeBytes, deferred: sealed.deferred });
  if (sealed.deferred) c.files.storeLater(snapId, previous);
  return rec;
}
