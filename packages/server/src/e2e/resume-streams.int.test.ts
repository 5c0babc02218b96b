import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdClient } from '@forkd/sdk';
import { api } from '../testing/http-client.js';
import { randomPort, runCli, startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { waitFor } from '../testing/helpers.js';
import { attachBurst, attachCounters, counterCommand, finishCounters, lines, startTimes } from '../testing/resumed-counters.js';

/**
 * Clients' streams across a daemon stop and start: the processes run on in
 * their sandbox (adopted, not restored), and exec, stream and terminal
 * sessions attached to them resume where they were.
 */
describe('streams resume across a daemon restart', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  const port = randomPort();
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-resume-'));
    cfg = testConfig(dir);
    daemon = await startDaemonProcess(cfg.env, { port });
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  const client = () => new ForkdClient({ url: daemon!.url, apiKey: daemon!.apiKey, reconnectTimeoutMs: 60_000 });

  test('SIGTERM (systemctl stop), down for a while, start: same processes, every stream resumes with nothing lost or repeated and ends with its exit code', async (t) => {
    const sb = await client().sandboxes.create({ memoryMb: 128 });
    const counters = [...(await attachCounters(sb)), attachBurst(sb)];
    await waitFor(() => lines(counters[3]!).length > 20, 20_000, 'the burst printing');
    const pids = counters.map((c) => c.pid());
    const before = await startTimes(sb, pids);
    const t0 = performance.now();
    await stopDaemonProcess(daemon, 'SIGTERM');
    const stopMs = performance.now() - t0;
    const atStop = counters.map((c) => lines(c).length);
    await new Promise((r) => setTimeout(r, 1500));
    const t1 = performance.now();
    daemon = await startDaemonProcess(cfg.env, { port });
    const startMs = performance.now() - t1;
    assert.deepEqual(await startTimes(sb, pids), before, 'the same processes (adopted, not restored)');
    const away = `stop ${Math.round(stopMs)} ms, down 1500 ms, start ${Math.round(startMs)} ms, back ${Math.round(performance.now() - t0)} ms after the stop began`;
    t.diagnostic(away);
    await finishCounters(sb, counters, 10, away);
    for (const [i, c] of counters.entries()) assert.ok(lines(c).length > atStop[i]! + 20, `${c.kind} printed while the daemon was down (${atStop[i]} → ${lines(c).length})`);
    const info = await sb.refresh();
    assert.equal(info.recovered, undefined, 'not recovered from a snapshot');
    assert.ok(stopMs < 5000, `stop took ${Math.round(stopMs)} ms`);
    await sb.delete();
  });

  test('kill -9: streams still resume in order with their exit codes (output in flight in the dead daemon is reported as dropped, never repeated)', async () => {
    const sb = await client().sandboxes.create({ memoryMb: 128 });
    const counters = await attachCounters(sb);
    await stopDaemonProcess(daemon, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 500));
    daemon = await startDaemonProcess(cfg.env, { port });
    await sb.exec(['sh', '-c', 'sleep 0.5; touch /tmp/stop-exec /tmp/stop-stream /tmp/stop-pty']);
    for (const c of counters) {
      const exit = await c.exit;
      assert.equal(exit?.exitCode, c.code, c.kind);
      const got = lines(c);
      for (let i = 1; i < got.length; i++) {
        assert.ok(got[i]! > got[i - 1]!, `${c.kind}: ${got[i - 1]} then ${got[i]} (repeated)`);
        if (got[i] !== got[i - 1]! + 1) assert.ok(c.dropped.length > 0, `${c.kind}: a gap after ${got[i - 1]} without a dropped event`);
      }
    }
    await sb.delete();
  });

  test('forkd exec, with stdin at /dev/null (NDJSON) and piped (WebSocket), across a restart: its output goes on once and it exits with the process\'s code', async () => {
    const sb = await client().sandboxes.create({ memoryMb: 128 });
    const env = { FORKD_API_KEY: daemon!.apiKey };
    // Resumable once started: a request cut before its answer began cannot know its process (the CLI then says so).
    const seen = ['', ''];
    const plain = runCli(daemon!.url, env, ['exec', sb.id, '--', ...counterCommand('cli', 9)], 'devnull', (s) => (seen[0] = s));
    const piped = runCli(daemon!.url, env, ['exec', sb.id, '--', ...counterCommand('clipipe', 4)], 'ignored input', (s) => (seen[1] = s));
    await waitFor(() => seen.every((s) => s.split('\n').length > 5), 30_000, 'both CLIs printing');
    await stopDaemonProcess(daemon, 'SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
    daemon = await startDaemonProcess(cfg.env, { port });
    await new Promise((r) => setTimeout(r, 1000));
    await sb.exec(['touch', '/tmp/stop-cli', '/tmp/stop-clipipe']);
    for (const [r, code] of [[await plain, 9], [await piped, 4]] as const) {
      assert.equal(r.code, code, r.stderr);
      const got = r.stdout.trim().split('\n').map(Number);
      assert.ok(got.length > 40, `${got.length} lines`);
      assert.deepEqual(got, got.map((_, i) => i + 1));
    }
    await sb.delete();
  });

  test('resuming is attaching: another tenant cannot reach the process, a wrong token is NOT_FOUND, half a resume point is refused', async () => {
    const owner = await client().sandboxes.create({ memoryMb: 128 });
    const bg = await owner.spawnBackground(['sleep', '1000']);
    const other = (await api(daemon!, 'POST', '/v1/keys', { tenant: 'other-tenant' })).json.key as string;
    const at = (key: string, q: string) => fetch(`${daemon!.url}/v1/sandboxes/${owner.id}/processes/${bg.pid}/output?${q}`, { headers: { authorization: `Bearer ${key}` } });
    const started = await firstLine(await at(daemon!.apiKey, ''));
    const token = started.token as number;
    assert.equal(typeof token, 'number', JSON.stringify(started));
    assert.equal((await at(other, `token=${token}&offset=0`)).status, 404, 'another tenant');
    assert.equal((await at(daemon!.apiKey, `token=${(token + 1) % 2 ** 48}&offset=0`)).status, 404, 'another spawn');
    assert.equal((await at(daemon!.apiKey, `token=${token}`)).status, 400);
    assert.equal((await at(daemon!.apiKey, `token=-1&offset=0`)).status, 400);
    // The WebSocket's attach resumes the same way, and is refused the same way.
    assert.equal((await wsAttach(daemon!.url, other, owner.id, { op: 'attach', pid: bg.pid, resume: { token, offset: 0 } })).error?.code, 'NOT_FOUND');
    assert.equal((await wsAttach(daemon!.url, daemon!.apiKey, owner.id, { op: 'attach', pid: bg.pid, resume: { token: (token + 1) % 2 ** 48, offset: 0 } })).error?.code, 'NOT_FOUND');
    assert.equal((await wsAttach(daemon!.url, daemon!.apiKey, owner.id, { op: 'attach', pid: bg.pid, resume: { token, offset: 0 } })).type, 'started');
    await owner.delete();
  });
});

/** The first NDJSON event of an answer; the rest is not read. */
async function firstLine(res: Response): Promise<Record<string, unknown>> {
  const reader = res.body!.getReader();
  let text = '';
  while (!text.includes('\n')) {
    const r = await reader.read();
    if (r.done) break;
    text += Buffer.from(r.value).toString();
  }
  await reader.cancel();
  return JSON.parse(text.split('\n')[0]!) as Record<string, unknown>;
}

/** Opens sandbox `id`'s stream socket with `key` and sends `open`; resolves with the first JSON message. */
function wsAttach(url: string, key: string, id: string, open: object): Promise<{ type?: string; error?: { code?: string } }> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/sandboxes/${id}/stream?api_key=${encodeURIComponent(key)}`);
  return new Promise((resolve, reject) => {
    ws.addEventListener('open', () => ws.send(JSON.stringify(open)));
    ws.addEventListener('message', (ev) => {
      if (typeof ev.data !== 'string') return;
      resolve(JSON.parse(ev.data) as { type?: string });
      ws.close();
    });
    ws.addEventListener('close', () => reject(new Error('closed without a message')));
  });
}
