import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tableGone } from './table-watch.js';

test("nft monitor lines: forkd's table deleted, or the whole ruleset flushed, is gone; other tables and other events are not", () => {
  assert.equal(tableGone('delete table inet forkd', 'forkd'), true);
  assert.equal(tableGone('delete table inet forkd # handle 12', 'forkd'), true);
  assert.equal(tableGone('flush ruleset', 'forkd'), true);
  assert.equal(tableGone('delete table inet forkdt1', 'forkd'), false, 'another node\'s table (a prefix of its name)');
  assert.equal(tableGone('add table inet forkd', 'forkd'), false);
  assert.equal(tableGone('delete table ip nat', 'forkd'), false);
});
