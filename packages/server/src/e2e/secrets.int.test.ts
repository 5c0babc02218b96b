import { createHash } from 'node:crypto';
import { mkdtemp, open, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdClient } from '@forkd/sdk';
import { exec, spawnStream } from '../shared/exec.js';
import { waitFor } from '../testing/helpers.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { runCli, startDaemonProcess, stopDaemonProcess, type CliResult, type DaemonProcess } from '../testing/daemon-process.js';
import { startTestInternet, type TestInternet } from '../testing/test-internet.js';

/*
 * Just-in-time secrets end to end: a real daemon, a sandbox with egress, an
 * upstream in the test's own internet. The upstream never sends the value
 * back (that would put it in the sandbox): it answers the SHA-256 of the
 * Authorization header it received, and the test compares.
 */
const VALUE = `sk-e2e-${createHash('sha256').update(String(process.pid)).digest('hex').slice(0, 24)}`;
const NAME = 'api.secrets.test';
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const NONE = sha('');

/** The upstream, on an address of its own in the test internet: HTTP on 80, HTTPS on 443 (the ports the egress proxy takes), a self-signed certificate for NAME. */
const UPSTREAM = `const http=require('node:http'),https=require('node:https'),fs=require('node:fs'),c=require('node:crypto');
const h=(q,s)=>s.end(c.createHash('sha256').update(q.headers.authorization||'').digest('hex'));
const [a,dir]=process.argv.slice(1);
http.createServer(h).listen(80,a);
https.createServer({key:fs.readFileSync(dir+'/up.key'),cert:fs.readFileSync(dir+'/up.crt')},h).listen(443,a);`;

