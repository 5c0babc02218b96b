import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isRoot } from '../../testing/test-node.js';
import { shrinkConntrackHash } from './conntrack-dump.js';

const BUCKETS = '/proc/sys/net/netfilter/nf_conntrack_buckets';
const read = async () => Number((await readFile(BUCKETS, 'utf8')).trim());

test('the conntrack hash is shrunk to the target, never grown, and left alone with 0', { skip: (!isRoot || !existsSync(BUCKETS)) && 'needs root and conntrack' }, async () => {
  const original = await read();
  try {
    await writeFile(BUCKETS, '32768');
    assert.deepEqual(await shrinkConntrackHash(16_384), { from: 32768, to: 16_384 });
    assert.equal(await read(), 16_384);
    assert.equal(await shrinkConntrackHash(65_536), undefined, 'a larger target does not grow it');
    assert.equal(await read(), 16_384);
    await writeFile(BUCKETS, '32768');
    assert.equal(await shrinkConntrackHash(0), undefined);
    assert.equal(await read(), 32768);
  } finally {
    await writeFile(BUCKETS, String(Math.min(original, 16_384)));
  }
});
