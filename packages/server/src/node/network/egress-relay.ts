import type { Socket } from 'node:net';
import { join } from 'node:path';
import { REPO_ROOT } from '../../shared/config.js';
import { spawnWithSockets } from '../../shared/exec.js';

const SPLICE = join(REPO_ROOT, 'packages/host-tools/build/forkd-splice');

/** Bytes relayed in Node before a connection is handed to forkd-splice (a process costs ~1 ms: only for big transfers). */
export const HANDOFF_BYTES = 1 << 20;

/**
 * How many connections may be in forkd-splice processes at once, per owner
 * (a sandbox) and in all. Each is a host process (~0.3 MB with its pipes):
 * without a bound, a sandbox's 512 proxied connections were 512 processes.
 * A connection that finds no slot stays in Node's relay: slower, never refused.
 */
export class SpliceSlots {
  readonly #total: number;
  readonly #perOwner: number;
  readonly #byOwner = new Map<string, number>();
  #inUse = 0;
  /** Handoffs that found no slot (tests and the node's stats). */
  declined = 0;

  constructor(o: { total: number; perOwner: number }) {
    this.#total = o.total;
    this.#perOwner = o.perOwner;
  }

  get inUse(): number {
    return this.#inUse;
  }

  /** A slot for `owner`, or undefined; the function returned gives it back (once). */
  take(owner: string): (() => void) | undefined {
    const n = this.#byOwner.get(owner) ?? 0;
    if (n >= this.#perOwner || this.#inUse >= this.#total) {
      this.declined++;
      return undefined;
    }
    this.#byOwner.set(owner, n + 1);
    this.#inUse++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#inUse--;
      const m = (this.#byOwner.get(owner) ?? 1) - 1;
      if (m > 0) this.#byOwner.set(owner, m);
      else this.#byOwner.delete(owner);
    };
  }
}

/**
 * Relays two sockets both ways: in Node for the first HANDOFF_BYTES, then,
 * if `slots` has one for `owner`, with both sides' buffers drained, by
 * forkd-splice (splice(2): no copy to user space). `done` is called once,
 * when the connection is over either way.
 */
export function relay(a: Socket, b: Socket, done: () => void, o: { slots: SpliceSlots; owner: string }): void {
  let moved = 0;
  let handing = false;
  let declined = false;
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    a.destroy();
    b.destroy();
    done();
  };
  const pump = (from: Socket, to: Socket) => {
    from.on('data', (d: Buffer) => {
      moved += d.length;
      if (!to.write(d)) from.pause();
      if (moved >= HANDOFF_BYTES && !handing && !declined) {
        const slot = o.slots.take(o.owner);
        if (slot) void handoff(slot);
        // Asked once per connection: a full node keeps the rest of it in Node.
        else declined = true;
      }
    });
    to.on('drain', () => !handing && from.resume());
    from.on('end', () => !handing && to.end());
  };
  const handoff = async (slot: () => void) => {
    handing = true;
    a.pause();
    b.pause();
    const drained = (s: Socket) => (s.writableLength === 0 ? Promise.resolve() : new Promise<void>((r) => s.once('drain', () => r())));
    await Promise.all([drained(a), drained(b)]);
    // Bytes read but not yet delivered (paused with data in the readable buffer) go first.
    for (const [from, to] of [[a, b], [b, a]] as const) {
      let chunk: Buffer | null;
      while ((chunk = from.read() as Buffer | null) !== null) to.write(chunk);
    }
    await Promise.all([drained(a), drained(b)]);
    if (finished || a.destroyed || b.destroyed) {
      slot();
      return finish();
    }
    const exited = spawnWithSockets(SPLICE, [], [a, b]);
    // The helper holds its own copies: closing ours neither ends nor resets the connection.
    a.destroy();
    b.destroy();
    await exited;
    slot();
    finished = true;
    done();
  };
  pump(a, b);
  pump(b, a);
  a.on('error', () => !handing && finish());
  b.on('error', () => !handing && finish());
  a.on('close', () => !handing && finish());
  b.on('close', () => !handing && finish());
}
