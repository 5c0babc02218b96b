import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { exec } from '../shared/exec.js';
import { loadConfig } from '../shared/config.js';
import { parseEnvironmentFile, SERVICE_PATHS } from '../setup/service-unit.js';
import { CLI, NODE_FLAGS, randomPort, runCli } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';

/** What systemd gives a service before its own Environment= and EnvironmentFile= (systemd.exec(5)). */
const SYSTEMD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The `Key=value` settings of a unit's [Service] section, in order. */
function serviceSettings(unit: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let inService = false;
  for (const line of unit.split('\n')) {
    if (/^\[.+\]$/.test(line)) inService = line === '[Service]';
    const kv = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (inService && kv) out.set(kv[1]!, [...(out.get(kv[1]!) ?? []), kv[2]!]);
  }
  return out;
}

/** Starts the unit's ExecStart as systemd would: its argv (plain words, as forkd writes it), the environment from Environment= then EnvironmentFile= (under `root`). */
function startAsSystemd(unit: Map<string, string[]>, root: string): { child: ChildProcess; log(): string } {
  const env: NodeJS.ProcessEnv = { PATH: SYSTEMD_PATH, LANG: 'C.UTF-8' };
  for (const assignment of unit.get('Environment') ?? []) {
    const eq = assignment.indexOf('=');
    env[assignment.slice(0, eq)] = assignment.slice(eq + 1);
  }
  for (const file of unit.get('EnvironmentFile') ?? []) {
    const optional = file.startsWith('-');
    const path = join(root, optional ? file.slice(1) : file);
    if (!existsSync(path) && optional) continue;
    Object.assign(env, parseEnvironmentFile(readFileSync(path, 'utf8')));
  }
  const [cmd, ...args] = unit.get('ExecStart')![0]!.split(' ');
  const child = spawn(cmd!, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  return { child, log: () => log };
}

async function waitHealthy(url: string, d: { child: ChildProcess; log(): string }): Promise<void> {
  for (const t0 = Date.now(); Date.now() - t0 < 120_000; await sleep(200)) {
    if (d.child.exitCode !== null) throw new Error(`daemon exited (${d.child.exitCode}):\n${d.log()}`);
    const r = await fetch(`${url}/v1/health`).catch(() => undefined);
    if (r?.ok) return;
  }
  throw new Error(`no /v1/health in 120 s:\n${d.log()}`);
}

/** Stops the service as its KillMode says: `process` signals the main process alone, with KillSignal. */
async function stopAsSystemd(unit: Map<string, string[]>, d: { child: ChildProcess }): Promise<number | null> {
  assert.deepEqual(unit.get('KillMode'), ['process'], 'this test stops the daemon as KillMode=process does');
  assert.equal(unit.get('ExecStop'), undefined);
  const exited = new Promise<number | null>((r) => d.child.once('exit', (code) => r(code)));
  d.child.kill((unit.get('KillSignal')?.[0] ?? 'SIGTERM') as NodeJS.Signals);
  return exited;
}

const alive = (pid: number) => existsSync(`/proc/${pid}`);

describe('forkd install, the unit run as systemd runs it, forkd uninstall', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let root = '';
  let daemon: { child: ChildProcess; log(): string } | undefined;
  const port = randomPort();
  const url = `http://127.0.0.1:${port}`;
  let unit = new Map<string, string[]>();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-install-'));
    cfg = testConfig(dir);
    root = join(dir, 'root');
  });
  after(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    if (dir) await disposeNodeDir(undefined, dir, loadConfig(cfg.env));
  });

  test('install --root writes the unit, the environment file from the shell and the CLI wrapper, and says it starts nothing', async () => {
    const r = await runCli(url, { ...cfg.env, FORKD_PORT: String(port) }, ['install', '--root', root]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /not starting forkd\.service: installed under .*, not this host's root/);
    assert.equal(statSync(join(root, SERVICE_PATHS.unit)).mode & 0o777, 0o644);
    assert.equal(statSync(join(root, SERVICE_PATHS.envFile)).mode & 0o777, 0o600);
    assert.equal(statSync(join(root, SERVICE_PATHS.wrapper)).mode & 0o777, 0o755);
    const env = parseEnvironmentFile(readFileSync(join(root, SERVICE_PATHS.envFile), 'utf8'));
    assert.equal(env.FORKD_STATE_DIR, cfg.env.FORKD_STATE_DIR);
    assert.equal(env.FORKD_PORT, String(port));
    assert.equal(env.FORKD_URL, undefined, 'a client setting is not the daemon’s');
    const version = await exec(join(root, SERVICE_PATHS.wrapper), ['--version'], { env: { PATH: SYSTEMD_PATH } });
    assert.match(version.stdout, /^forkd \d+\.\d+\.\d+/);
    unit = serviceSettings(readFileSync(join(root, SERVICE_PATHS.unit), 'utf8'));
    assert.match(unit.get('ExecStart')![0]!, new RegExp(`^${process.execPath} .*${CLI.replace(/[.]/g, '\\.')} serve$`));
    // Installing again keeps the settings someone may have edited.
    const again = await runCli(url, { ...cfg.env, FORKD_PORT: '1' }, ['install', '--root', root, '--no-start']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /kept \/etc\/forkd\/forkd\.env/);
    assert.equal(parseEnvironmentFile(readFileSync(join(root, SERVICE_PATHS.envFile), 'utf8')).FORKD_PORT, String(port));
  });

  test('ExecStart serves; a sandbox and the netns holder outlive a stop as KillMode=process does it; the next start adopts the sandbox', async () => {
    daemon = startAsSystemd(unit, root);
    await waitHealthy(url, daemon);
    const key = readFileSync(join(cfg.config.stateDir, 'admin.key'), 'utf8').trim();
    const created = await runCli(url, { FORKD_API_KEY: key }, ['create', '--network', 'egress', '--json']);
    assert.equal(created.code, 0, created.stderr);
    const id = (JSON.parse(created.stdout) as { id: string }).id;
    const runcRoot = join(cfg.config.runDir, 'runc');
    const state = async () => JSON.parse((await exec('runc', ['--root', runcRoot, 'state', id])).stdout) as { status: string; pid: number };
    const before = await state();
    assert.equal(before.status, 'running');
    const [holder] = readFileSync(join(cfg.config.runDir, 'netns', '.holder'), 'utf8').trim().split(' ').map(Number);
    assert.ok(holder && alive(holder), 'a sandbox with a network has a netns holder');

    assert.equal(await stopAsSystemd(unit, daemon), 0, daemon.log());
    const after = await state();
    assert.equal(after.status, 'running', 'the sandbox runs on without its daemon');
    assert.equal(after.pid, before.pid);
    assert.ok(alive(holder), 'the netns holder (a child of the daemon, in its cgroup) outlives it');

    // Restart=on-failure or a `systemctl start`: the same ExecStart adopts what runs.
    daemon = startAsSystemd(unit, root);
    await waitHealthy(url, daemon);
    const out = await runCli(url, { FORKD_API_KEY: key }, ['exec', id, '--', 'echo', 'adopted']);
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout, 'adopted\n');
    assert.equal((await state()).pid, before.pid, 'adopted, not restored');
    assert.equal((await runCli(url, { FORKD_API_KEY: key }, ['rm', id])).code, 0);
    assert.equal(await stopAsSystemd(unit, daemon), 0, daemon.log());
  });

  test('uninstall --root removes the unit and the wrapper, keeps the settings and says what data stays', async () => {
    const r = await runCli(url, cfg.env, ['uninstall', '--root', root]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!existsSync(join(root, SERVICE_PATHS.unit)));
    assert.ok(!existsSync(join(root, SERVICE_PATHS.wrapper)));
    assert.ok(existsSync(join(root, SERVICE_PATHS.envFile)));
    assert.match(r.stdout, /removed \/etc\/systemd\/system\/forkd\.service/);
    assert.ok(r.stdout.includes(`state      ${cfg.config.stateDir}`), r.stdout);
    assert.ok(r.stdout.includes(`loop image ${join(cfg.config.stateDir, 'pool.img')}`), r.stdout);
    const twice = await runCli(url, cfg.env, ['uninstall', '--root', root]);
    assert.equal(twice.code, 0, twice.stderr);
    assert.doesNotMatch(twice.stdout, /removed/);
  });

  test('a file install did not write is neither overwritten nor removed', async () => {
    await mkdir(join(root, '/usr/local/bin'), { recursive: true });
    await writeFile(join(root, SERVICE_PATHS.wrapper), '#!/bin/sh\necho mine\n', { mode: 0o755 });
    const r = await runCli(url, cfg.env, ['install', '--root', root]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /\/usr\/local\/bin\/forkd exists and was not written by forkd install/);
    assert.ok(!existsSync(join(root, SERVICE_PATHS.unit)), 'refused before anything was written');
    const u = await runCli(url, cfg.env, ['uninstall', '--root', root]);
    assert.equal(u.code, 0, u.stderr);
    assert.equal(readFileSync(join(root, SERVICE_PATHS.wrapper), 'utf8'), '#!/bin/sh\necho mine\n');
  });
});
