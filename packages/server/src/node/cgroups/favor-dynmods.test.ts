import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { favorDynmods, favorDynmodsRemountOptions, findCgroup2Mount } from './favor-dynmods.js';

const HYBRID = [
  '30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '34 30 0:31 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory',
  '40 30 0:37 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate',
  'garbage',
  '',
].join('\n');
const UNIFIED = '25 21 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n';

test('the cgroup2 mount: a hybrid host\'s unified, a v2 host\'s /sys/fs/cgroup, none on v1 only, escaped paths decoded', () => {
  assert.deepEqual(findCgroup2Mount(HYBRID), { mountPoint: '/sys/fs/cgroup/unified', options: ['rw', 'nosuid', 'nodev', 'noexec', 'relatime'], fstype: 'cgroup2', source: 'cgroup2', superOptions: ['rw', 'nsdelegate'] });
  assert.equal(findCgroup2Mount(UNIFIED)?.mountPoint, '/sys/fs/cgroup');
  assert.equal(findCgroup2Mount(HYBRID.split('\n').filter((l) => !l.includes('cgroup2')).join('\n')), undefined);
  assert.equal(findCgroup2Mount('1 2 0:3 / /cg\\040two rw - cgroup2 none rw\n')?.mountPoint, '/cg two');
  assert.equal(findCgroup2Mount('1 2 0:3 / - cgroup2\n'), undefined, 'a short line is skipped');
});

test('the remount keeps every mount and hierarchy option and adds favordynmods; nothing when it is on', () => {
  assert.equal(favorDynmodsRemountOptions(findCgroup2Mount(UNIFIED)!), 'remount,rw,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot,favordynmods');
  assert.equal(favorDynmodsRemountOptions({ options: ['rw'], superOptions: ['rw', 'favordynmods'] }), undefined);
});

test('nothing is remounted when left, when the kernel lacks the option, when there is no cgroup2, or when it is on', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-dynmods-'));
  try {
    const features = join(dir, 'features');
    const mountinfo = join(dir, 'mountinfo');
    await writeFile(features, 'nsdelegate\nmemory_localevents\n');
    await writeFile(mountinfo, UNIFIED.replace('memory_recursiveprot', 'memory_recursiveprot,favordynmods'));
    assert.deepEqual(await favorDynmods({ leave: true, features, mountinfo }), { outcome: 'left' });
    assert.deepEqual(await favorDynmods({ features, mountinfo }), { outcome: 'unsupported' });
    await writeFile(features, 'nsdelegate\nfavordynmods\n');
    assert.deepEqual(await favorDynmods({ features, mountinfo }), { outcome: 'already', path: '/sys/fs/cgroup' });
    await writeFile(mountinfo, HYBRID.replace(/.*cgroup2.*\n/, ''));
    assert.deepEqual(await favorDynmods({ features, mountinfo }), { outcome: 'no-cgroup2' });
    assert.deepEqual(await favorDynmods({ features: join(dir, 'absent'), mountinfo }), { outcome: 'unsupported' });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
