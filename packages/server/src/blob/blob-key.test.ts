import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { blobKeyError, blobPrefixError } from './blob-key.js';
import { INVALID_KEYS } from './blob-store-conformance.js';

test('blob keys: the documented shape is accepted, the rest refused with a reason', () => {
  for (const k of ['a', 'chunks/0123abcd', 'exports/sbx-1/snap.2/manifest.json', '.hidden', 'a/..b', 'a/b.', 'x'.repeat(512)]) assert.equal(blobKeyError(k), undefined, k);
  for (const k of INVALID_KEYS) assert.equal(typeof blobKeyError(k), 'string', JSON.stringify(k.slice(0, 20)));
  for (const p of ['', 'a', 'a/', 'a/.', 'a/..', 'chunks/ab']) assert.equal(blobPrefixError(p), undefined, p);
  for (const p of ['/', '/a', 'a//', '../', 'a/./', 'a b']) assert.equal(typeof blobPrefixError(p), 'string', p);
});

test('blob keys (property): anything accepted is a relative path of real segments in the safe alphabet', () => {
  const alphabet = fc.constantFrom(...'ab./-_~\\ \0é'.split(''));
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.string({ unit: alphabet, maxLength: 12 })), (k) => {
      const bad = blobKeyError(k);
      if (bad !== undefined) return;
      assert.match(k, /^[A-Za-z0-9._/-]{1,512}$/);
      for (const seg of k.split('/')) assert.ok(seg !== '' && seg !== '.' && seg !== '..', k);
      assert.equal(blobPrefixError(k), undefined, 'a key is a valid prefix');
    }),
    { numRuns: 2000 },
  );
});
