import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseQgroupTool } from './disk-quota.js';

test('forkd-qgroup show output', () => {
  assert.deepEqual(parseQgroupTool('257 147402752 16384 10884820992\n'), { qgroup: '0/257', referencedBytes: 147402752, exclusiveBytes: 16384, limitBytes: 10884820992 });
  assert.deepEqual(parseQgroupTool('257 147402752 16384 none\n'), { qgroup: '0/257', referencedBytes: 147402752, exclusiveBytes: 16384, limitBytes: undefined });
  assert.equal(parseQgroupTool(''), undefined);
});
