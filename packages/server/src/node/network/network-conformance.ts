import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Duplex } from 'node:stream';
import { LOOPBACK_ONLY, type NetworkRules } from '@forkd/protocol';
import type { Network } from './network.js';

/**
 * What the suite runs a Network with, made once for the whole suite. Every
 * test uses ids of its own; what a failed test leaves goes with `close`.
 */
export interface NetworkHarness {
  network: Network;
  /** Something on the loopback of the namespace at `path` (id `id`) echoing what it reads on `port`; the returned function stops it. */
  echo(id: string, path: string, port: number): Promise<() => Promise<void>>;
  /** A process in a network namespace of its own (as a runtime makes one inside a user namespace). */
  process(): Promise<{ pid: number; stop(): Promise<void> }>;
  /** Whether the namespace at `path` (id `id`) is the one process `pid` is in. */
  sameNamespace(id: string, path: string, pid: number): Promise<boolean>;
  /** The host's network interfaces. */
  hostLinks(): Promise<string[]>;
  close(): Promise<void>;
}

export interface NetworkConformanceOptions {
  /** Why the suite cannot run here (e.g. it needs root), or false. */
  skip?: string | false;
}

/** A connection's stream may be cut under the reader when it is closed (the relay killed): that is no failure here. */
function quiet(stream: Duplex): Duplex {
  stream.on('error', () => {});
  return stream;
}

const EGRESS: NetworkRules = { mode: 'egress', allowOut: [], denyOut: [] };

/** Writes `data` and reads until as many bytes came back (or the stream ends). */
async function roundTrip(stream: Duplex, data: string): Promise<string> {
  quiet(stream);
  let got = '';
  const done = new Promise<void>((resolve, reject) => {
    stream.on('data', (d: Buffer) => {
      got += d.toString();
      if (got.length >= data.length) resolve();
    });
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  stream.write(data);
  await done;
  return got;
}

/**
 * The contract every Network passes (NetnsNetwork, and the FakeNetwork unit
 * tests of the manager and runtime run on), as node:test tests under `name`:
 * what a runtime relies on (prepare, adopt, the ends of a restored veth,
 * release, list) and what the node relies on (rules, the port proxy's
 * connections).
 */
export function networkConformance(name: string, open: () => Promise<NetworkHarness>, opts: NetworkConformanceOptions = {}): void {
  describe(`Network conformance: ${name}`, { skip: opts.skip ?? false }, () => {
    let h: NetworkHarness;
    let n = 0;
    const id = (what: string) => `nc-${what}-${++n}`;

    before(async () => {
      h = await open();
    });
    after(async () => {
      await h?.close();
    });

    test('prepare makes a namespace with loopback up, the same one when asked again; list names it; release removes it, idempotently', async () => {
      const a = id('prepare');
      const path = await h.network.prepare(a);
      assert.equal(await h.network.prepare(a, LOOPBACK_ONLY), path);
      assert.ok((await h.network.list()).includes(a));
      assert.equal(await h.network.held(a), true);
      assert.equal(await h.network.held(id('never')), false);
      const stop = await h.echo(a, path, 7001);
      try {
        const c = await h.network.connect(a, 7001);
        assert.equal(await roundTrip(c.stream, 'ping'), 'ping');
        c.close();
        assert.equal((await c.done).refused, false);
      } finally {
        await stop();
      }
      await h.network.release(a);
      assert.ok(!(await h.network.list()).includes(a));
      assert.equal(await h.network.held(a), false);
      await h.network.release(a);
      await h.network.release(id('never'));
    });

    test('connect to a port nothing listens on is refused; to an id without a namespace it fails, not refused', async () => {
      const a = id('refused');
      await h.network.prepare(a);
      const c = await h.network.connect(a, 7002);
      quiet(c.stream).resume();
      assert.deepEqual((await c.done).refused, true);
      await h.network.release(a);
      const gone = await h.network.connect(id('nons'), 7002);
      quiet(gone.stream).resume();
      const r = await gone.done;
      assert.equal(r.refused, false);
      assert.ok(r.error, 'an error is given');
    });

    test('adopt takes the namespace a process is in (over one prepare made, or an adopt), with loopback up; release lets go of it', async () => {
      const a = id('adopt');
      await h.network.prepare(a);
      const p = await h.process();
      try {
        const path = await h.network.adopt(a, p.pid, LOOPBACK_ONLY);
        assert.equal(await h.sameNamespace(a, path, p.pid), true);
        assert.ok((await h.network.list()).includes(a));
        const stop = await h.echo(a, path, 7003);
        try {
          const c = await h.network.connect(a, 7003);
          assert.equal(await roundTrip(c.stream, 'pong'), 'pong');
          c.close();
          await c.done;
        } finally {
          await stop();
        }
        // Again, from another process (a rewind's restore): the id now holds that one's namespace.
        const q = await h.process();
        try {
          assert.equal(await h.network.adopt(a, q.pid, LOOPBACK_ONLY), path);
          assert.equal(await h.sameNamespace(a, path, q.pid), true);
          assert.equal(await h.sameNamespace(a, path, p.pid), false);
        } finally {
          await q.stop();
        }
        await h.network.release(a);
        assert.ok(!(await h.network.list()).includes(a));
      } finally {
        await p.stop();
      }
    });

    test('restoredVeth: the sandbox end is sandboxLink, the host end the id\'s own, the same until release, another id\'s another', async () => {
      const [a, b] = [id('veth'), id('veth')];
      await h.network.prepare(a);
      await h.network.prepare(b);
      const va = await h.network.restoredVeth(a);
      assert.equal(va.sandbox, h.network.sandboxLink);
      assert.ok(va.host.length > 0 && va.host.length <= 15, `an interface name: ${va.host}`);
      assert.deepEqual(await h.network.restoredVeth(a), va);
      const vb = await h.network.restoredVeth(b);
      assert.notEqual(vb.host, va.host);
      assert.ok(!(await h.hostLinks()).includes(va.host), 'only named: the runtime\'s restore makes the pair');
      await h.network.release(a);
      await h.network.release(b);
    });

    test('egress rules give the namespace a veth whose host end is restoredVeth\'s; none takes it away; release removes it', async () => {
      const a = id('egress');
      await h.network.prepare(a, EGRESS);
      const { host } = await h.network.restoredVeth(a);
      assert.ok((await h.hostLinks()).includes(host));
      await h.network.setRules(a, LOOPBACK_ONLY);
      assert.ok(!(await h.hostLinks()).includes(host));
      await h.network.setRules(a, EGRESS);
      assert.ok((await h.hostLinks()).includes(host));
      await h.network.release(a);
      assert.ok(!(await h.hostLinks()).includes(host));
      assert.ok(!(await h.network.list()).includes(a));
    });
  });
}
