import { ForkdError } from '@forkd/protocol';
import type { PortConnection } from '../../node-contract/node-types.js';
import type { Network } from '../network/network.js';
import { OwnerSlots } from '../network/owner-slots.js';

/**
 * Port-proxy connections open at once, per sandbox and on the node: each is
 * a socket of the daemon (and one being made a request to forkd-netns-dial),
 * so a client opening them without end would use up the daemon's file
 * descriptors (refused with RESOURCE_EXHAUSTED).
 */
export const MAX_PORT_CONNECTIONS_PER_SANDBOX = 64;
export const MAX_PORT_CONNECTIONS = 512;

/** Port connections of every sandbox, capped; an open one counts as activity every 10 s. */
export class PortConnections {
  readonly #slots = new OwnerSlots({ total: MAX_PORT_CONNECTIONS, perOwner: MAX_PORT_CONNECTIONS_PER_SANDBOX });

  constructor(
    private readonly network: Network,
    private readonly markActive: (id: string) => void,
  ) {}

  async open(id: string, instanceKey: string, port: number): Promise<PortConnection> {
    const release = this.#slots.take(id);
    if (!release) {
      throw new ForkdError('RESOURCE_EXHAUSTED', `too many port connections open (at most ${MAX_PORT_CONNECTIONS_PER_SANDBOX} per sandbox, ${MAX_PORT_CONNECTIONS} per node)`, {
        limitPerSandbox: MAX_PORT_CONNECTIONS_PER_SANDBOX,
        limitPerNode: MAX_PORT_CONNECTIONS,
      });
    }
    let c: PortConnection;
    try {
      c = await this.network.connect(instanceKey, port);
    } catch (err) {
      release();
      throw err;
    }
    const tick = setInterval(() => this.markActive(id), 10_000);
    void c.done.finally(() => {
      clearInterval(tick);
      release();
    }).catch(() => {});
    return c;
  }
}
