import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DoctorReport } from '@forkd/protocol';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { runCli, startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { HOST_CHECKS } from '../doctor/run-doctor.js';

/** A port nothing listens on: the daemon check then finds no forkd (a warning, not an error). */
const NOBODY = 'http://127.0.0.1:9';

function parse(stdout: string): DoctorReport {
  return DoctorReport.parse(JSON.parse(stdout));
}

describe('forkd doctor on this machine', { skip: !isRoot && 'needs root' }, () => {
  test('the set-up host passes: exit 0, no errors, every check reported, the JSON is a DoctorReport', async () => {
    // The machine's own configuration (forkd setup was run here): /var/lib/forkd, its pool, CRIU and runc.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('FORKD_')));
    const r = await runCli(NOBODY, env, ['doctor', '--json']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const report = parse(r.stdout);
    assert.equal(report.ok, true);
    assert.deepEqual(report.findings.filter((f) => f.status === 'error'), []);
    assert.deepEqual(report.findings.map((f) => f.check), HOST_CHECKS.map(([id]) => id));
    for (const c of ['kernel', 'cgroups', 'seccomp', 'btrfs', 'criu', 'runc', 'pool']) assert.equal(report.findings.find((f) => f.check === c)?.status, 'ok', c);
    assert.equal(report.findings.find((f) => f.check === 'daemon')?.status, 'warn');
    const human = await runCli(NOBODY, env, ['doctor']);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^ok +runc +runc 1\.\d+\.\d+/m);
    assert.match(human.stdout, /nothing blocks a feature/);
  });

  describe('with a daemon running', () => {
    let dir = '';
    let cfg: ReturnType<typeof testConfig>;
    let daemon: DaemonProcess | undefined;
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'forkd-doctor-'));
      cfg = testConfig(dir);
      daemon = await startDaemonProcess(cfg.env);
    });
    after(async () => {
      await stopDaemonProcess(daemon);
      if (dir) await disposeNodeDir(undefined, dir, cfg.config);
    });

    test('its health is ok, its port is in use by it (not a conflict), its own pool is checked', async () => {
      const port = new URL(daemon!.url).port;
      const r = await runCli(daemon!.url, { ...cfg.env, FORKD_PORT: port }, ['doctor', '--json']);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const report = parse(r.stdout);
      const by = (c: string) => report.findings.find((f) => f.check === c);
      assert.equal(by('daemon')?.status, 'ok');
      assert.match(by('ports')?.summary ?? '', new RegExp(`${port} \\(FORKD_PORT\\) in use by the running forkd`));
      assert.equal(by('pool')?.status, 'ok');
      assert.match(by('pool')?.summary ?? '', new RegExp(cfg.config.pool.mountPoint));
      assert.equal(by('pool-space')?.status, 'ok');
      // The same port as seen by a doctor that is not told a forkd answers there: another program holds it.
      const other = await runCli(NOBODY, { ...cfg.env, FORKD_PORT: port }, ['doctor', '--json']);
      assert.equal(other.code, 1, other.stdout);
      assert.equal(parse(other.stdout).findings.find((f) => f.check === 'ports')?.status, 'error');
    });
  });
});