describe('secrets: header injection over HTTP and HTTPS, no trace in the sandbox or its snapshots, revocation, expiry, per-call grants', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let internet: TestInternet;
  let upstream: ReturnType<typeof spawnStream> | undefined;
  let client: ForkdClient;
  let id = '';
  const A = '203.0.113.9';

  const forkd = (args: string[], input?: string): Promise<CliResult> => runCli(daemon!.url, cfg.env, args, input ?? '');
  /** What the upstream saw, as the hash it answered (or ERR). */
  // `insecure`: with no grant the proxy does not terminate TLS, and the sandbox sees the upstream's own (self-signed) certificate.
  const curl = async (scheme: 'http' | 'https', insecure = false) => {
    const port = scheme === 'http' ? 80 : 443;
    const r = await forkd(['exec', id, '--', 'curl', '-sS', ...(insecure ? ['-k'] : []), '--max-time', '5', '--resolve', `${NAME}:${port}:${A}`, `${scheme}://${NAME}:${port}/v1/x`]);
    return r.stdout.trim() || `ERR ${r.stderr.trim()}`;
  };

  before(async () => {
    internet = await startTestInternet({ zone: { [NAME]: A } });
    dir = await mkdtemp(join(tmpdir(), 'forkd-secrets-'));
    await exec('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'up.key'), '-out', join(dir, 'up.crt'), '-days', '2', '-subj', `/CN=${NAME}`, '-addext', `subjectAltName=DNS:${NAME}`]);
    await exec('nsenter', [`--net=${internet.netns}`, 'ip', 'addr', 'add', `${A}/24`, 'dev', 'up0']);
    upstream = spawnStream('nsenter', [`--net=${internet.netns}`, process.execPath, '-e', UPSTREAM, A, dir]);
    upstream.stream.on('error', () => {});
    await waitFor(async () => (await exec('nsenter', [`--net=${internet.netns}`, 'ss', '-Htln'], { allowFailure: true })).stdout.includes(`${A}:443`), 10_000, 'the upstream');
    cfg = testConfig(dir);
    // The proxy verifies upstreams; this one's certificate is the test's own (how the proxy is told is the proxy's option).
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_DNS_UPSTREAM: internet.dns, FORKD_EGRESS_EXTRA_CA: join(dir, "up.crt") });
    const key = (await readFile(join(cfg.config.stateDir, 'admin.key'), 'utf8')).trim();
    client = new ForkdClient({ url: daemon.url, apiKey: key });
    const r = await forkd(['create', '--memory', '128', '--network', 'egress', '--allow-out', `${A}/32`]);
    assert.equal(r.code, 0, r.stderr);
    id = r.stdout.trim();
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    upstream?.kill();
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
    await internet?.close();
  });

  let grant = '';
  test('secret set (stdin), grant create --json: the sandbox trusts its CA', async () => {
    assert.equal((await forkd(['secret', 'set', 'TOKEN'], `${VALUE}\n`)).code, 0);
    assert.doesNotMatch((await forkd(['secret', 'ls'])).stdout, new RegExp(VALUE));
    const g = await forkd(['grant', 'create', id, '--secret', 'TOKEN', '--host', NAME, '--header', 'Authorization: Bearer {secret}', '--json']);
    assert.equal(g.code, 0, g.stderr);
    grant = (JSON.parse(g.stdout) as { id: string }).id;
    assert.match(grant, /^grt-/);
    assert.match((await forkd(['exec', id, '--', 'cat', '/usr/local/share/ca-certificates/forkd-sandbox-ca.crt'])).stdout, /BEGIN CERTIFICATE/);
  });

  test('the upstream receives the header over HTTP and HTTPS', async () => {
    assert.equal(await curl('http'), sha(`Bearer ${VALUE}`));
    assert.equal(await curl('https'), sha(`Bearer ${VALUE}`));
  });

  test("no trace of the value: the sandbox's files, its processes' environment and memory, every snapshot image on the host", async () => {
    // A process that lives across the snapshot, so its memory is in the images too.
    await forkd(['exec', id, '--background', '--tag', 'sleeper', '--', 'sleep', '600']);
    await curl('https');
    // The value is split in the command (the shell joins it): a command holding it whole would put it in the agent's memory itself.
    const split = `'${VALUE.slice(0, 8)}''${VALUE.slice(8)}'`;
    const files = await forkd(['exec', id, '--', 'sh', '-c', `grep -rlsF --exclude-dir=proc --exclude-dir=sys ${split} / ; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -cF ${split} || true`]);
    assert.equal(files.stdout, '0\n', `found in the sandbox: ${files.stdout}`);
    // Memory, from the host: every process in this test's cgroups, every readable mapping.
    const pids: number[] = [];
    for (const p of await readdir('/proc')) {
      if (!/^\d+$/.test(p)) continue;
      const cg = await readFile(`/proc/${p}/cgroup`, 'utf8').catch(() => '');
      if (cg.includes(cfg.env.FORKD_CGROUP_PARENT!)) pids.push(Number(p));
    }
    assert.ok(pids.length >= 2, 'the agent and the sleeper at least');
    for (const pid of pids) {
      assert.equal(await memoryHolds(pid, VALUE), false, `pid ${pid}'s memory holds the value`);
      assert.ok(!(await readFile(`/proc/${pid}/environ`).catch(() => Buffer.alloc(0))).includes(VALUE), `pid ${pid}'s environment holds the value`);
    }
    const snap = await forkd(['snapshot', id]);
    assert.equal(snap.code, 0, snap.stderr);
    const pool = await exec('grep', ['-rlsF', VALUE, cfg.config.pool.mountPoint], { allowFailure: true });
    assert.equal(pool.stdout, '', `found in the pool: ${pool.stdout}`);
    assert.equal(pool.code, 1, 'grep ran and found nothing');
    const state = await exec('grep', ['-rlsF', VALUE, cfg.config.stateDir], { allowFailure: true });
    assert.equal(state.stdout, '', 'nor in the state dir (sealed at rest)');
  });

  test('revoked and expired grants stop at once', async () => {
    assert.equal((await forkd(['grant', 'rm', id, grant])).code, 0);
    assert.equal(await curl('http'), NONE);
    assert.equal(await curl('https', true), NONE);
    const g = await forkd(['grant', 'create', id, '--secret', 'TOKEN', '--host', NAME, '--header', 'Authorization: Bearer {secret}', '--ttl', '3']);
    assert.equal(g.code, 0, g.stderr);
    assert.equal(await curl('http'), sha(`Bearer ${VALUE}`));
    await new Promise((r) => setTimeout(r, 3200));
    assert.equal(await curl('http'), NONE);
    assert.equal(await curl('https', true), NONE);
  });

  test('a per-call grant works only during its call', async () => {
    const sb = await client.sandboxes.get(id);
    const url = `http://${NAME}/`;
    const during = await sb.exec(['curl', '-sS', '--resolve', `${NAME}:80:${A}`, url], { grants: [{ secret: 'TOKEN', hosts: [NAME], header: 'Authorization: Bearer {secret}' }] });
    assert.equal(during.stdout.trim(), sha(`Bearer ${VALUE}`));
    assert.equal((await sb.exec(['curl', '-sS', '--resolve', `${NAME}:80:${A}`, url])).stdout.trim(), NONE);
    assert.deepEqual(await sb.listGrants(), []);
  });

  test('every use is audited without the value', async () => {
    const records = await client.audit.list({ sandbox: id, operation: 'secret.use' });
    assert.ok(records.length >= 3);
    assert.ok(!JSON.stringify(records).includes(VALUE));
  });
});

/** Whether any readable mapping of the process holds `needle` (read from the host through /proc/<pid>/mem). */
async function memoryHolds(pid: number, needle: string): Promise<boolean> {
  const maps = await readFile(`/proc/${pid}/maps`, 'utf8').catch(() => '');
  const mem = await open(`/proc/${pid}/mem`, 'r').catch(() => undefined);
  if (!mem) return false;
  const n = Buffer.from(needle);
  try {
    for (const line of maps.split('\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) r/.exec(line);
      if (!m || line.includes('[vvar')) continue;
      // User-space addresses are below 2^47: exact as numbers.
      const start = parseInt(m[1]!, 16);
      const len = parseInt(m[2]!, 16) - start;
      for (let off = 0; off < len; off += 1 << 22) {
        const size = Math.min(1 << 22, len - off) + n.length;
        const buf = Buffer.alloc(size);
        const { bytesRead } = await mem.read(buf, 0, size, start + off).catch(() => ({ bytesRead: 0 }));
        if (buf.subarray(0, bytesRead).includes(n)) return true;
      }
    }
  } finally {
    await mem.close();
  }
  return false;
}

