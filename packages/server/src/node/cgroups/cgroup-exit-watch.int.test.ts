import { spawn } from 'node:child_process';
import { mkdir, rmdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isRoot } from '../../testing/test-node.js';
import { unifiedEventsFile, watchCgroupEmpty } from './cgroup-exit-watch.js';

const PATH = `/forkd-exit-watch-${process.pid}`;
const events = unifiedEventsFile(PATH);

test('a cgroup whose last process dies is announced (inotify on cgroup.events), not found by polling', { skip: (!isRoot && 'needs root') || (!events && 'no unified hierarchy') }, async () => {
  const dir = dirname(events!);
  await mkdir(dir);
  const child = spawn('sleep', ['1000'], { stdio: 'ignore' });
  try {
    await writeFile(`${dir}/cgroup.procs`, String(child.pid));
    let fired = 0;
    const announced = new Promise<void>((resolve) => {
      const stop = watchCgroupEmpty(PATH, () => {
        fired++;
        resolve();
      });
      assert.ok(stop, 'watched');
    });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(fired, 0, 'not while a process is in it');
    const t0 = Date.now();
    child.kill('SIGKILL');
    await announced;
    assert.ok(Date.now() - t0 < 5000);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(fired, 1, 'once');
    assert.equal(watchCgroupEmpty(`${PATH}-missing`, () => {}), undefined, 'no such cgroup: the caller looks for itself');
    // Already empty when the watch is made: announced at once.
    await new Promise<void>((resolve) => watchCgroupEmpty(PATH, resolve));
  } finally {
    child.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 100));
    await rmdir(dir).catch(() => {});
  }
});
