import type {
  BuildTemplateRequest,
  CreateSandboxRequest,
  FileEntry,
  ProcessInfo,
  SandboxInfo,
  SandboxMetrics,
  SnapshotInfo,
  TemplateInfo,
  WatchEvent,
  SetNetworkRequest,
  NodeCredential,
  BuildProgress,
} from '@forkd/protocol';
import type { ClaimSandbox, FileContent, ForkOptions, ForkTree, ImportSnapshotOptions, NodeStats, OutputHandlers, PauseOptions, PortConnection, ProcessSelector, ProcessStream, ResumeOptions, ResumePoint, SnapshotExport, SpawnOptions, TemplateExport, WatchHandle, WriteFileOptions } from './node-types.js';

/**
 * Everything the control plane needs from a node: the one seam between them
 * (the control plane imports nothing else of a node). Every method is async
 * so that an implementation may be in this process (the SandboxManager's
 * LocalNode) or across a network (NodeHttpClient, `forkd serve --role node`).
 * Calls that reach inside a sandbox (processes, files, ports) resume a
 * hibernated one first and count as activity. Errors are ForkdErrors with
 * the protocol's closed codes.
 */
export interface NodeService {
  create(req: CreateSandboxRequest, claim?: ClaimSandbox): Promise<SandboxInfo>;
  get(id: string): Promise<SandboxInfo>;
  list(): Promise<SandboxInfo[]>;
  delete(id: string): Promise<void>;
  /** Lifetime: times out `seconds` from now (0: never). */
  setTimeout(id: string, seconds: number): Promise<SandboxInfo>;
  /** Replaces its network mode and rules (running: from the next connection on). */
  setNetwork(id: string, rules: SetNetworkRequest): Promise<SandboxInfo>;
  /**
   * Replaces the credentials the egress proxy adds to its requests (headers
   * already resolved). Kept in memory only: never on disk, in the sandbox or
   * a snapshot; the control plane pushes them again after a node restart.
   */
  setCredentials(id: string, credentials: NodeCredential[]): Promise<void>;
  /** Memory, CPU, processes and disk. */
  metrics(id: string): Promise<SandboxMetrics>;

  /** Process streams survive snapshots, pauses and rewinds. */
  spawn(id: string, opts: SpawnOptions, handlers?: OutputHandlers): Promise<ProcessStream>;
  /** With `resume`: that very spawn (its token; NOT_FOUND otherwise), from that ring offset: a client's stream going on after a daemon restart. */
  attach(id: string, sel: ProcessSelector, handlers?: OutputHandlers, resume?: ResumePoint): Promise<ProcessStream>;
  listProcesses(id: string): Promise<ProcessInfo[]>;
  signal(id: string, sel: ProcessSelector, signal: number): Promise<void>;
  writeStdin(id: string, sel: ProcessSelector, data: Buffer | undefined, eof: boolean): Promise<void>;

  readFile(id: string, path: string): Promise<FileContent>;
  /** Returns the bytes written. */
  writeFile(id: string, path: string, data: AsyncIterable<Uint8Array> | Uint8Array, opts?: WriteFileOptions): Promise<number>;
  listDir(id: string, path: string, depth?: number): Promise<FileEntry[]>;
  stat(id: string, path: string): Promise<FileEntry>;
  mkdir(id: string, path: string, user?: string): Promise<void>;
  move(id: string, from: string, to: string): Promise<void>;
  remove(id: string, path: string, recursive?: boolean): Promise<void>;
  /** Watches a directory; the watch is re-opened after every snapshot. */
  watch(id: string, path: string, recursive: boolean, onEvent: (e: WatchEvent) => void | Promise<void>): Promise<WatchHandle>;
  /** A connection to a port inside the sandbox. */
  connectPort(id: string, port: number): Promise<PortConnection>;

  snapshot(id: string, opts: { name?: string | undefined }): Promise<SnapshotInfo>;
  timeline(id: string): Promise<SnapshotInfo[]>;
  getSnapshot(snapId: string): Promise<SnapshotInfo>;
  deleteSnapshot(snapId: string): Promise<void>;
  pinSnapshot(snapId: string, pinned: boolean): Promise<SnapshotInfo>;
  /** Default: memory kept (a snapshot, then stop); `memory: false`: files only, the resume starts it cold. */
  pause(id: string, opts?: PauseOptions): Promise<SandboxInfo>;
  /** A filesystem-only pause (or `memory: false`) comes back cold: same id, files, limits and env; new processes. */
  resume(id: string, opts?: ResumeOptions): Promise<SandboxInfo>;
  rewind(id: string, snapId: string): Promise<SandboxInfo>;
  /** A sandbox id forks it live (implicit snapshot); a snapshot id forks that snapshot. All or nothing. */
  fork(source: string, count: number, claim?: ClaimSandbox, opts?: ForkOptions): Promise<SandboxInfo[]>;
  tree(id: string): Promise<ForkTree>;
  /**
   * The snapshot into the node's blob store, incremental against what the
   * store holds (docs/ARCHITECTURE.md, Snapshot transfer). Not tenant-scoped:
   * the control plane's own (migration, fork elsewhere, a lost node's restore).
   */
  exportSnapshot(snapId: string): Promise<SnapshotExport>;
  /** A snapshot exported by any node of the same blob store, by its manifest's key (see ImportSnapshotOptions). Not tenant-scoped. */
  importSnapshot(manifest: string, opts?: ImportSnapshotOptions): Promise<SnapshotInfo>;

  templates(): Promise<TemplateInfo[]>;
  /** `claim` is called with the build sandbox's id, like a create's. */
  buildTemplate(req: BuildTemplateRequest, progress: BuildProgress, claim?: ClaimSandbox): Promise<TemplateInfo>;
  deleteTemplate(name: string): Promise<void>;
  /**
   * A template (root, record, a warm one's memory images) into the node's
   * blob store, so another node can have it (docs/ARCHITECTURE.md, Templates
   * travel too). Not tenant-scoped: the control plane's own (a create where
   * no node with room holds its template). `base` is every node's own.
   */
  exportTemplate(name: string): Promise<TemplateExport>;
  /** A template exported by any node of the same blob store, usable as if built here; the version already here makes it a no-op. Not tenant-scoped. */
  importTemplate(manifest: string): Promise<TemplateInfo>;
  /** Node-wide numbers (not tenant-scoped: admin only). */
  stats(): Promise<NodeStats>;
}
