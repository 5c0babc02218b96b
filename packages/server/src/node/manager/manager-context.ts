import type { SandboxState } from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';
import type { NodeEventSink } from '../node-event.js';
import type { SandboxRecord, SnapshotRecord, Store } from '../../store/store.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Storage } from '../storage/storage.js';
import type { SnapshotFiles } from '../storage/snapshot-files.js';
import type { TemplateRegistry } from '../templates/template-registry.js';
import type { AdmissionGate } from './admission-gate.js';
import type { GuestTransport } from '../runtime/guest-transport.js';
import type { HotPauses } from './hot-pauses.js';
import type { Recovery } from './recovery.js';
import type { SandboxDisk } from './sandbox-disk.js';
import type { SandboxInstances } from './sandbox-instances.js';
import type { SandboxLocks } from './sandbox-locks.js';
import type { TakeSnapshotOptions } from './take-snapshot.js';
import type { WarmPool } from './warm-pool.js';

/**
 * What the lifecycle operations (create.ts, fork.ts, pause-resume.ts,
 * rewind.ts) share of the manager: its parts and its few internal steps.
 * Built once by the SandboxManager; nothing outside node/manager sees it.
 */
export interface ManagerContext {
  store: Store;
  storage: Storage;
  runtime: Runtime;
  templates: TemplateRegistry;
  logger: Logger;
  locks: SandboxLocks;
  admission: AdmissionGate;
  space: SandboxDisk;
  instances: SandboxInstances;
  files: SnapshotFiles;
  guests: GuestTransport;
  recovery: Recovery;
  pool: WarmPool;
  /** Frozen trees of recent pauses, kept so a resume is a thaw (see hot-pauses.ts). */
  hot: HotPauses;
  /** Where events no API call asked for go (the sandbox's event log). */
  onEvent?: NodeEventSink | undefined;
  /**
   * Per sandbox, what its last rewind left to the background: the dump of
   * the state left, then the release of that instance (awaited by close and
   * delete; the next rewind waits for it, so there is one at a time).
   */
  background: Map<string, Promise<void>>;
  record(id: string): Promise<SandboxRecord>;
  snapshotRecord(snapId: string): Promise<SnapshotRecord>;
  /** Compare-and-set of the state (CONFLICT when it is not allowed or changed concurrently). */
  transition(r: SandboxRecord, to: SandboxState, error?: string): Promise<void>;
  /** Call under the sandbox's lock (see take-snapshot.ts). */
  takeSnapshot(r: SandboxRecord, opts: TakeSnapshotOptions): Promise<SnapshotRecord>;
  markActive(id: string): void;
  /** A sandbox's current instance goes (its cached disk numbers too). */
  release(id: string): Promise<void>;
  /** A fork or create that did not make it: its instance and record go. */
  abandon(id: string): Promise<void>;
  delete(id: string): Promise<void>;
}
