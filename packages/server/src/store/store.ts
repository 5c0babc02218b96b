import type { Limits, NetworkRules, SandboxRecovery, SandboxState } from '@forkd/protocol';

export interface SandboxRecord {
  id: string;
  /** The template's name when it was made (shown; the name may since be another template's). */
  template: string;
  /** The template's id (TemplateRecord.id): what policies, defaults and disk accounting key on. */
  templateId: string;
  state: SandboxState;
  limits: Limits;
  env: Record<string, string>;
  metadata: Record<string, string>;
  createdAt: string;
  error?: string | undefined;
  /** The snapshot this sandbox was forked from (lineage). */
  forkedFrom?: string | undefined;
  /** While paused: the snapshot to resume from. */
  resumeFrom?: string | undefined;
  /** Per-sandbox overrides of the server's timeline and hibernation defaults. */
  policy?: SandboxPolicy | undefined;
  /**
   * Runtime key of the sandbox's current process tree, root volume and
   * network namespace (the sandbox id when absent). A rewind restores the
   * target under a new key while the state being left is still being dumped,
   * then switches to it.
   */
  instance?: string | undefined;
  /**
   * Its processes were lost (host reboot or crash, init killed): while it is
   * `failed`, this says so and it can be brought back (recovery.ts). Written
   * before the transition to failed; ignored in any other state.
   */
  lost?: SandboxLoss | undefined;
  /** The last time it was brought back after such a loss. */
  recovered?: SandboxRecovery | undefined;
  /**
   * Where its current state began: restored from `snapshot` (rewind, resume,
   * recovery) or started cold from its files, at `at`. Only snapshots taken
   * since are later states of it; older ones (a rewind's state left) are not.
   */
  origin?: SandboxOrigin | undefined;
  /**
   * First host id of the range its user namespace maps 0..65535 to (see
   * RuntimeSpec.idmap); forks and restores keep the range of their images.
   * Absent: made before forkd used user namespaces.
   */
  idmap?: number | undefined;
  /** Its network mode and rules (absent: `none`); forks, restores and rewinds keep them. */
  network?: NetworkRules | undefined;
  /**
   * Storage key of the read-only volume its root descends from when that is
   * not its template's: a sandbox imported from a blob store descends from
   * the template received with it (`template-parents/…`, see
   * node/transfer). Its snapshots are exported incrementally against it.
   * Forks keep it.
   */
  base?: string | undefined;
  /** Defaults of the processes it starts, from its template's image (TemplateImage); forks keep them. */
  defaults?: SpawnDefaults | undefined;
}

/** What a process started without its own cwd, user or shell gets (an image's WorkingDir, User, and `sh -c` where it has no bash). */
export interface SpawnDefaults {
  cwd?: string | undefined;
  user?: string | undefined;
  /** Runs `command` strings instead of `/bin/bash -lc` (see spawn-defaults.ts). */
  shell?: string[] | undefined;
}

/** What a template made from an OCI image keeps of it: its sandboxes get its env and defaults. */
export interface TemplateImage extends SpawnDefaults {
  /** The reference it was pulled as. */
  ref: string;
  env: Record<string, string>;
  /** A Dockerfile build's key of its last step and result (node/dockerfile): a rebuild to the same key has nothing to do. */
  buildKey?: string | undefined;
}

export interface SandboxLoss {
  at: string;
  reason: string;
}

export interface SandboxOrigin {
  at: string;
  snapshot?: string | undefined;
}

export interface SandboxPolicy {
  snapshotIntervalSeconds?: number | undefined;
  idleTimeoutSeconds?: number | undefined;
  /** Lifetime given at create; a resume after a timeout starts a new one. */
  timeoutSeconds?: number | undefined;
  onTimeout?: 'pause' | 'kill' | undefined;
  /** false: the pause at a timeout is filesystem-only. */
  timeoutPauseMemory?: false | undefined;
  /** ISO time the current lifetime ends; cleared when it has acted. */
  expiresAt?: string | undefined;
}

