import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseQgroupTool } from './disk-quota.js';

test('forkd-qgroup show output', () => {
  assert.deepEqual(parseQgroupTool('0/257 147402752 16384 10884820992\n'), { qgroup: '0/257', referencedBytes: 147402752, exclusiveBytes: 16384, limitBytes: 10884820992 });
  assert.deepEqual(parseQgroupTool('0/257 147402752 16384 none\n'), { qgroup: '0/257', referencedBytes: 147402752, exclusiveBytes: 16384, limitBytes: undefined });
  assert.deepEqual(parseQgroupTool('1/263 10518528 10518528 20971520\n'), { qgroup: '1/263', referencedBytes: 10518528, exclusiveBytes: 10518528, limitBytes: 20971520 });
  assert.equal(parseQgroupTool(''), undefined);
  assert.equal(parseQgroupTool('257 1 1 none'), undefined);
  assert.equal(parseQgroupTool('2/5 1 1 none'), undefined);
});
