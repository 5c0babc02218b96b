import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { exec, spawnStream } from '../shared/exec.js';
import { waitFor } from '../testing/helpers.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { runCli, startDaemonProcess, stopDaemonProcess, type CliResult, type DaemonProcess } from '../testing/daemon-process.js';
import { startTestInternet, type TestInternet } from '../testing/test-internet.js';
import { api, execHttp, type ApiTarget } from '../testing/http-client.js';
import { assertStillServing } from '../testing/still-serving.js';
import { LIVE_FUZZ_PY, SNI_ATTACK_PY } from '../testing/egress-fuzz-probes.js';

/*
 * Hostile bytes from inside an egress sandbox at forkd's egress proxy, HTTP
 * forwarder and DNS resolver (issue 23): the daemon keeps serving every
 * other tenant, and no error escapes a handler (the `uncaught` count of
 * forkd_handler_faults_total stays where it was).
 */
const BAD_NAME = 'bad.test';
const BAD = '203.0.113.10';

/** An upstream on BAD:80 whose replies Node's HTTP client parses but res.writeHead would refuse, or worse. */
const BAD_UPSTREAM = `const net=require('node:net');
const replies={'/s42':'HTTP/1.1 042 Odd\\r\\nContent-Length: 0\\r\\n\\r\\n','/s099':'HTTP/1.1 099 Odd\\r\\n\\r\\n','/badhdr':'HTTP/1.1 200 OK\\r\\nX-Odd: a\\x7fb\\r\\nContent-Length: 0\\r\\n\\r\\n',
 '/huge':'HTTP/1.1 200 OK\\r\\nX-Big: '+'y'.repeat(100000)+'\\r\\n\\r\\n','/cut':'HTTP/1.1 200 OK\\r\\nContent-Len'};
const any=Object.values(replies).concat(['HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok','HTTP/1.1 600 X\\r\\n\\r\\n','\\x00\\xff garbage\\r\\n\\r\\n']);
net.createServer((s)=>{s.on('error',()=>{});let g='';s.on('data',(d)=>{g+=d.toString('latin1');if(!g.includes('\\r\\n\\r\\n'))return;
 const p=g.split(' ')[1]||'';s.end(replies[p]||(/^\\/\\d/.test(p)?any[Math.floor(Math.random()*any.length)]:'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok'),'latin1');});}).listen(80,process.argv[1]);`;

