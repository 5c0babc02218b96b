import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseQgroupShow, parseQgroupTool } from './disk-quota.js';

test('parses the level-0 row of btrfs qgroup show --raw -r -f', () => {
  const out = ['Qgroupid    Referenced    Exclusive  Max referenced   Path ', '--------    ----------    ---------  --------------   ---- ', '0/259        214626304     66613248       214642688   sandboxes/sbx-uuy7xepuzeaa.880a52c9', ''].join('\n');
  assert.deepEqual(parseQgroupShow(out), { qgroup: '0/259', referencedBytes: 214626304, exclusiveBytes: 66613248, limitBytes: 214642688 });
  assert.deepEqual(parseQgroupShow('0/256        147533824        16384            none   templates/base\n'), { qgroup: '0/256', referencedBytes: 147533824, exclusiveBytes: 16384, limitBytes: undefined });
  assert.equal(parseQgroupShow('ERROR: quotas not enabled\n'), undefined);
});

test('forkd-qgroup show output', () => {
  assert.deepEqual(parseQgroupTool('257 147402752 16384 10884820992\n'), { qgroup: '0/257', referencedBytes: 147402752, exclusiveBytes: 16384, limitBytes: 10884820992 });
  assert.deepEqual(parseQgroupTool('257 147402752 16384 none\n'), { qgroup: '0/257', referencedBytes: 147402752, exclusiveBytes: 16384, limitBytes: undefined });
  assert.equal(parseQgroupTool(''), undefined);
});
