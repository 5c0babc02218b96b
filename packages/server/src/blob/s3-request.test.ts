import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requestTarget } from './s3-request.js';

test('S3 request targets: path-style puts the bucket in the path, virtual-hosted in the host name', () => {
  const endpoint = new URL('http://minio.internal:9000');
  assert.deepEqual(requestTarget({ endpoint, bucket: 'b', region: 'r', style: 'path' }, 'p/chunks/ab'), { hostname: 'minio.internal', host: 'minio.internal:9000', path: '/b/p/chunks/ab' });
  assert.deepEqual(requestTarget({ endpoint, bucket: 'b', region: 'r', style: 'path' }, undefined), { hostname: 'minio.internal', host: 'minio.internal:9000', path: '/b' });
  assert.deepEqual(requestTarget({ endpoint, bucket: 'b', region: 'r', style: 'virtual' }, 'k'), { hostname: 'b.minio.internal', host: 'b.minio.internal:9000', path: '/k' });
  const aws = new URL('https://s3.eu-west-1.amazonaws.com');
  assert.deepEqual(requestTarget({ endpoint: aws, bucket: 'b', region: 'eu-west-1', style: 'virtual' }, undefined), { hostname: 'b.s3.eu-west-1.amazonaws.com', host: 'b.s3.eu-west-1.amazonaws.com', path: '/' });
});
