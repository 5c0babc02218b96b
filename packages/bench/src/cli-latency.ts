import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baseRootfsDir, criuPath, exec, loadConfig, REPO_ROOT } from '@forkd/server';
import { CLI, disposeNodeDir, NODE_FLAGS, startDaemonProcess, stopDaemonProcess, testConfig, type DaemonProcess } from '@forkd/server/testing';
import { LiveRows } from './live-rows.js';
import { Podman } from './podman.js';
import { fmt, rowLine, type BenchRow } from './row-line.js';
import { summarize, type Summary } from './stats.js';

const CLI_BUNDLE = join(REPO_ROOT, 'packages/cli/dist/bundle/forkd.js');

export interface CliRow extends BenchRow {
  /** `podman exec`'s, for the row that has a Podman counterpart. */
  podman?: Summary;
}

function cliLine(r: CliRow): string {
  return rowLine(r) + (r.podman ? `; podman exec p50 ${fmt(r.podman.p50)}, p95 ${fmt(r.podman.p95)}` : '');
}

/** Wall time of whole runs of a command, from spawn to exit, as a script calling it sees it. */
async function wallMs(n: number, file: string, args: string[], env?: NodeJS.ProcessEnv): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await exec(file, args, { env: env ?? process.env, timeoutMs: 60_000 });
    out.push(performance.now() - t0);
  }
  return out;
}

/**
 * The CLI as an agent or a script drives it (issue 27): a whole `forkd`
 * process per call (the bundle `./forkd` runs) against a real `forkd
 * serve`, stdin /dev/null, next to `podman exec` into a running container
 * and to Node's own start-up (the floor of any Node CLI).
 */
export async function cliRows(quick: boolean): Promise<CliRow[]> {
  const n = quick ? 3 : 40;
  const rows = new LiveRows<CliRow>(cliLine);
  const dir = await mkdtemp(join(tmpdir(), 'forkd-bench-cli-'));
  const cfg = testConfig(dir);
  let daemon: DaemonProcess | undefined;
  try {
    daemon = await startDaemonProcess(cfg.env);
    const env = { ...cfg.env, FORKD_URL: daemon.url, FORKD_API_KEY: daemon.apiKey };
    const node = (args: string[]) => wallMs(n, process.execPath, [...NODE_FLAGS, ...args], env);
    // What ./forkd, the wrapper on PATH and the npm package run, made from this build.
    await exec(process.execPath, [join(REPO_ROOT, 'scripts/bundle-cli.mjs')], { timeoutMs: 120_000 });
    rows.push({ name: "node start-up alone (node -e '')", unit: 'ms', summary: summarize(await node(['-e', ''])) });
    rows.push({ name: 'forkd --version (node packages/cli/dist/bundle/forkd.js)', unit: 'ms', target: 'p50 ≤ 100', summary: summarize(await node([CLI_BUNDLE, '--version'])) });
    // The first call through the wrapper may build (a fresh checkout): not measured.
    await exec(join(REPO_ROOT, 'forkd'), ['--version'], { env, timeoutMs: 600_000 });
    rows.push({ name: 'forkd --version through ./forkd (the checkout wrapper: build check, then node)', unit: 'ms', summary: summarize(await wallMs(n, join(REPO_ROOT, 'forkd'), ['--version'], env)) });
    const id = (await exec(process.execPath, [...NODE_FLAGS, CLI, 'create'], { env })).stdout.trim();
    await wallMs(2, process.execPath, [...NODE_FLAGS, CLI_BUNDLE, 'exec', id, '--', 'true'], env);
    const forkdExec = summarize(await node([CLI_BUNDLE, 'exec', id, '--', 'true']));
    rows.push({ name: 'forkd exec ID -- true (a whole CLI call, stdin /dev/null)', unit: 'ms', target: 'p50 ≤ 150', summary: forkdExec, podman: await podmanExec(n) });
  } finally {
    await stopDaemonProcess(daemon);
    await disposeNodeDir(undefined, dir, cfg.config);
  }
  return [...rows];
}

/** `podman exec CONTAINER true` into a running container of the same base root filesystem; undefined without podman. */
async function podmanExec(n: number): Promise<Summary | undefined> {
  const have = await exec('podman', ['--version'], { allowFailure: true }).catch(() => undefined);
  if (have?.code !== 0) return undefined;
  const config = loadConfig();
  const tmp = await mkdtemp(join(tmpdir(), 'forkd-bench-cli-podman-'));
  const podman = await Podman.withCriu(criuPath(config), join(tmp, 'bin'));
  const name = `fb-cli-${process.pid}`;
  try {
    await podman.importRootfs(baseRootfsDir(config));
    await podman.start(name, ['sleep', 'infinity']);
    await wallMs(2, 'podman', ['exec', name, 'true']);
    return summarize(await wallMs(n, 'podman', ['exec', name, 'true']));
  } finally {
    await podman.remove([name]);
    await rm(tmp, { recursive: true, force: true });
  }
}