describe('adversarial egress bytes: no bytes from a sandbox can throw out of the proxy, forwarder or resolver', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let internet: TestInternet;
  let upstream: ReturnType<typeof spawnStream> | undefined;
  let target: ApiTarget;
  let attacker = '';
  let neighbour = '';

  const forkd = (args: string[], input?: string): Promise<CliResult> => runCli(daemon!.url, cfg.env, args, input ?? 'devnull');
  const inAttacker = async (cmd: string[]) => (await forkd(['exec', attacker, '--', ...cmd])).stdout.trim();
  /** forkd_handler_faults_total by component, as /metrics shows it (throws unless /metrics answers). */
  const faults = async (): Promise<Record<string, number>> => {
    const m = await api(target, 'GET', '/metrics');
    assert.equal(m.status, 200, m.text);
    assert.match(m.text, /# TYPE forkd_handler_faults_total counter/);
    return Object.fromEntries([...m.text.matchAll(/^forkd_handler_faults_total\{component="([^"]+)"\} (\d+)$/gm)].map((x) => [x[1]!, Number(x[2])]));
  };

  before(async () => {
    internet = await startTestInternet({ zone: { [BAD_NAME]: BAD } });
    await exec('nsenter', [`--net=${internet.netns}`, 'ip', 'addr', 'add', `${BAD}/24`, 'dev', 'up0']);
    upstream = spawnStream('nsenter', [`--net=${internet.netns}`, process.execPath, '-e', BAD_UPSTREAM, BAD]);
    upstream.stream.on('error', () => {});
    await waitFor(async () => (await exec('nsenter', [`--net=${internet.netns}`, 'ss', '-Htln'], { allowFailure: true })).stdout.includes(`${BAD}:80`), 10_000, 'the bad upstream');
    dir = await mkdtemp(join(tmpdir(), 'forkd-advbytes-'));
    cfg = testConfig(dir);
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_DNS_UPSTREAM: internet.dns });
    target = { url: daemon.url, apiKey: daemon.apiKey };
    const a = await forkd(['create', '--memory', '128', '--network', 'egress']);
    assert.equal(a.code, 0, a.stderr);
    attacker = a.stdout.trim();
    const n = await forkd(['create', '--memory', '128']);
    assert.equal(n.code, 0, n.stderr);
    neighbour = n.stdout.trim();
    // A grant for BAD_NAME: its plain HTTP goes through the forwarder (parsed request by request), not the splice.
    assert.equal((await forkd(['secret', 'set', 'TOKEN'], 'not-a-real-secret\n')).code, 0);
    const g = await forkd(['grant', 'create', attacker, '--secret', 'TOKEN', '--host', BAD_NAME, '--header', 'Authorization: Bearer {secret}']);
    assert.equal(g.code, 0, g.stderr);
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    upstream?.kill();
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
    await internet?.close();
  });

  test('the 6 bytes 16 03 01 00 00 01 to port 443, repeated: each connection refused at once, nothing escapes, the daemon serves', async () => {
    const before = await faults();
    const out = await inAttacker(['python3', '-c', SNI_ATTACK_PY, internet.servers[0], '20']);
    assert.ok(daemon!.child.exitCode === null && daemon!.child.signalCode === null, `the daemon exited:\n${daemon!.log().slice(-2000)}`);
    const [held, worst] = out.split(' ');
    assert.equal(held, '0', 'connections the proxy left open (a listener that threw leaves its socket until the peek timeout)');
    assert.ok(Number(worst) < 2, `slowest refusal ${worst} s`);
    const after = await faults();
    assert.equal(after.uncaught ?? 0, before.uncaught ?? 0, 'an error escaped a handler');
    // The parser answers these bytes itself (none: refused); the guard is for what no parser foresaw.
    assert.equal(after['egress-proxy'] ?? 0, before['egress-proxy'] ?? 0, 'the hello was refused by the guard, not by readSni');
    await assertStillServing(target, neighbour, daemon!.child);
  });

  test('an upstream answering status 42, 099, a refused header, 100 KB of header or half a head: the sandbox gets a 502', async () => {
    const before = await faults();
    for (const path of ['/s42', '/s099', '/badhdr', '/huge', '/cut']) {
      const code = await inAttacker(['curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '5', `http://${BAD_NAME}${path}`]);
      assert.equal(code, '502', path);
    }
    const after = await faults();
    assert.equal(after.uncaught ?? 0, before.uncaught ?? 0, 'an error escaped a handler');
    assert.equal(after['egress-forwarder'] ?? 0, before['egress-forwarder'] ?? 0, 'each bad reply was answered by the check, not cut by the guard');
    await assertStillServing(target, neighbour, daemon!.child);
  });

  test('live fuzz: 25 s of random and truncated TLS, HTTP and DNS (UDP and TCP) from the sandbox; health and a neighbour throughout', async (t) => {
    const before = await faults();
    let fuzzing = true;
    const problems: string[] = [];
    let checks = 0;
    const watch = (async () => {
      for (let i = 0; fuzzing; i++) {
        try {
          const h = await fetch(`${target.url}/v1/health`, { signal: AbortSignal.timeout(5000) });
          if (h.status !== 200) problems.push(`health ${h.status}`);
          if (i % 4 === 0) {
            const r = await execHttp(target, neighbour, ['echo', `n${i}`]);
            if (r.stdout !== `n${i}\n`) problems.push(`neighbour exec: ${JSON.stringify(r)}`);
          }
          checks++;
        } catch (err) {
          problems.push(String(err));
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
    const sent = await inAttacker(['python3', '-c', LIVE_FUZZ_PY, '25', internet.servers[0], 'a.test', BAD_NAME]).finally(() => (fuzzing = false));
    await watch;
    const counts = Object.fromEntries(sent.split(' ').map((kv) => kv.split('=')).map(([k, v]) => [k, Number(v)]));
    for (const k of ['tls', 'http', 'udp', 'tcpdns']) assert.ok((counts[k] ?? 0) > 100, `${k} sent: ${sent}`);
    assert.deepEqual(problems, [], `${checks} checks`);
    assert.ok(checks >= 20, `${checks} health checks in 25 s`);
    const after = await faults();
    t.diagnostic(`sent ${sent}; ${checks} health checks; faults before ${JSON.stringify(before)}, after ${JSON.stringify(after)}`);
    assert.equal(after.uncaught ?? 0, before.uncaught ?? 0, `an error escaped a handler: ${JSON.stringify(after)}`);
    await assertStillServing(target, neighbour, daemon!.child);
    // The sandbox itself still has working egress after it all.
    assert.equal(await inAttacker(['curl', '-sS', '--max-time', '5', `http://a.test:${internet.port}/`]), `hello from ${internet.named[0]}`);
  });
});
