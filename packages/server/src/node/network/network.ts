import type { NetworkRules } from '@forkd/protocol';
import type { PortConnection } from '../../node-contract/node-types.js';

/**
 * The two ends of an `egress` sandbox's veth pair: `sandbox` inside its
 * namespace (the same name in every sandbox, so a snapshot's view of it
 * stays valid), `host` the instance's own on the host.
 */
export interface VethEnds {
  sandbox: string;
  host: string;
}

/**
 * What a runtime needs of the network (RuncRuntime's `network`): the
 * namespace a sandbox starts in or the runtime made and hands over, the
 * veth ends a restore must recreate, and their release. How a restore tells
 * its checkpoint tool about them (CRIU's config) is the runtime's business.
 */
export interface RuntimeNetwork {
  /** Creates (or finds) the sandbox's network namespace, set up for `rules`; returns its path. Idempotent. */
  prepare(id: string, rules?: NetworkRules): Promise<string>;
  /**
   * Takes as the sandbox's the network namespace process `pid` is in (made
   * by the runtime inside the sandbox's user namespace: CRIU requires every
   * namespace of a tree to belong to its user namespace, so a host-made one
   * cannot be used there), loopback up and set up for `rules`; returns its path.
   */
  adopt(id: string, pid: number, rules?: NetworkRules): Promise<string>;
  /** The in-sandbox name of an `egress` sandbox's veth end (VethEnds.sandbox): a runtime looks for it in a checkpoint. */
  readonly sandboxLink: string;
  /**
   * The ends a veth restored into `id` from a checkpoint gets (the runtime
   * has the pair made by its restore, then `adopt` sets it up): the host end
   * is the instance's own, allocated once and kept until `release`.
   */
  restoredVeth(id: string): Promise<VethEnds>;
  /** Releases it. Idempotent. */
  release(id: string): Promise<void>;
  /** Ids that hold a namespace (orphan sweep after a crash). */
  list(): Promise<string[]>;
}

/**
 * A sandbox's network identity, owned by the host rather than by the OCI
 * runtime: it outlives restores (CRIU treats it as external, so a checkpoint
 * carries no network configuration and a restore joins a ready namespace),
 * and it is where egress policy is enforced (a veth pair and nftables
 * rules for `egress`; loopback only for `none`).
 */
export interface Network extends RuntimeNetwork {
  /**
   * Whether the sandbox's namespace is held (its path reaches it). False for
   * a running sandbox only when whatever held it was lost (NetnsNetwork's
   * holder killed): the node adopts it again from the sandbox's processes.
   */
  held(id: string): Promise<boolean>;
  /** Changes a running sandbox's mode and rules; the next connection follows them. */
  setRules(id: string, rules: NetworkRules): Promise<void>;
  /** A TCP connection to `port` on the sandbox's loopback (the port proxy). */
  connect(id: string, port: number): Promise<PortConnection>;
}

export type { PortConnection };
