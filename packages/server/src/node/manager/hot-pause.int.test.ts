import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run, waitFor } from '../../testing/helpers.js';
import { readHostCapacity } from './host-capacity.js';
import { exec } from '../../shared/exec.js';

/** A counter in process memory, mirrored to /tmp/count. */
const COUNTER = ['python3', '-c', "import time,os\ni=0\nwhile True:\n  i+=1\n  open('/tmp/count.tmp','w').write(str(i))\n  os.rename('/tmp/count.tmp','/tmp/count')\n  time.sleep(0.02)"];
/** The counter's start time in clock ticks since boot: a thaw keeps it, a CRIU restore makes a new task. */
const STARTED = ['python3', '-c', "import os\nfor p in os.listdir('/proc'):\n  if p.isdigit():\n    try:\n      c=open(f'/proc/{p}/cmdline','rb').read()\n    except OSError:\n      continue\n    if b'count.tmp' in c and b'listdir' not in c:\n      print(open(f'/proc/{p}/stat').read().rsplit(')',1)[1].split()[19])"];

describe('hot pauses: a resume within the window thaws the frozen tree (real runc, CRIU)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  const saved = { hot: process.env.FORKD_HOT_PAUSE_S, overcommit: process.env.FORKD_MEMORY_OVERCOMMIT };
  const count = async (id: string) => Number((await run(node.manager, id, ['cat', '/tmp/count'])).stdout);
  const started = async (id: string) => (await run(node.manager, id, STARTED)).stdout.trim();
  const frozen = async (id: string) => (await node.runtime.state(await node.manager.volume(id).then((v) => v.split('/')[1]!))).status;

  async function counting(memoryMb?: number): Promise<string> {
    const id = (await node.manager.create(memoryMb ? { memoryMb } : {})).id;
    (await node.manager.spawn(id, { argv: COUNTER, tag: 'counter' })).process.detach();
    await waitFor(async () => (await count(id)) > 3, 10_000, 'the counter to start');
    return id;
  }

  before(async () => {
    // A 2 s window; memory limits may add up to 0.25× the host, so two large sandboxes do not fit at once.
    process.env.FORKD_HOT_PAUSE_S = '2';
    process.env.FORKD_MEMORY_OVERCOMMIT = '0.25';
    node = await createTestNode();
  });
  after(async () => {
    for (const [k, v] of [['FORKD_HOT_PAUSE_S', saved.hot], ['FORKD_MEMORY_OVERCOMMIT', saved.overcommit]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await node?.dispose();
  });

  test('pause keeps the tree frozen; resume thaws it: same task, same memory, the pause snapshot recorded', async () => {
    const id = await counting();
    const task = await started(id);
    await node.manager.pause(id);
    assert.equal(await frozen(id), 'paused', 'the frozen tree is kept');
    assert.equal((await node.manager.stats()).hotPaused, 1);
    const [snap] = (await node.manager.timeline(id)).filter((s) => s.reason === 'pause');
    assert.ok(snap, 'the pause is a snapshot all the same');
    const atPause = await count(id); // resumes it
    assert.equal((await node.manager.get(id)).state, 'running');
    assert.equal(await started(id), task, 'the same task went on (a restore would have made a new one)');
    assert.ok(atPause >= 3);
    await waitFor(async () => (await count(id)) > atPause + 5, 5000, 'the counter to go on');
    await node.manager.delete(id);
  });

  test('after the window the frozen tree is gone and resume restores from the snapshot', async () => {
    const id = await counting();
    const task = await started(id);
    await node.manager.pause(id);
    await waitFor(async () => (await frozen(id)) === 'missing', 10_000, 'the window to end');
    await node.manager.resume(id);
    assert.notEqual(await started(id), task, 'restored: a new task');
    assert.ok((await count(id)) >= 3, 'from the pause snapshot');
    await node.manager.delete(id);
  });

  test('hibernation (forkd\'s own pause) keeps nothing; delete and rewind of a hot pause leave nothing behind', async () => {
    const a = await counting();
    await node.manager.hibernate(a);
    assert.equal(await frozen(a), 'missing');
    await node.manager.delete(a);

    const b = await counting();
    await node.manager.pause(b);
    const key = (await node.manager.volume(b)).split('/')[1]!;
    await node.manager.delete(b);
    assert.equal((await node.runtime.state(key)).status, 'missing', 'delete destroyed the frozen tree');

    const c = await counting();
    const early = await node.manager.snapshot(c);
    const atEarly = await count(c);
    await waitFor(async () => (await count(c)) > atEarly + 30, 5000, 'the counter to move on');
    await node.manager.pause(c);
    await node.manager.rewind(c, early.id);
    const back = await count(c);
    assert.ok(back < atEarly + 30, `rewound to the earlier snapshot, not thawed: ${back} vs ${atEarly}`);
    await node.manager.delete(c);
  });

  test('a hibernated sandbox resumes on the root volume it froze (nothing copied); a root changed since gets a fresh copy of the snapshot', async () => {
    const id = await counting();
    const subvolume = async () => (await exec('btrfs', ['inspect-internal', 'rootid', await node.manager.rootfs(id)])).stdout.trim();
    await run(node.manager, id, ['sh', '-c', 'echo before > /kept']);
    await node.manager.hibernate(id);
    const frozenRoot = await subvolume();
    await node.manager.resume(id);
    assert.equal(await subvolume(), frozenRoot, 'the same subvolume');
    const atResume = await count(id);
    await waitFor(async () => (await count(id)) > atResume + 3, 5000, 'the counter to go on');
    assert.equal((await run(node.manager, id, ['cat', '/kept'])).stdout, 'before\n');

    await node.manager.hibernate(id);
    // A change committed to the root while it is hibernated (only the host could make one).
    const root = await node.manager.rootfs(id);
    await writeFile(join(root, 'changed'), 'by the host');
    await exec('sync', ['-f', root]);
    await node.manager.resume(id);
    assert.notEqual(await subvolume(), frozenRoot, 'a new copy');
    assert.equal((await run(node.manager, id, ['test', '-e', '/changed'])).exitCode, 1, 'the files are the snapshot\'s');
    assert.equal((await run(node.manager, id, ['cat', '/kept'])).stdout, 'before\n');
    await node.manager.delete(id);
  });

  test('a create that needs the memory a hot pause holds drops it; that sandbox still resumes', async () => {
    // Each takes a bit over half of what may be committed (0.25× the host).
    const big = Math.floor((readHostCapacity().memoryMb * 0.25) / 2) + 64;
    const a = await counting(big);
    await node.manager.pause(a);
    assert.equal(await frozen(a), 'paused');
    const b = (await node.manager.create({ memoryMb: big })).id;
    assert.equal(await frozen(a), 'missing', 'admission dropped the hot pause');
    await node.manager.delete(b);
    assert.ok((await count(a)) >= 3, 'restored from its snapshot');
    await node.manager.delete(a);
  });
});
