import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { readNdjson } from './ndjson.js';

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> & { cancelled: () => boolean } {
  let i = 0;
  let cancelled = false;
  const s = new ReadableStream<Uint8Array>({
    pull(c) {
      if (i < chunks.length) c.enqueue(chunks[i++]!);
      else c.close();
    },
    cancel() {
      cancelled = true;
    },
  });
  return Object.assign(s, { cancelled: () => cancelled });
}

async function collect(chunks: Uint8Array[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const o of readNdjson(streamOf(chunks))) out.push(o);
  return out;
}

const objects = [{ type: 'started', pid: 7, pty: false }, { type: 'stdout', data: 'aGVsbG8=' }, { type: 'note', text: 'héllo ✓ 日本' }, { type: 'exit', exitCode: 0, signal: 0, oomKilled: false }];
const text = objects.map((o) => JSON.stringify(o)).join('\n') + '\n';

test('lines split at every possible byte boundary parse the same', async () => {
  const bytes = new TextEncoder().encode(text);
  for (let cut = 1; cut < bytes.length; cut++) {
    assert.deepEqual(await collect([bytes.subarray(0, cut), bytes.subarray(cut)]), objects, `cut at ${cut}`);
  }
});

test('one byte per chunk (multi-byte characters split) parses the same', async () => {
  const bytes = new TextEncoder().encode(text);
  assert.deepEqual(await collect([...bytes].map((b) => new Uint8Array([b]))), objects);
});

test('several lines per chunk, blank lines, and a last line without newline', async () => {
  const enc = new TextEncoder();
  assert.deepEqual(await collect([enc.encode('{"a":1}\n\n{"b"'), enc.encode(':2}\n  \n{"c":3}')]), [{ a: 1 }, { b: 2 }, { c: 3 }]);
  assert.deepEqual(await collect([]), []);
});

test('a malformed line is an INTERNAL ForkdError', async () => {
  await assert.rejects(collect([new TextEncoder().encode('{"a":1}\nnot json\n')]), (err: unknown) => err instanceof ForkdError && err.code === 'INTERNAL');
});

test('leaving early cancels the body (a detach for the server)', async () => {
  const s = streamOf([new TextEncoder().encode('{"a":1}\n'), new TextEncoder().encode('{"a":2}\n')]);
  for await (const _ of readNdjson(s)) break;
  assert.equal(s.cancelled(), true);
});

test('a body that fails mid-stream is UNAVAILABLE', async () => {
  let n = 0;
  const s = new ReadableStream<Uint8Array>({
    pull(c) {
      if (n++ === 0) c.enqueue(new TextEncoder().encode('{"a":1}\n'));
      else c.error(new TypeError('terminated'));
    },
  });
  const seen: unknown[] = [];
  await assert.rejects(
    (async () => {
      for await (const o of readNdjson(s)) seen.push(o);
    })(),
    (err: unknown) => err instanceof ForkdError && err.code === 'UNAVAILABLE',
  );
  assert.deepEqual(seen, [{ a: 1 }]);
});
