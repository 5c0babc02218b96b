import type { PortConnection } from '../../node-contract/node-types.js';

/**
 * A sandbox's network identity, owned by the host rather than by the OCI
 * runtime: it outlives restores (CRIU treats it as external, so a checkpoint
 * carries no network configuration and a restore joins a ready namespace),
 * and it is where egress policy will be enforced.
 */
export interface Network {
  /** Creates (or finds) the sandbox's network namespace; returns its path. Idempotent. */
  prepare(id: string): Promise<string>;
  /**
   * Takes as the sandbox's the network namespace process `pid` is in (made
   * by the runtime inside the sandbox's user namespace: CRIU requires every
   * namespace of a tree to belong to its user namespace, so a host-made one
   * cannot be used there), loopback up; returns its path.
   */
  adopt(id: string, pid: number): Promise<string>;
  /** Releases it. Idempotent. */
  release(id: string): Promise<void>;
  /** Ids that hold a namespace (orphan sweep after a crash). */
  list(): Promise<string[]>;
  /** A TCP connection to `port` on the sandbox's loopback (the port proxy). */
  connect(id: string, port: number): PortConnection;
}

export type { PortConnection };
