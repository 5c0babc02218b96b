import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { disposeNodeDir, runSdkChild, startCodeInterpreterDaemon, startE2bDaemon, stopDaemonProcess, testConfig, type DaemonProcess } from '@forkd/server/testing';
import { summarize } from './stats.js';
import { liveRows, type BenchRow } from './row-line.js';

/**
 * What E2B's official SDK sees of a real `forkd serve` (issue 14): the same
 * operations as the core rows, through the E2B control-plane API and envd
 * gateway over loopback HTTP/1.1, with the default warm pool.
 */
export async function e2bSdkRows(quick: boolean): Promise<BenchRow[]> {
  const n = quick ? 3 : 30;
  const dir = await mkdtemp(join(tmpdir(), 'forkd-bench-e2b-'));
  const cfg = testConfig(dir);
  let d: DaemonProcess | undefined;
  const saved = { key: process.env.E2B_API_KEY, api: process.env.E2B_API_URL, envd: process.env.E2B_SANDBOX_URL };
  try {
    const e = await startE2bDaemon({ ...cfg.env, FORKD_WARM_POOL: '2' }, 'default');
    d = e.daemon;
    process.env.E2B_API_KEY = e.key;
    process.env.E2B_API_URL = e.apiUrl;
    process.env.E2B_SANDBOX_URL = e.envdUrl;
    const { Sandbox } = await import('e2b');
    const settle = () => new Promise((r) => setTimeout(r, 1500)); // the warm pool refills between creates

    // Warm-up: first connections, page cache.
    await (await Sandbox.create('base')).kill();
    const rows = liveRows();
    const create: number[] = [];
    for (let i = 0; i < n; i++) {
      await settle();
      const t0 = performance.now();
      const s = await Sandbox.create('base');
      await s.commands.run('true');
      create.push(performance.now() - t0);
      await s.kill();
    }
    rows.push({ name: 'E2B SDK: Sandbox.create → first commands.run completed (warm pool)', unit: 'ms', summary: summarize(create) });
    const s = await Sandbox.create('base', { timeoutMs: 600_000 });
    const rtt: number[] = [];
    const io: number[] = [];
    const fork: number[] = [];
    const fork10: number[] = [];
    try {
      for (let i = 0; i < n * 3; i++) {
        const t0 = performance.now();
        await s.commands.run('true');
        rtt.push(performance.now() - t0);
      }
      rows.push({ name: 'E2B SDK: commands.run round trip of `true`', unit: 'ms', summary: summarize(rtt) });
      const mb = new Uint8Array(2 ** 20).fill(7);
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await s.files.write('/tmp/bench.bin', mb.buffer as ArrayBuffer);
        await s.files.read('/tmp/bench.bin', { format: 'bytes' });
        io.push(performance.now() - t0);
      }
      rows.push({ name: 'E2B SDK: files.write + files.read of 1 MB', unit: 'ms', summary: summarize(io) });
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        const [f] = await s.fork({ count: 1 });
        fork.push(performance.now() - t0);
        if (f && !(f instanceof Error)) await f.kill();
      }
      rows.push({ name: 'E2B SDK: sandbox.fork({count: 1}) to running', unit: 'ms', summary: summarize(fork) });
      // As forkd's own row "fork of ten, all running (total)": ten restores of one snapshot on two cores.
      for (let i = 0; i < (quick ? 1 : 3); i++) {
        const t0 = performance.now();
        const forks = await s.fork({ count: 10 });
        fork10.push(performance.now() - t0);
        for (const f of forks) if (!(f instanceof Error)) await f.kill();
      }
      rows.push({ name: 'E2B SDK: sandbox.fork({count: 10}), all running (total)', unit: 'ms', summary: summarize(fork10) });
    } finally {
      await s.kill();
    }
    return [...rows];
  } finally {
    for (const [k, v] of Object.entries({ E2B_API_KEY: saved.key, E2B_API_URL: saved.api, E2B_SANDBOX_URL: saved.envd })) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await stopDaemonProcess(d);
    await disposeNodeDir(undefined, dir, cfg.config);
  }
}

/**
 * E2B's code interpreter SDK (@e2b/code-interpreter, in a child process: it
 * trusts the bench's CA from its start) against the code-interpreter
 * template over HTTPS sandbox hosts on loopback, as an E2B user reaches
 * E2B's cloud: `49999-{id}.{domain}` through the port proxy to the kernel's
 * server. The template's build (apt from the host's mirror, warm kernel) is
 * measured once.
 */
export async function codeInterpreterRows(quick: boolean): Promise<BenchRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-bench-ci-'));
  const cfg = testConfig(dir);
  let d: DaemonProcess | undefined;
  try {
    const c = await startCodeInterpreterDaemon(dir, cfg.env, 'bench.forkd.test');
    d = c.daemon;
    const rows = liveRows();
    rows.push({ name: 'code interpreter template build (--recipe code-interpreter: apt packages, warm kernel)', unit: 's', summary: summarize([c.buildMs / 1000]) });
    const out = (await runSdkChild(c.target, 'code-interpreter-main.js', ['bench', String(quick ? 10 : 100)])) as { firstRunMs: number; rttMs: number[]; healthMs: number[] };
    rows.push(
      { name: 'E2B code interpreter SDK: Sandbox.create → first runCode completed', unit: 'ms', summary: summarize([out.firstRunMs]) },
      { name: "E2B code interpreter SDK: runCode('1+1') round trip (HTTPS sandbox host)", unit: 'ms', target: 'p50 ≤ 10', summary: summarize(out.rttMs) },
      { name: 'code interpreter: GET /health through the same HTTPS sandbox host (port proxy and TLS, no kernel)', unit: 'ms', summary: summarize(out.healthMs) },
    );
    return [...rows];
  } finally {
    await stopDaemonProcess(d);
    await disposeNodeDir(undefined, dir, cfg.config);
  }
}
