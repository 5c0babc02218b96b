import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { startS3TestServer, type S3TestServer } from '../testing/s3-test-server.js';
import { blobStoreConformance } from './blob-store-conformance.js';
import { S3BlobStore, type S3BlobStoreOptions } from './s3-blob-store.js';
import { readChunked, writeChunked } from './chunked.js';
import { pseudoRandom } from '../testing/pseudo-random.js';

function storeOf(s: S3TestServer, over: Partial<S3BlobStoreOptions> = {}): S3BlobStore {
  return new S3BlobStore({
    endpoint: new URL(s.endpoint),
    bucket: s.bucket,
    region: 'us-east-1',
    style: 'path',
    prefix: 'p/',
    credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey },
    ...over,
  });
}

blobStoreConformance('S3BlobStore (s3rver)', async () => {
  const server = await startS3TestServer();
  const store = storeOf(server);
  return {
    store,
    secrets: [server.secretAccessKey],
    async close() {
      store.close();
      await server.close();
    },
  };
});

test('S3BlobStore: a wrong secret or unknown key id is refused (PERMISSION_DENIED); a missing bucket is FAILED_PRECONDITION', async () => {
  const server = await startS3TestServer();
  const stores: S3BlobStore[] = [];
  try {
    const good = storeOf(server);
    stores.push(good);
    await good.put('k', new Uint8Array([1]));
    const denied = (e: unknown) => e instanceof ForkdError && e.code === 'PERMISSION_DENIED' && !e.message.includes(server.secretAccessKey);
    for (const credentials of [
      { accessKeyId: server.accessKeyId, secretAccessKey: `${server.secretAccessKey}x` },
      { accessKeyId: 'NOSUCHKEY', secretAccessKey: server.secretAccessKey },
    ]) {
      const bad = storeOf(server, { credentials });
      stores.push(bad);
      await assert.rejects(bad.put('k', new Uint8Array([2])), denied);
      await assert.rejects(bad.get('k'), denied);
    }
    assert.deepEqual([...(await good.get('k'))!], [1], 'a refused put changed nothing');
    const nobucket = storeOf(server, { bucket: 'no-such-bucket' });
    stores.push(nobucket);
    await assert.rejects(nobucket.put('k', new Uint8Array([1])), (e: unknown) => e instanceof ForkdError && e.code === 'FAILED_PRECONDITION');
  } finally {
    for (const s of stores) s.close();
    await server.close();
  }
});

test('S3BlobStore: an unreachable endpoint is UNAVAILABLE after retries', async () => {
  const store = new S3BlobStore({ endpoint: new URL('http://127.0.0.1:1'), bucket: 'b', region: 'us-east-1', style: 'path', prefix: '', credentials: { accessKeyId: 'a', secretAccessKey: 'b' }, attempts: 2 });
  await assert.rejects(store.has('k'), (e: unknown) => e instanceof ForkdError && e.code === 'UNAVAILABLE');
  store.close();
});

test('S3BlobStore: a chunked export round-trips, and a second export of the same bytes uploads nothing', async () => {
  const server = await startS3TestServer();
  const store = storeOf(server);
  try {
    const data = pseudoRandom(8 << 20, 11);
    async function* src() {
      yield data;
    }
    const first = await writeChunked(store, src(), { prefix: 'x/' });
    assert.equal(first.bytesUploaded, data.length);
    const second = await writeChunked(store, src(), { prefix: 'x/' });
    assert.equal(second.bytesUploaded, 0);
    const parts: Uint8Array[] = [];
    for await (const c of readChunked(store, first.object, { prefix: 'x/' })) parts.push(c);
    assert.deepEqual(Buffer.concat(parts), data);
  } finally {
    store.close();
    await server.close();
  }
});