export interface SnapshotRecord {
  id: string;
  sandboxId: string;
  name?: string | undefined;
  createdAt: string;
  frozenMs: number;
  sizeBytes: number;
  parentId?: string | undefined;
  pinned: boolean;
  reason: 'manual' | 'pause' | 'rewind' | 'fork' | 'policy';
}

export interface TemplateRecord {
  /** Unique for the node's lifetime, kept by rebuilds, never reused (newTemplateId; the name in older databases). */
  id: string;
  name: string;
  createdAt: string;
  /** Storage key of the template's root filesystem volume. */
  volume: string;
  /** Warm template: directory (under the pool) of the memory images sandboxes start from. */
  images?: string | undefined;
  /** Template it was built from. */
  from?: string | undefined;
  /** Warm template: the user namespace range its memory images recreate (SandboxRecord.idmap). */
  idmap?: number | undefined;
  /** Made from an image (or from a template that was): the defaults its sandboxes get. */
  image?: TemplateImage | undefined;
}

/**
 * Durable state of one node. Every method is async so the records may live in
 * another process (PostgreSQL as well as the SQLite file); each write is one
 * atomic statement, committed when its Promise resolves, so a crash never
 * leaves a half-written record. Callers await every call: a write not awaited
 * may not have happened, and a rejected one would go unhandled. The
 * filesystem and runc are reconciled against it on start. Every
 * implementation passes store-conformance.ts, which states what unknown ids
 * and absent fields do.
 */
export interface Store {
  insertSandbox(rec: SandboxRecord): Promise<void>;
  /** Compare-and-set on state: returns false when the current state is not `from`. */
  transition(id: string, from: SandboxRecord['state'], to: SandboxRecord['state'], error?: string): Promise<boolean>;
  getSandbox(id: string): Promise<SandboxRecord | undefined>;
  listSandboxes(): Promise<SandboxRecord[]>;
  deleteSandbox(id: string): Promise<void>;
  setResumeFrom(id: string, snapshotId: string | undefined): Promise<void>;
  /** Points the sandbox at another runtime instance (one write: a crash sees the old or the new one). */
  setInstance(id: string, instance: string, origin?: SandboxOrigin): Promise<void>;
  setOrigin(id: string, origin: SandboxOrigin | undefined): Promise<void>;
  setIdmap(id: string, hostId: number | undefined): Promise<void>;
  setNetwork(id: string, network: NetworkRules | undefined): Promise<void>;
  setLost(id: string, lost: SandboxLoss | undefined): Promise<void>;
  setRecovered(id: string, recovered: SandboxRecovery | undefined): Promise<void>;
  setPolicy(id: string, policy: SandboxPolicy | undefined): Promise<void>;
  insertSnapshot(rec: SnapshotRecord): Promise<void>;
  getSnapshot(id: string): Promise<SnapshotRecord | undefined>;
  /** A sandbox's snapshots, oldest first. */
  listSnapshots(sandboxId: string): Promise<SnapshotRecord[]>;
  /** The last of them (every snapshot names its predecessor: one row, not the whole timeline). */
  lastSnapshot(sandboxId: string): Promise<SnapshotRecord | undefined>;
  /** Count and memory-image bytes of every snapshot on the node (metrics). */
  snapshotTotals(): Promise<{ count: number; bytes: number }>;
  deleteSnapshot(id: string): Promise<void>;
  setPinned(id: string, pinned: boolean): Promise<void>;
  /** Memory bytes of a snapshot whose images were stored after it was recorded. */
  setSnapshotSize(id: string, bytes: number): Promise<void>;
  /** Sandboxes forked from a snapshot. */
  listForks(snapshotId: string): Promise<SandboxRecord[]>;
  upsertTemplate(rec: TemplateRecord): Promise<void>;
  /** The template now published under a name. */
  getTemplate(name: string): Promise<TemplateRecord | undefined>;
  listTemplates(): Promise<TemplateRecord[]>;
  deleteTemplate(name: string): Promise<void>;
  close(): Promise<void>;
}
