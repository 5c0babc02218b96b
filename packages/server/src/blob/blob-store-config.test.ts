import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { loadConfig } from '../shared/config.js';
import { openBlobStore, parseBlobStoreConfig, s3Credentials } from './blob-store-config.js';
import { S3BlobStore } from './s3-blob-store.js';

const invalid = (e: unknown) => e instanceof ForkdError && e.code === 'INVALID_ARGUMENT' && e.message.startsWith('FORKD_BLOB_STORE');

test('FORKD_BLOB_STORE: a directory, or an S3 bucket with prefix, endpoint, region and style', () => {
  assert.deepEqual(parseBlobStoreConfig('dir:/var/lib/forkd/blobs'), { kind: 'dir', dir: '/var/lib/forkd/blobs' });
  assert.deepEqual(parseBlobStoreConfig('/mnt/shared'), { kind: 'dir', dir: '/mnt/shared' });
  assert.deepEqual(loadConfig({ FORKD_STATE_DIR: '/s' }).blobStore, { kind: 'dir', dir: '/s/blobs' });
  const local = parseBlobStoreConfig('s3://forkd-exports/prod/eu?endpoint=http://127.0.0.1:9000&region=eu-west-1');
  assert.deepEqual({ ...local, endpoint: local.kind === 's3' && local.endpoint.href }, { kind: 's3', bucket: 'forkd-exports', prefix: 'prod/eu/', endpoint: 'http://127.0.0.1:9000/', region: 'eu-west-1', style: 'path' });
  const aws = parseBlobStoreConfig('s3://bkt');
  assert.deepEqual({ ...aws, endpoint: aws.kind === 's3' && aws.endpoint.href }, { kind: 's3', bucket: 'bkt', prefix: '', endpoint: 'https://s3.us-east-1.amazonaws.com/', region: 'us-east-1', style: 'virtual' });
  const vh = parseBlobStoreConfig('s3://bkt/p/?endpoint=https://minio.internal&style=virtual');
  assert.equal(vh.kind === 's3' && `${vh.style} ${vh.prefix}`, 'virtual p/');
});

test('FORKD_BLOB_STORE: bad values are INVALID_ARGUMENT naming the setting; credentials in the string are refused', () => {
  for (const v of [
    'dir:relative/path',
    'relative',
    'ftp://x',
    's3://UPPER',
    's3://b:9000',
    's3://ab',
    's3://key:secret@bucket',
    's3://bucket/../x',
    's3://bucket/a b',
    's3://bucket?endpoint=ftp://x',
    's3://bucket?endpoint=http://k:s@host',
    's3://bucket?endpoint=http://host/path',
    's3://bucket?secret=x',
    's3://bucket?style=odd',
    's3://bucket?region=Bad!',
  ]) {
    assert.throws(() => parseBlobStoreConfig(v), invalid, v);
  }
  assert.throws(() => loadConfig({ FORKD_BLOB_STORE: 's3://key:secret@bucket' }), invalid);
});

test('S3 credentials: from the environment or a 0600 file; missing or exposed ones are FAILED_PRECONDITION', async () => {
  assert.deepEqual(await s3Credentials({ FORKD_S3_ACCESS_KEY_ID: 'AK', FORKD_S3_SECRET_ACCESS_KEY: 'SK' }), { accessKeyId: 'AK', secretAccessKey: 'SK', sessionToken: undefined });
  const precondition = (e: unknown) => e instanceof ForkdError && e.code === 'FAILED_PRECONDITION' && !e.message.includes('SK2');
  await assert.rejects(s3Credentials({ FORKD_S3_ACCESS_KEY_ID: 'AK' }), precondition);
  const dir = await mkdtemp(join(tmpdir(), 'forkd-s3cred-'));
  try {
    const file = join(dir, 'creds');
    await writeFile(file, '# forkd\nFORKD_S3_ACCESS_KEY_ID = AK2\nFORKD_S3_SECRET_ACCESS_KEY=SK2\nFORKD_S3_SESSION_TOKEN=T\n', { mode: 0o600 });
    assert.deepEqual(await s3Credentials({ FORKD_S3_CREDENTIALS_FILE: file }), { accessKeyId: 'AK2', secretAccessKey: 'SK2', sessionToken: 'T' });
    await chmod(file, 0o644);
    await assert.rejects(s3Credentials({ FORKD_S3_CREDENTIALS_FILE: file }), precondition);
    await assert.rejects(s3Credentials({ FORKD_S3_CREDENTIALS_FILE: join(dir, 'absent') }), precondition);

    const store = await openBlobStore(parseBlobStoreConfig(`dir:${join(dir, 'blobs')}`));
    await store.put('k', new Uint8Array([1]));
    assert.equal(store.describe(), `dir:${join(dir, 'blobs')}`);
    const s3 = await openBlobStore(parseBlobStoreConfig('s3://bkt/x?endpoint=http://127.0.0.1:9'), { FORKD_S3_ACCESS_KEY_ID: 'AK', FORKD_S3_SECRET_ACCESS_KEY: 'verysecret' });
    assert.ok(s3 instanceof S3BlobStore);
    assert.equal(s3.describe(), 's3://bkt/x/ at http://127.0.0.1:9 (us-east-1, path-style)');
    s3.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
