import type { NetworkRules } from '@forkd/protocol';
import type { PortConnection } from '../../node-contract/node-types.js';

/**
 * A sandbox's network identity, owned by the host rather than by the OCI
 * runtime: it outlives restores (CRIU treats it as external, so a checkpoint
 * carries no network configuration and a restore joins a ready namespace),
 * and it is where egress policy is enforced (a veth pair and nftables
 * rules for `egress`; loopback only for `none`).
 */
export interface Network {
  /** Creates (or finds) the sandbox's network namespace, set up for `rules`; returns its path. Idempotent. */
  prepare(id: string, rules?: NetworkRules): Promise<string>;
  /**
   * Takes as the sandbox's the network namespace process `pid` is in (made
   * by the runtime inside the sandbox's user namespace: CRIU requires every
   * namespace of a tree to belong to its user namespace, so a host-made one
   * cannot be used there), loopback up and set up for `rules`; returns its path.
   */
  adopt(id: string, pid: number, rules?: NetworkRules): Promise<string>;
  /**
   * Extra environment for the runtime's restore of `id` from `imagesDir`
   * (CRIU must be told which host end a veth in the images gets).
   */
  restoreEnv(id: string, imagesDir: string): Promise<Record<string, string> | undefined>;
  /** Changes a running sandbox's mode and rules; the next connection follows them. */
  setRules(id: string, rules: NetworkRules): Promise<void>;
  /** Releases it. Idempotent. */
  release(id: string): Promise<void>;
  /** Ids that hold a namespace (orphan sweep after a crash). */
  list(): Promise<string[]>;
  /** A TCP connection to `port` on the sandbox's loopback (the port proxy). */
  connect(id: string, port: number): PortConnection;
}

export type { PortConnection };
