import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, execHttp } from '../testing/http-client.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { runDoctor } from '../doctor/run-doctor.js';
import { STAMP_FILE } from '../node/runtime/snapshot-stamp.js';

/**
 * Snapshots say what made them; one the installed versions cannot restore
 * (here: stamped by a CRIU newer than the installed one, as after a
 * downgrade) is named by doctor and at start, and refused cleanly.
 */
describe('snapshot version stamps', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-compat-'));
    cfg = testConfig(dir);
    daemon = await startDaemonProcess(cfg.env);
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  const stampOf = (snap: string) => join(cfg.config.pool.mountPoint, 'snapshots', snap, 'memory', STAMP_FILE);

  test('a snapshot records forkd, the agent protocol, CRIU and runc; one stamped by a newer CRIU is reported by doctor and at start, and a fork or rewind of it is refused with nothing changed', async () => {
    const id = (await api(daemon!, 'POST', '/v1/sandboxes', { memoryMb: 128 })).json.id as string;
    await execHttp(daemon!, id, ['sh', '-c', 'echo one > /tmp/state']);
    const snap = (await api(daemon!, 'POST', `/v1/sandboxes/${id}/snapshots`, {})).json.id as string;
    const stamp = JSON.parse(await readFile(stampOf(snap), 'utf8'));
    assert.equal(stamp.format, 1);
    assert.equal(stamp.guestProtocol, 3);
    assert.match(stamp.criu, /^4\.2/);
    assert.match(stamp.runc, /^1\.\d+\.\d+/);
    assert.equal(typeof stamp.forkd, 'string');
    const clean = (await runDoctor(cfg.config)).findings.find((f) => f.check === 'snapshots');
    assert.equal(clean?.status, 'ok', JSON.stringify(clean));

    // As if made by a CRIU newer than the one installed (the installed one was downgraded).
    await writeFile(stampOf(snap), JSON.stringify({ ...stamp, criu: '9.1' }));
    const found = (await runDoctor(cfg.config)).findings.find((f) => f.check === 'snapshots');
    assert.equal(found?.status, 'warn');
    assert.match(found!.summary, new RegExp(`snapshot ${snap}: dumped by CRIU 9\\.1; the installed CRIU 4\\.2 is older`));

    const before = (await api(daemon!, 'GET', '/v1/sandboxes')).json.sandboxes.length;
    const fork = await api(daemon!, 'POST', `/v1/snapshots/${snap}/fork`, { count: 1 });
    assert.equal(fork.status, 412, fork.text);
    assert.equal(fork.json.error.code, 'FAILED_PRECONDITION');
    assert.match(fork.json.error.message, /cannot be restored by the installed versions: dumped by CRIU 9\.1/);
    assert.equal((await api(daemon!, 'GET', '/v1/sandboxes')).json.sandboxes.length, before, 'no fork made');
    await execHttp(daemon!, id, ['sh', '-c', 'echo two > /tmp/state']);
    const rewind = await api(daemon!, 'POST', `/v1/sandboxes/${id}/rewind`, { snapshot: snap });
    assert.equal(rewind.status, 412, rewind.text);
    assert.equal((await execHttp(daemon!, id, ['cat', '/tmp/state'])).stdout, 'two\n', 'the sandbox runs on as it was');
    assert.equal((await api(daemon!, 'GET', `/v1/sandboxes/${id}`)).json.state, 'running');

    // A malformed stamp is refused the same way (its bytes may come from another host's export).
    await writeFile(stampOf(snap), '{"format":');
    assert.equal((await api(daemon!, 'POST', `/v1/snapshots/${snap}/fork`, { count: 1 })).status, 412);
    await writeFile(stampOf(snap), JSON.stringify({ ...stamp, criu: '9.1' }));

    // The next start says it before recovery or anyone restores it.
    await stopDaemonProcess(daemon, 'SIGTERM');
    daemon = await startDaemonProcess(cfg.env);
    assert.match(daemon.log(), new RegExp(`snapshot ${snap} cannot be restored by the installed versions`));
    // Restored as made, it works again.
    await writeFile(stampOf(snap), JSON.stringify(stamp));
    const ok = await api(daemon, 'POST', `/v1/snapshots/${snap}/fork`, { count: 1 });
    assert.equal(ok.status, 201, ok.text);
    assert.equal((await execHttp(daemon, ok.json.sandboxes[0].id, ['cat', '/tmp/state'])).stdout, 'one\n');
  });
});
