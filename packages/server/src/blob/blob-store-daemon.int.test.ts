import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { startNodeProcess, stopDaemonProcess } from '../testing/daemon-process.js';
import { startS3TestServer } from '../testing/s3-test-server.js';
import { NodeHttpClient } from '../node-http/node-http-client.js';
import { S3BlobStore } from './s3-blob-store.js';

// FORKD_BLOB_STORE end to end: a real `forkd serve --role node` exports a snapshot into an S3 server the test starts.
test('a node process exports to the s3:// store FORKD_BLOB_STORE names; its log names the store, never the secret', { skip: !isRoot && 'needs root' }, async () => {
  const s3 = await startS3TestServer();
  const dir = await mkdtemp(join(tmpdir(), 'forkd-blob-daemon-'));
  const base = testConfig(dir);
  const env = { ...base.env, FORKD_BLOB_STORE: `s3://${s3.bucket}/node-a?endpoint=${s3.endpoint}`, FORKD_S3_ACCESS_KEY_ID: s3.accessKeyId, FORKD_S3_SECRET_ACCESS_KEY: s3.secretAccessKey };
  const store = new S3BlobStore({ endpoint: new URL(s3.endpoint), bucket: s3.bucket, region: 'us-east-1', style: 'path', prefix: 'node-a/', credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
  let proc: Awaited<ReturnType<typeof startNodeProcess>> | undefined;
  let client: NodeHttpClient | undefined;
  try {
    proc = await startNodeProcess(env);
    client = new NodeHttpClient({ url: proc.url, token: proc.token });
    const id = (await client.create({ memoryMb: 128 })).id;
    const snap = await client.snapshot(id, {});
    const ex = await client.exportSnapshot(snap.id);
    assert.ok(ex.bytesUploaded > 1 << 20, `uploaded ${ex.bytesUploaded} bytes`);
    assert.equal(await store.has(ex.manifest), true, 'the manifest is in the bucket, under the prefix');
    let chunks = 0;
    for await (const k of store.list('')) if (k.includes('chunks/')) chunks++;
    assert.ok(chunks > 0);
    await client.delete(id);
    assert.match(proc.log(), new RegExp(`"store":"s3://${s3.bucket}/node-a/ at ${s3.endpoint}`));
    assert.ok(!proc.log().includes(s3.secretAccessKey), 'the secret is not logged');
  } finally {
    client?.close();
    await stopDaemonProcess(proc, 'SIGTERM');
    await disposeNodeDir(undefined, dir, base.config);
    store.close();
    await s3.close();
  }
});

test('a node whose s3:// store has no credentials does not start, and says what is missing', { skip: !isRoot && 'needs root' }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-blob-daemon-'));
  const base = testConfig(dir);
  const env = { ...base.env, FORKD_BLOB_STORE: 's3://bucket?endpoint=http://127.0.0.1:9', FORKD_S3_ACCESS_KEY_ID: '', FORKD_S3_SECRET_ACCESS_KEY: '', FORKD_S3_CREDENTIALS_FILE: '' };
  try {
    await assert.rejects(startNodeProcess(env), /FORKD_S3_ACCESS_KEY_ID and FORKD_S3_SECRET_ACCESS_KEY/);
  } finally {
    await disposeNodeDir(undefined, dir, base.config);
  }
});
