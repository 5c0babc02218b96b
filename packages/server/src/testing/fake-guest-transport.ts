import { ForkdError } from '@forkd/protocol';
import { FORKD_GUEST_PROTOCOL } from '../node/guest/guest-frames.js';
import type { GuestClient } from '../node/guest/guest-client.js';
import type { GuestTransport } from '../node/runtime/guest-transport.js';
import type { RuntimeStatus } from '../node/runtime/runtime.js';

/**
 * A guest side without an agent (unit tests): every instance's link answers
 * at once, unless told otherwise. Records what was asked of it.
 */
export class FakeGuestTransport implements GuestTransport {
  readonly prepared: Array<{ key: string; install: boolean }> = [];
  readonly dropped: string[] = [];
  /** Instances whose agent does not answer (info and waitAgent fail). */
  readonly silent = new Set<string>();
  readonly #links = new Map<string, GuestClient>();

  at(key: string): GuestClient {
    let g = this.#links.get(key);
    if (!g) {
      const silent = () => this.silent.has(key);
      // As GuestClient: a request made while quiesced waits for the release.
      let gate: Promise<void> | undefined;
      const fake = {
        openConnections: 0,
        protocol: FORKD_GUEST_PROTOCOL,
        info: async () => {
          if (silent()) throw new ForkdError('TIMEOUT', `fake agent of ${key} does not answer`);
          return {};
        },
        setDumpable: async () => {
          await gate;
        },
        quiesce: async () => {
          let open!: () => void;
          const mine = new Promise<void>((r) => (open = r));
          gate = mine;
          return () => {
            if (gate === mine) gate = undefined;
            open();
          };
        },
        unsealing: () => {},
        sealed: () => {},
        sealFailed: () => {},
        detachAll: () => {},
      };
      g = fake as unknown as GuestClient;
      this.#links.set(key, g);
    }
    return g;
  }

  drop(key: string): void {
    this.dropped.push(key);
    this.#links.delete(key);
  }

  openConnections(): number {
    return 0;
  }

  async prepareRoot(key: string, opts: { install: boolean }): Promise<void> {
    this.prepared.push({ key, install: opts.install });
  }

  async waitAgent(key: string, status: () => Promise<RuntimeStatus>): Promise<void> {
    if (this.silent.has(key)) throw new ForkdError('TIMEOUT', `guest agent of ${key} did not become ready`);
    const st = await status();
    if (st === 'stopped' || st === 'missing') throw new ForkdError('INTERNAL', `sandbox ${key} exited during start`);
  }
}
