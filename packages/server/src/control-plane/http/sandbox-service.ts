import type { CreateSandboxRequest, SandboxInfo, TemplateInfo } from '@forkd/protocol';
import type { GuestClient, GuestProcess, OutputHandlers, SpawnOptions } from '../../node/guest/guest-client.js';
import type { ExecExit } from '../../node/manager/sandbox-manager.js';
import type { ResourceUsage } from '../../node/runtime/runtime.js';

/**
 * What the HTTP API needs from a node. Today the in-process SandboxManager;
 * later a NodeClient speaking to a remote node agent implements the same.
 */
export interface SandboxService {
  create(req: CreateSandboxRequest): Promise<SandboxInfo>;
  get(id: string): SandboxInfo;
  list(): SandboxInfo[];
  delete(id: string): Promise<void>;
  guest(id: string): GuestClient;
  spawn(id: string, opts: SpawnOptions, handlers?: OutputHandlers): Promise<{ process: GuestProcess; exit: Promise<ExecExit | null> }>;
  attach(id: string, sel: { pid: number } | { tag: string }, handlers?: OutputHandlers): Promise<{ process: GuestProcess; exit: Promise<ExecExit | null> }>;
  usage(id: string): Promise<ResourceUsage>;
  templates(): TemplateInfo[];
}
