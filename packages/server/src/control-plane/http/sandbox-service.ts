import type { BuildTemplateRequest, CreateSandboxRequest, SandboxInfo, SandboxMetrics, SnapshotInfo, TemplateInfo, WatchEvent } from '@forkd/protocol';
import type { GuestClient, OutputHandlers, SpawnOptions } from '../../node/guest/guest-client.js';
import type { ProcessHandle } from '../../node/manager/process-session.js';
import type { WatchHandle } from '../../node/manager/watch-session.js';
import type { ExecExit, ForkTree, NodeStats } from '../../node/manager/sandbox-manager.js';
import type { PortConnection } from '../../node/network/network.js';

/**
 * Called with a new sandbox's id before the node records it anywhere (create,
 * each fork, a template's build sandbox): the control plane writes its owner
 * first, so no sandbox is ever listed or reachable without one. A throw
 * aborts the creation.
 */
export type ClaimSandbox = (id: string) => void;

/**
 * What the HTTP API needs from a node. Today the in-process SandboxManager;
 * later a NodeClient speaking to a remote node agent implements the same.
 */
export interface SandboxService {
  create(req: CreateSandboxRequest, claim?: ClaimSandbox): Promise<SandboxInfo>;
  get(id: string): SandboxInfo;
  list(): SandboxInfo[];
  delete(id: string): Promise<void>;
  /** The guest link of a running sandbox; a hibernated one is resumed first. */
  guest(id: string): Promise<GuestClient>;
  /** Process streams survive snapshots, pauses and rewinds (`exit` rejects with REWOUND when the process is gone after one). */
  spawn(id: string, opts: SpawnOptions, handlers?: OutputHandlers): Promise<{ process: ProcessHandle; exit: Promise<ExecExit | null> }>;
  attach(id: string, sel: { pid: number } | { tag: string }, handlers?: OutputHandlers): Promise<{ process: ProcessHandle; exit: Promise<ExecExit | null> }>;
  /** Watches a directory; the watch is re-opened after every snapshot. */
  watch(id: string, path: string, recursive: boolean, onEvent: (e: WatchEvent) => void | Promise<void>): Promise<WatchHandle>;
  /** Memory, CPU, processes and disk. */
  metrics(id: string): Promise<SandboxMetrics>;
  /** A connection to a port inside the sandbox (resumed first if hibernated). */
  connectPort(id: string, port: number): Promise<PortConnection>;
  templates(): TemplateInfo[];
  snapshot(id: string, opts: { name?: string | undefined }): Promise<SnapshotInfo>;
  timeline(id: string): SnapshotInfo[];
  getSnapshot(snapId: string): SnapshotInfo;
  deleteSnapshot(snapId: string): Promise<void>;
  pinSnapshot(snapId: string, pinned: boolean): Promise<SnapshotInfo>;
  pause(id: string): Promise<SandboxInfo>;
  /** Lifetime: times out `seconds` from now (0: never). */
  setTimeout(id: string, seconds: number): Promise<SandboxInfo>;
  resume(id: string): Promise<SandboxInfo>;
  rewind(id: string, snapId: string): Promise<SandboxInfo>;
  fork(source: string, count: number, claim?: ClaimSandbox): Promise<SandboxInfo[]>;
  tree(id: string): ForkTree;
  /** `claim` is called with the build sandbox's id, like a create's. */
  buildTemplate(req: BuildTemplateRequest, progress: (line: string) => void | Promise<void>, claim?: ClaimSandbox): Promise<TemplateInfo>;
  deleteTemplate(name: string): Promise<void>;
  /** Node-wide numbers for the metrics endpoint (not tenant-scoped: admin only). */
  stats(): Promise<NodeStats>;
}

