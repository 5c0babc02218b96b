import type { BlobStore } from '../../blob/blob-store.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { SandboxSummary } from '../../store/observed-store.js';
import type { Network } from '../network/network.js';
import type { NodeEventSink } from '../node-event.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SnapshotFiles } from '../storage/snapshot-files.js';
import type { Storage } from '../storage/storage.js';
import type { TemplateRegistry } from '../templates/template-registry.js';
import type { OvercommitPolicy } from './admission.js';
import type { GuestTransport } from '../runtime/guest-transport.js';
import type { HostCapacity } from './host-capacity.js';
import type { SandboxDiskOptions } from './sandbox-disk.js';
import type { SandboxMaxima } from './sandbox-maxima.js';

/** What a SandboxManager is made of, and its settings. */
export interface ManagerDeps {
  store: Store;
  storage: Storage;
  runtime: Runtime;
  network: Network;
  templates: TemplateRegistry;
  guestBinary: string;
  /** Memory-backed directory for CRIU dumps (see storeImages). */
  stagingDir?: string;
  logger: Logger;
  /** Sandboxes per template kept started ahead of demand (0 disables). */
  warmPoolSize?: number;
  /** Templates besides base that get a warm member: the most recently built or wanted (FORKD_WARM_POOL_TEMPLATES). */
  warmPoolTemplates?: number;
  /** How long a paused sandbox's frozen processes are kept so a resume is a thaw (0, the default: not kept; see hot-pauses.ts). */
  hotPauseMs?: number;
  /** A resume may keep the root volume its pause froze (default true; see SandboxInstances.frozenAt). */
  keepPausedRoot?: boolean;
  /** Bring back sandboxes whose processes were lost when the daemon starts (default true; see recovery.ts). */
  recoverOnStart?: boolean;
  /** New sandboxes get a user namespace (an id range of their own; see id-ranges.ts). */
  userns?: boolean;
  /** Things that happened to sandboxes without a call (lost, recovered): the control plane logs them. */
  onEvent?: NodeEventSink;
  /** Deadline of every guest operation (default GUEST_DEADLINE_MS); recovery's and the policy pass's per-sandbox timeouts follow from it (see sandboxTimeoutMs). */
  guestDeadlineMs?: number;
  /** Whether the host can take a sandbox (see admission.ts, sandbox-maxima.ts); default: this host, memory 4×, CPUs unchecked, maxima from the host. */
  admission?: { host?: HostCapacity; overcommit?: OvercommitPolicy; maxima?: Partial<SandboxMaxima> };
  /** Disk quotas, the pool's free-space watch and disk admission (see sandbox-disk.ts); default: none of them, 10 GiB recorded. */
  disk?: SandboxDiskOptions;
  /** The agent side of instances (default: the runtime's own, Runtime.guests); unit tests give a fake. */
  guests?: GuestTransport;
  /** Snapshot images and roots (default: in the pool, PoolSnapshotFiles); unit tests give a fake. */
  snapshotFiles?: SnapshotFiles;
  /** State, limits and id range of every sandbox, read by each create (default: a store listing; the node gives ObservedStore's, from memory). */
  summaries?: () => Promise<SandboxSummary[]>;
  /** Where snapshots go when they leave the node (export/import, see node/transfer); none: those calls are FAILED_PRECONDITION. */
  blobs?: BlobStore;
}
