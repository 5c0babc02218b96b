import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ForkdError } from '@forkd/protocol';
import type { HelperEnd } from '../../shared/exec.js';
import { LazyPagesWaits, parseMarker } from './lazy-pages-waits.js';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'forkd-lazy-waits-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A stand-in for a pages daemon: a process that ends after `ms` (cleanly, unless killed). */
function daemon(ms: number): { pid: number; exited: Promise<HelperEnd> } {
  const p = spawn('sleep', [String(ms / 1000)], { stdio: 'ignore' });
  return { pid: p.pid!, exited: new Promise((resolve) => p.once('exit', (code) => resolve(code === 0 ? 'clean' : 'failed'))) };
}

test('a dump waits until the pages daemon of its instance has ended; the marker goes with it', async () => {
  const w = new LazyPagesWaits();
  const d = daemon(300);
  await w.started('k1', dir, d);
  assert.match(await readFile(join(dir, 'lazy-pages.pid'), 'utf8'), new RegExp(`^${d.pid} \\d+\\n$`));
  const t0 = Date.now();
  await w.settled('k1', dir, 10_000);
  assert.ok(Date.now() - t0 >= 200, 'waited for the daemon');
  assert.equal(existsSync(join(dir, 'lazy-pages.pid')), false);
  await w.settled('k2', dir, 10_000); // another instance: nothing to wait for
});

test('a daemon that outlives the deadline: TIMEOUT, nothing dumped', async () => {
  const w = new LazyPagesWaits();
  const d = daemon(600);
  await w.started('k3', dir, d);
  await assert.rejects(w.settled('k3', dir, 100), (err) => err instanceof ForkdError && err.code === 'TIMEOUT');
  // Let it end in its time: then the dump goes ahead.
  assert.equal(await d.exited, 'clean');
  await w.settled('k3', dir, 1000);
});

test('after a restart of forkd the marker tells: its process is waited for; a dead or reused pid, or a damaged marker, is not', async () => {
  const d = daemon(300);
  await new LazyPagesWaits().started('k4', dir, d);
  const restarted = new LazyPagesWaits();
  const t0 = Date.now();
  await restarted.settled('k4', dir, 10_000);
  assert.ok(Date.now() - t0 >= 200, 'waited for the process on file');
  assert.equal(existsSync(join(dir, 'lazy-pages.pid')), false, 'the marker is removed');

  // A pid whose start time differs is another process now: not waited for.
  await writeFile(join(dir, 'lazy-pages.pid'), `${process.pid} 1\n`);
  const t1 = Date.now();
  await new LazyPagesWaits().settled('k4', dir, 10_000);
  assert.ok(Date.now() - t1 < 1000);
  for (const bad of ['', 'x', '12', '12 34 56', '-1 5', '0 5', `${'9'.repeat(30)} 5`, '1 2\n\n']) {
    await writeFile(join(dir, 'lazy-pages.pid'), bad);
    await new LazyPagesWaits().settled('k4', dir, 100);
  }
  // The live process on file again: a daemon that looked once and found none does not look again (only started() makes one).
  await restarted.settled('k4', dir, 10_000);
});

test('a daemon that fails: its instance is killed, then its watches fire; its dumps are refused until it is restored again', async () => {
  const events: string[] = [];
  const w = new LazyPagesWaits(async (key) => {
    events.push(`kill ${key}`);
  });
  const d = daemon(5000);
  await w.started('k5', dir, d);
  w.watchLoss('k5', () => events.push('watch'));
  const stopped = w.watchLoss('k5', () => events.push('stopped watch'));
  stopped();
  w.watchLoss('k6', () => events.push('other instance'));
  process.kill(d.pid, 'SIGKILL');
  await assert.rejects(w.settled('k5', dir, 10_000), (err) => err instanceof ForkdError && err.code === 'UNAVAILABLE');
  assert.deepEqual(events, ['kill k5', 'watch']);
  assert.equal(w.lost('k5'), true);
  // Told once: a watch that begins after the loss was told hears nothing more (no busy loop of watch, look, watch).
  w.watchLoss('k5', () => events.push('late watch'));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(events, ['kill k5', 'watch']);
  assert.equal(existsSync(join(dir, 'lazy-pages.pid')), false);
  // Restored again (recovery): whole again once that daemon ends cleanly.
  await w.started('k5', dir, daemon(10));
  assert.equal(w.lost('k5'), false);
  await w.settled('k5', dir, 10_000);
  // A kill of an instance being destroyed: forgotten, nothing lost.
  const e = daemon(5000);
  await w.started('k7', dir, e);
  w.forget('k7');
  process.kill(e.pid, 'SIGKILL');
  await e.exited;
  await w.settled('k7', dir, 1000);
  assert.equal(w.lost('k7'), false);
  assert.deepEqual(events, ['kill k5', 'watch']);
});

test('a loss before any watch is told to the first watch that comes, once', async () => {
  const events: string[] = [];
  const w = new LazyPagesWaits(async () => {
    events.push('kill');
  });
  const d = daemon(5000);
  await w.started('k9', dir, d);
  process.kill(d.pid, 'SIGKILL');
  await assert.rejects(w.settled('k9', dir, 10_000), ForkdError);
  assert.deepEqual(events, ['kill']);
  const stopped = w.watchLoss('k9', () => events.push('stopped before told'));
  stopped();
  w.watchLoss('k9', () => events.push('first'));
  w.watchLoss('k9', () => events.push('second'));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(events, ['kill', 'first']);
});

test('a daemon whose end could not be watched (forkd-spawn went) is waited for through its marker', async () => {
  const w = new LazyPagesWaits();
  const d = daemon(300);
  await w.started('k8', dir, { pid: d.pid, exited: Promise.resolve('unknown') });
  const t0 = Date.now();
  await w.settled('k8', dir, 10_000);
  assert.ok(Date.now() - t0 >= 200, 'waited for the process on file');
  assert.equal(await d.exited, 'clean');
});

test('parseMarker reads "PID STARTTIME" and nothing else', () => {
  assert.deepEqual(parseMarker('123 456\n'), { pid: 123, startTime: '456' });
  assert.deepEqual(parseMarker('123 456'), { pid: 123, startTime: '456' });
  for (const bad of ['', ' 1 2', '1  2', '1 2 3', 'a b', '0 1', '1 -2', '1 2\nx', `${'1'.repeat(11)} 2`]) assert.equal(parseMarker(bad), undefined, JSON.stringify(bad));
});
