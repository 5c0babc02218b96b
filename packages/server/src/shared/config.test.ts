import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from './config.js';

test('runtime and storage drivers: runc and btrfs unless FORKD_RUNTIME / FORKD_STORAGE say otherwise', () => {
  const d = loadConfig({});
  assert.equal(d.runtime, 'runc');
  assert.equal(d.storage, 'btrfs');
  const c = loadConfig({ FORKD_RUNTIME: 'firecracker', FORKD_STORAGE: 'zfs' });
  // Names are checked against the registry at start-up (node/drivers.ts), not here.
  assert.equal(c.runtime, 'firecracker');
  assert.equal(c.storage, 'zfs');
});

test("FORKD_EGRESS_OPERATOR_ALLOW: the operator's CIDRs past the host protection; a bad one stops the start", () => {
  assert.equal(loadConfig({}).net.operatorAllow, undefined);
  assert.deepEqual(loadConfig({ FORKD_EGRESS_OPERATOR_ALLOW: ' 169.254.169.254/32, 127.0.0.53,fd00::/8 ' }).net.operatorAllow, ['169.254.169.254/32', '127.0.0.53', 'fd00::/8']);
  for (const bad of ['localhost', '10.0.0.0/33', '10.0.0.0/8/1', '0177.0.0.1']) assert.throws(() => loadConfig({ FORKD_EGRESS_OPERATOR_ALLOW: bad }), /FORKD_EGRESS_OPERATOR_ALLOW/, bad);
});

test('FORKD_DATABASE_URL: PostgreSQL for the control plane when set; another scheme stops the start without echoing the URL', () => {
  assert.equal(loadConfig({}).databaseUrl, undefined);
  assert.equal(loadConfig({ FORKD_DATABASE_URL: '' }).databaseUrl, undefined);
  assert.equal(loadConfig({ FORKD_DATABASE_URL: 'postgres://forkd:pw@db:5432/forkd' }).databaseUrl, 'postgres://forkd:pw@db:5432/forkd');
  assert.equal(loadConfig({ FORKD_DATABASE_URL: 'postgresql://db/forkd' }).databaseUrl, 'postgresql://db/forkd');
  for (const bad of ['mysql://u:s3cret@db/forkd', 's3cret', 'postgres://']) {
    assert.throws(() => loadConfig({ FORKD_DATABASE_URL: bad }), (err: Error) => /FORKD_DATABASE_URL/.test(err.message) && !err.message.includes('s3cret'), bad);
  }
});

test('FORKD_NODE_CALL_TIMEOUT_S: READ,LIFECYCLE,TRANSFER seconds; fewer keep the defaults; anything else stops the start', () => {
  assert.deepEqual(loadConfig({}).fleet.nodeCallTimeouts, { readMs: 30_000, lifecycleMs: 300_000, transferMs: 3_600_000 });
  assert.deepEqual(loadConfig({ FORKD_NODE_CALL_TIMEOUT_S: '5' }).fleet.nodeCallTimeouts, { readMs: 5000, lifecycleMs: 300_000, transferMs: 3_600_000 });
  assert.deepEqual(loadConfig({ FORKD_NODE_CALL_TIMEOUT_S: '0.5, 60 ,7200' }).fleet.nodeCallTimeouts, { readMs: 500, lifecycleMs: 60_000, transferMs: 7_200_000 });
  assert.deepEqual(loadConfig({ FORKD_NODE_CALL_TIMEOUT_S: ',,10' }).fleet.nodeCallTimeouts, { readMs: 30_000, lifecycleMs: 300_000, transferMs: 10_000 });
  for (const bad of ['0', '-1', 'soon', '1,2,3,4', '30,1e9']) assert.throws(() => loadConfig({ FORKD_NODE_CALL_TIMEOUT_S: bad }), /FORKD_NODE_CALL_TIMEOUT_S/, bad);
});

