import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdClient } from '@forkd/sdk';
import { randomPort, startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { attachCounters, finishCounters, lines, startTimes } from '../testing/resumed-counters.js';
import { olderBuild } from '../testing/older-build.js';

/**
 * The commit upgraded from: the first whose daemon lets clients resume
 * their streams (what the test needs of the old side), and whose on-disk
 * state later commits read. FORKD_UPGRADE_FROM names another.
 */
const FROM = process.env.FORKD_UPGRADE_FROM || '0c3ecfd5a62baedef69e552d3c93402f0711a235';

/**
 * An upgrade as an operator does it: the older build's daemon serves a
 * sandbox with a counter and an SDK stream attached to it, is stopped as
 * systemd's KillMode=process stops it (SIGTERM to the daemon only), and this
 * build's daemon starts on the same state: the same processes run on (no
 * restore), and the stream resumes with nothing lost or repeated.
 */
describe('upgrade between two commits keeps sessions', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig> | undefined;
  let daemon: DaemonProcess | undefined;
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir && cfg) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test(`from ${FROM.slice(0, 12)} to this build: same pids, no restore, the counter went on, every attached stream resumed and ended with its exit code`, async (t) => {
    const older = await olderBuild(FROM);
    if (!older) return t.skip(`commit ${FROM} is not in this clone (shallow?)`);
    t.diagnostic(older.buildMs ? `built ${FROM.slice(0, 12)} in ${(older.buildMs / 1000).toFixed(1)} s` : `reused the build of ${FROM.slice(0, 12)}`);
    dir = await mkdtemp(join(tmpdir(), 'forkd-upgrade-'));
    cfg = testConfig(dir);
    const port = randomPort();
    daemon = await startDaemonProcess(cfg.env, { cli: older.cli, port });
    const sb = await new ForkdClient({ url: daemon.url, apiKey: daemon.apiKey }).sandboxes.create({ memoryMb: 128 });
    const counters = await attachCounters(sb);
    const pids = counters.map((c) => c.pid());
    const before = await startTimes(sb, pids);
    const snapshots = (await sb.timeline()).length;
    await stopDaemonProcess(daemon, 'SIGTERM');
    const atStop = counters.map((c) => lines(c).length);
    await new Promise((r) => setTimeout(r, 1000));
    daemon = await startDaemonProcess(cfg.env, { port });
    assert.deepEqual(await startTimes(sb, pids), before, 'the same processes: adopted, not restored');
    await finishCounters(sb, counters);
    for (const [i, c] of counters.entries()) assert.ok(lines(c).length > atStop[i]!, `${c.kind} went on`);
    const info = await sb.refresh();
    assert.equal(info.recovered, undefined, 'not recovered');
    assert.equal((await sb.timeline()).length, snapshots, 'no snapshot taken or restored');
    await sb.delete();
  });
});
