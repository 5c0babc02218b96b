import type { Socket } from 'node:net';
import { join } from 'node:path';
import { REPO_ROOT } from '../../shared/config.js';
import { spawnWithSockets } from '../../shared/exec.js';
import type { OwnerSlots } from './owner-slots.js';
import { guardListener, recordFault } from '../../shared/connection-guard.js';

const SPLICE = join(REPO_ROOT, 'packages/host-tools/build/forkd-splice');

/** Bytes relayed in Node before a connection is handed to forkd-splice (a process costs ~1 ms: only for big transfers). */
export const HANDOFF_BYTES = 1 << 20;

/**
 * Relays two sockets both ways: in Node for the first HANDOFF_BYTES, then,
 * if `slots` has one for `owner`, with both sides' buffers drained, by
 * forkd-splice (splice(2): no copy to user space). Each forkd-splice is a
 * host process (~0.3 MB with its pipes): `slots` bounds how many a sandbox
 * and the node have, and a connection that finds none stays in Node's
 * relay, slower but whole. `done` is called once, when the connection is
 * over either way.
 */
export function relay(a: Socket, b: Socket, done: () => void, o: { slots: OwnerSlots; owner: string }): void {
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
  const guard = <A extends unknown[]>(fn: (...args: A) => unknown) => guardListener('egress-proxy', finish, fn);
  const pump = (from: Socket, to: Socket) => {
    from.on('data', guard((d: Buffer) => {
      moved += d.length;
      if (!to.write(d)) from.pause();
      if (moved >= HANDOFF_BYTES && !handing && !declined) {
        const slot = o.slots.take(o.owner);
        if (slot) void handoff(slot).catch((err: unknown) => {
          // No helper took the sockets (or it failed): ours still hold the connection; end it here.
          recordFault('egress-proxy', err, { during: 'handoff' });
          slot();
          finish();
        });
        // Asked once per connection: a full node keeps the rest of it in Node.
        else declined = true;
      }
    }));
    to.on('drain', guard(() => !handing && from.resume()));
    from.on('end', guard(() => !handing && to.end()));
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
  a.on('error', guard(() => !handing && finish()));
  b.on('error', guard(() => !handing && finish()));
  a.on('close', guard(() => !handing && finish()));
  b.on('close', guard(() => !handing && finish()));
}
