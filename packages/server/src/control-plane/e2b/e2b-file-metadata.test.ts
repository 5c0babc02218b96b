import { test } from 'node:test';
import assert from 'node:assert/strict';
import { e2bMetadata, uploadMetadata } from './e2b-file-metadata.js';

test("X-Metadata-* headers become forkd's e2b.* keys, lowercased, first value of a repeat", () => {
  const headers = { 'x-metadata-author': 'mish, again', 'x-metadata-purpose': 'upload', 'x-metadata-': 'ignored', 'content-type': 'text/plain' };
  const distinct = { 'x-metadata-author': ['mish', 'again'], 'x-metadata-purpose': ['upload'], 'x-metadata-': ['ignored'] };
  assert.deepEqual(uploadMetadata(headers, distinct), { 'e2b.author': 'mish', 'e2b.purpose': 'upload' });
  assert.deepEqual(uploadMetadata({}, {}), {});
});

test("envd's limits: a 246-byte key is the longest, 4096 bytes in all, printable ASCII values", () => {
  const ok = `x-metadata-${'k'.repeat(246)}`;
  assert.equal(typeof uploadMetadata({ [ok]: 'v' }, { [ok]: ['v'] }), 'object');
  const long = `x-metadata-${'k'.repeat(247)}`;
  assert.equal(typeof uploadMetadata({ [long]: 'v' }, { [long]: ['v'] }), 'string');
  assert.equal(typeof uploadMetadata({ 'x-metadata-k': 'v'.repeat(4096) }, { 'x-metadata-k': ['v'.repeat(4096)] }), 'string');
  assert.equal(typeof uploadMetadata({ 'x-metadata-k': 'é' }, { 'x-metadata-k': ['é'] }), 'string');
});

test('E2B sees only its own keys, without the prefix', () => {
  assert.deepEqual(e2bMetadata({ 'e2b.author': 'mish', mine: 'forkd', 'e2b.': 'x' }), { author: 'mish' });
  assert.deepEqual(e2bMetadata(undefined), {});
});
