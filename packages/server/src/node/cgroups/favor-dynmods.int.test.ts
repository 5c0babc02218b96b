import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isRoot } from '../../testing/test-node.js';
import { CGROUP_FEATURES, favorDynmods, findCgroup2Mount } from './favor-dynmods.js';

const mountinfo = () => readFile('/proc/self/mountinfo', 'utf8');

test('on this host: favordynmods is on after it, with every option the cgroup2 mount had', { skip: !isRoot && 'needs root' }, async () => {
  const before = findCgroup2Mount(await mountinfo());
  const supported = (await readFile(CGROUP_FEATURES, 'utf8').catch(() => '')).split('\n').includes('favordynmods');
  const r = await favorDynmods();
  if (!supported) return assert.equal(r.outcome, 'unsupported');
  if (!before) return assert.equal(r.outcome, 'no-cgroup2');
  assert.ok(r.outcome === 'enabled' || r.outcome === 'already', JSON.stringify(r));
  assert.equal(r.outcome === 'already', before.superOptions.includes('favordynmods'));
  const after = findCgroup2Mount(await mountinfo());
  assert.ok(after, 'the cgroup2 mount is still there');
  assert.ok(after.superOptions.includes('favordynmods'), JSON.stringify(after));
  for (const o of before.superOptions) assert.ok(after.superOptions.includes(o), `hierarchy option ${o} kept`);
  for (const o of before.options) assert.ok(after.options.includes(o), `mount option ${o} kept`);
  assert.deepEqual(await favorDynmods(), { outcome: 'already', path: before.mountPoint }, 'again: nothing to do');
});