test('sandbox hosts over HTTPS: certificate and key together, a domain for them, port 443 unless FORKD_PROXY_HTTPS_PORT says otherwise', () => {
  assert.deepEqual([loadConfig({}).proxyDomain, loadConfig({}).proxyTls], [undefined, undefined]);
  assert.equal(loadConfig({ FORKD_PROXY_DOMAIN: 'Sbx.Example.COM' }).proxyDomain, 'sbx.example.com');
  assert.equal(loadConfig({ FORKD_PROXY_DOMAIN: 'localhost' }).proxyDomain, 'localhost', 'browsers resolve *.localhost to loopback themselves');
  const tls = { FORKD_PROXY_DOMAIN: 'sbx.example.com', FORKD_PROXY_TLS_CERT_FILE: '/etc/forkd/wild.pem', FORKD_PROXY_TLS_KEY_FILE: '/etc/forkd/wild.key' };
  assert.deepEqual(loadConfig(tls).proxyTls, { certFile: '/etc/forkd/wild.pem', keyFile: '/etc/forkd/wild.key', port: 443 });
  assert.equal(loadConfig({ ...tls, FORKD_PROXY_HTTPS_PORT: '8443' }).proxyTls?.port, 8443);
  const refused: [Record<string, string>, RegExp][] = [
    [{ ...tls, FORKD_PROXY_TLS_KEY_FILE: '' }, /go together/],
    [{ ...tls, FORKD_PROXY_DOMAIN: '' }, /needs FORKD_PROXY_DOMAIN/],
    [{ ...tls, FORKD_PROXY_HTTPS_PORT: '70000' }, /FORKD_PROXY_HTTPS_PORT/],
    [{ FORKD_PROXY_HTTPS_PORT: '8443' }, /needs FORKD_PROXY_TLS_CERT_FILE/],
    ...['https://sbx.example.com', 'sbx.example.com:443', '*.sbx.example.com', 'sbx..example.com', 'sbx.example.com.', '-sbx.example.com'].map((d): [Record<string, string>, RegExp] => [{ FORKD_PROXY_DOMAIN: d }, /FORKD_PROXY_DOMAIN must be a DNS name/]),
  ];
  for (const [env, re] of refused) assert.throws(() => loadConfig(env), re, JSON.stringify(env));
});

test('host settings forkd changes at start: enable unless told to leave them; anything else stops the start', () => {
  const base = loadConfig({});
  assert.deepEqual([base.net.hostForwarding, base.cgroupFavorDynmods], ['enable', 'enable']);
  const left = loadConfig({ FORKD_HOST_FORWARDING: 'leave', FORKD_CGROUP_FAVORDYNMODS: 'leave' });
  assert.deepEqual([left.net.hostForwarding, left.cgroupFavorDynmods], ['leave', 'leave']);
  assert.throws(() => loadConfig({ FORKD_CGROUP_FAVORDYNMODS: 'off' }), /FORKD_CGROUP_FAVORDYNMODS: enable or leave/);
  assert.throws(() => loadConfig({ FORKD_HOST_FORWARDING: '0' }), /FORKD_HOST_FORWARDING: enable or leave/);
});

test("FORKD_CRIU_DUMP_LOG_LEVEL: CRIU's log level for relayed dumps, 2 unless set to one of 0-4; anything else stops the start", () => {
  assert.equal(loadConfig({}).criuDumpLogLevel, 2);
  assert.equal(loadConfig({ FORKD_CRIU_DUMP_LOG_LEVEL: '' }).criuDumpLogLevel, 2);
  for (const v of ['0', '1', '4']) assert.equal(loadConfig({ FORKD_CRIU_DUMP_LOG_LEVEL: v }).criuDumpLogLevel, Number(v));
  for (const bad of ['5', '-1', '22', 'debug', ' 2', '2.0']) assert.throws(() => loadConfig({ FORKD_CRIU_DUMP_LOG_LEVEL: bad }), /FORKD_CRIU_DUMP_LOG_LEVEL must be one of 0-4/, bad);
});
