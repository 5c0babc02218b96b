import type { GuestClient } from '../guest/guest-client.js';
import type { RuntimeStatus } from './runtime.js';
import type { SandboxRoot } from './sandbox-root.js';

/**
 * How the host reaches the guest agent of an instance (by runtime key, see
 * SandboxRecord.instance), supplied by its Runtime (Runtime.guests): the
 * agent installed into the root, made safe to connect to, waited for, and
 * the one guest link the host keeps to it. The container runtime's is a
 * Unix socket in the root (unix-socket-guest.ts); a microVM runtime's would
 * be a vsock port, with the agent baked into its image. The manager's seam
 * to the agent: unit tests replace it with a fake that needs no real agent.
 */
export interface GuestTransport {
  /** The guest link of an instance (made on first use; no liveness check). */
  at(key: string): GuestClient;
  /** Lets go of an instance's link: its processes are going. */
  drop(key: string): void;
  /** Open client connections to an instance's agent (activity). */
  openConnections(key: string): number;
  /** Readies a root for a start (`install`: today's agent) or a restore. */
  prepareRoot(key: string, opts: { install: boolean }): Promise<void>;
  /** Makes the agent's channel trusted (for the Unix socket: seals its directory), then waits for it to answer; `status` says whether the instance died meanwhile. */
  waitAgent(key: string, status: () => Promise<RuntimeStatus>): Promise<void>;
}

/** What a guest transport is given by the manager. */
export interface GuestTransportDeps {
  /** An instance's root (from Storage, of the runtime's kind). */
  root(key: string): SandboxRoot;
  /** The guest agent binary a start installs. */
  guestBinary: string;
  /** Deadline of every guest operation. */
  deadlineMs: number;
}
