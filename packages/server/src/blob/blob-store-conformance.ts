import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { ForkdError } from '@forkd/protocol';
import type { BlobStore } from './blob-store.js';

export interface ConformanceTarget {
  store: BlobStore;
  /** Strings `describe()` must not contain (secrets). */
  secrets?: string[];
  close(): Promise<void>;
}

async function collect(it: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const k of it) out.push(k);
  return out;
}

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const text = (s: string) => new TextEncoder().encode(s);

async function rejectsCode(p: Promise<unknown>, code: string, what: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof ForkdError && e.code === code, what);
}

/** Runs `fn` over `items`, `width` at a time. */
async function pool<T>(items: T[], width: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

export const INVALID_KEYS = ['', '/a', 'a/', 'a//b', '../a', 'a/../b', 'a/./b', '.', '..', 'a b', 'a\0b', 'a~', 'é', 'a\\b', 'x'.repeat(513), 'a/..'];

/**
 * The one suite every BlobStore passes (see blob-store.ts). `open` gives a
 * fresh, empty store for the suite; each test uses keys of its own.
 */
export function blobStoreConformance(name: string, open: () => Promise<ConformanceTarget>): void {
  describe(`BlobStore conformance: ${name}`, () => {
    let t: ConformanceTarget;
    before(async () => {
      t = await open();
    });
    after(async () => {
      await t?.close();
    });

    test('put, get, has: bytes round-trip; absent keys are undefined / false', async () => {
      const s = t.store;
      assert.equal(await s.get('rt/a'), undefined);
      assert.equal(await s.has('rt/a'), false);
      await s.put('rt/a', text('hello'));
      await s.put('rt/empty', new Uint8Array(0));
      assert.deepEqual(Buffer.from((await s.get('rt/a'))!), Buffer.from('hello'));
      assert.equal((await s.get('rt/empty'))?.length, 0);
      assert.equal(await s.has('rt/a'), true);
      assert.equal(await s.has('rt/empty'), true);
      assert.equal(await s.has('rt'), false, 'a key prefix is not an object');
    });

    test('put replaces; delete removes; deleting an absent key is not an error', async () => {
      const s = t.store;
      await s.put('rd/k', text('one'));
      await s.put('rd/k', text('two, longer'));
      assert.equal(Buffer.from((await s.get('rd/k'))!).toString(), 'two, longer');
      await s.delete('rd/k');
      assert.equal(await s.has('rd/k'), false);
      assert.equal(await s.get('rd/k'), undefined);
      await s.delete('rd/k');
      await s.delete('rd/never/was');
      assert.deepEqual(await collect(s.list('rd/')), []);
    });

    test('a key and keys under it are separate objects', async () => {
      const s = t.store;
      await s.put('nest/a', text('1'));
      await s.put('nest/a/b', text('2'));
      await s.put('nest/a.b', text('3'));
      assert.equal(Buffer.from((await s.get('nest/a'))!).toString(), '1');
      assert.equal(Buffer.from((await s.get('nest/a/b'))!).toString(), '2');
      assert.deepEqual(await collect(s.list('nest/')), ['nest/a', 'nest/a.b', 'nest/a/b']);
      await s.delete('nest/a');
      assert.equal(Buffer.from((await s.get('nest/a/b'))!).toString(), '2');
    });

    test('list: every key with the prefix, in byte order, a partial segment matching', async () => {
      const s = t.store;
      const keys = ['ls/b', 'ls/a-1', 'ls/a/x', 'ls/a/y/z', 'ls/a.b', 'ls/A', 'ls/0', 'ls/ab', 'ls/a', 'lsx', 'ls_'];
      for (const k of keys) await s.put(k, text(k));
      const sorted = keys.filter((k) => k.startsWith('ls/')).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      assert.deepEqual(await collect(s.list('ls/')), sorted);
      assert.deepEqual(await collect(s.list('ls/a')), sorted.filter((k) => k.startsWith('ls/a')));
      assert.deepEqual(await collect(s.list('ls/a/')), ['ls/a/x', 'ls/a/y/z']);
      assert.deepEqual(await collect(s.list('ls/q')), []);
      const all = await collect(s.list(''));
      assert.deepEqual(all, [...all].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
      for (const k of keys) assert.ok(all.includes(k), k);
    });

    test('list pages through more than 1000 keys', async () => {
      const s = t.store;
      const keys = Array.from({ length: 1105 }, (_, i) => `many/${String(i).padStart(5, '0')}`);
      await pool(keys, 16, (k) => s.put(k, text(k.slice(5))));
      const listed = await collect(s.list('many/'));
      assert.equal(listed.length, keys.length);
      assert.deepEqual(listed, keys);
    });

    test('invalid keys and prefixes are refused with INVALID_ARGUMENT, before anything is stored', async () => {
      const s = t.store;
      for (const k of INVALID_KEYS) {
        const what = JSON.stringify(k.slice(0, 20));
        await rejectsCode(s.put(k, text('x')), 'INVALID_ARGUMENT', `put ${what}`);
        await rejectsCode(s.get(k), 'INVALID_ARGUMENT', `get ${what}`);
        await rejectsCode(s.has(k), 'INVALID_ARGUMENT', `has ${what}`);
        await rejectsCode(s.delete(k), 'INVALID_ARGUMENT', `delete ${what}`);
      }
      for (const p of ['/', 'a//', '../', 'a/../', 'a b', 'x'.repeat(513)]) {
        // Refused when called or when iterated: either reaches a `for await`.
        await rejectsCode((async () => collect(s.list(p)))(), 'INVALID_ARGUMENT', `list ${JSON.stringify(p.slice(0, 20))}`);
      }
      assert.equal(await s.has('a'), false);
    });

    test('concurrent puts: different keys all land; one key ends as one whole writer', async () => {
      const s = t.store;
      const bodies = Array.from({ length: 8 }, (_, i) => randomBytes(200_000 + i));
      await Promise.all(bodies.map((b, i) => s.put(`conc/${i}`, b)));
      for (const [i, b] of bodies.entries()) assert.equal(sha((await s.get(`conc/${i}`))!), sha(b));
      await Promise.all(bodies.map((b) => s.put('conc/same', b)));
      const got = sha((await s.get('conc/same'))!);
      assert.ok(bodies.some((b) => sha(b) === got), 'the object is one writer\'s bytes, not a mix');
    });

    test('a large object (16 MiB) round-trips', async () => {
      const s = t.store;
      const big = randomBytes(16 << 20);
      await s.put('large/obj', big);
      const got = await s.get('large/obj');
      assert.equal(got?.length, big.length);
      assert.equal(sha(got!), sha(big));
      await s.delete('large/obj');
    });

    test('a reader during a replace sees the old object or the new one, whole', async () => {
      const s = t.store;
      const old = randomBytes(1 << 20);
      const neu = randomBytes(8 << 20);
      await s.put('atomic/k', old);
      const ok = new Set([sha(old), sha(neu)]);
      const writing = s.put('atomic/k', neu);
      let done = false;
      void writing.finally(() => (done = true)).catch(() => {});
      let reads = 0;
      while (!done || reads === 0) {
        const got = await s.get('atomic/k');
        assert.ok(got && ok.has(sha(got)), 'a whole object');
        reads++;
      }
      await writing;
      assert.equal(sha((await s.get('atomic/k'))!), sha(neu));
    });

    test('describe() names the store without secrets', () => {
      const d = t.store.describe();
      assert.ok(d.length > 0);
      for (const secret of t.secrets ?? []) assert.ok(!d.includes(secret), 'describe() leaks a secret');
    });
  });
}
