import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError } from '../usage-error.js';
import { parseAuditArgs } from './audit.js';
import { parseCpArgs } from './cp.js';
import { parseKeysArgs } from './keys.js';
import { nodesTable, parseNodesArgs } from './nodes.js';
import { parseLsArgs, stateCell } from './ls.js';
import { parseCreateArgs } from './create.js';
import { parseKillArgs, parseSignal } from './kill.js';
import { parseRmArgs } from './rm.js';
import { parseServeArgs } from './serve.js';
import { SERVE_ROLES } from '@forkd/server';
import { parseShellArgs } from './shell.js';

test('create', () => {
  assert.deepEqual(parseCreateArgs([]), { request: {}, json: false });
  assert.deepEqual(parseCreateArgs(['-t', 'py', '--memory', '1024', '--cpus', '0.5', '--pids', '64', '-e', 'A=1', '-e', 'B=2', '--json']), {
    request: { template: 'py', memoryMb: 1024, cpus: 0.5, pids: 64, env: { A: '1', B: '2' } },
    json: true,
  });
  assert.throws(() => parseCreateArgs(['--memory', 'lots']), UsageError);
  assert.deepEqual(parseCreateArgs(['--disk', '2048']), { request: { diskMb: 2048 }, json: false });
  assert.throws(() => parseCreateArgs(['--disk', '0']), UsageError);
  assert.throws(() => parseCreateArgs(['--disk', '1.5']), UsageError);
  assert.throws(() => parseCreateArgs(['extra']), UsageError);
});

test('cp: one side in a sandbox', () => {
  assert.deepEqual(parseCpArgs(['./a', 'sbx-abcdefghijkl:/w/']), {
    direction: 'upload',
    from: { kind: 'local', path: './a' },
    to: { kind: 'remote', id: 'sbx-abcdefghijkl', path: '/w/' },
    quiet: false,
  });
  assert.equal(parseCpArgs(['-q', 'sbx-abcdefghijkl:/w/a', '-']).direction, 'download');
  assert.throws(() => parseCpArgs(['a', 'b']), /neither side/);
  assert.throws(() => parseCpArgs(['sbx-abcdefghijkl:/a', 'sbx-abcdefghijkm:/b']), /both sides/);
  assert.throws(() => parseCpArgs(['a']), /missing DST/);
});

test('kill: signals by name or number, default TERM', () => {
  assert.deepEqual(parseKillArgs(['sbx-1', '42']), { id: 'sbx-1', process: 42, signal: 15 });
  assert.deepEqual(parseKillArgs(['sbx-1', 'tag:web', '-s', 'KILL']), { id: 'sbx-1', process: 'tag:web', signal: 9 });
  assert.equal(parseSignal('sigint'), 2);
  assert.equal(parseSignal('SIGUSR1'), 10);
  assert.equal(parseSignal('9'), 9);
  for (const bad of ['0', '65', 'NOPE']) assert.throws(() => parseSignal(bad), UsageError, bad);
  assert.throws(() => parseKillArgs(['sbx-1', 'web']), UsageError);
});

test('rm: ids or --all', () => {
  assert.deepEqual(parseRmArgs(['a', 'b']), { ids: ['a', 'b'], all: false });
  assert.deepEqual(parseRmArgs(['--all']), { ids: [], all: true });
  assert.throws(() => parseRmArgs([]), UsageError);
  assert.throws(() => parseRmArgs(['--all', 'a']), UsageError);
});

test('shell', () => {
  assert.deepEqual(parseShellArgs(['sbx-1', '--cmd', 'htop -d 5', '-e', 'X=1']), { id: 'sbx-1', command: 'htop -d 5', env: { X: '1' }, cwd: undefined, user: undefined });
  assert.throws(() => parseShellArgs([]), UsageError);
});

test('serve: --port and --host override the environment', () => {
  assert.deepEqual(parseServeArgs([], SERVE_ROLES), {});
  assert.deepEqual(parseServeArgs(['--port', '9000', '--host', '0.0.0.0'], SERVE_ROLES), { port: 9000, host: '0.0.0.0' });
  assert.throws(() => parseServeArgs(['--port', '70000'], SERVE_ROLES), UsageError);
  assert.throws(() => parseServeArgs(['--port', 'http'], SERVE_ROLES), UsageError);
  assert.deepEqual(parseServeArgs(['--role', 'control-plane', '--node', 'http://10.0.0.5:8081'], SERVE_ROLES), { role: 'control-plane', nodeUrl: 'http://10.0.0.5:8081' });
  assert.deepEqual(parseServeArgs(['--role', 'node'], SERVE_ROLES), { role: 'node' });
  assert.throws(() => parseServeArgs(['--role', 'scheduler'], SERVE_ROLES), UsageError);
});

test('create: lifetime and metadata; timeout', async () => {
  assert.deepEqual(parseCreateArgs(['--timeout', '600', '--on-timeout', 'kill', '--metadata', 'owner=ci', '--metadata', 'run=a=b']).request, { timeoutSeconds: 600, onTimeout: 'kill', metadata: { owner: 'ci', run: 'a=b' } });
  assert.deepEqual(parseCreateArgs(['--on-timeout', 'pause-files']).request, { onTimeout: 'pause', timeoutPauseMemory: false });
  assert.throws(() => parseCreateArgs(['--on-timeout', 'explode']), UsageError);
  assert.throws(() => parseCreateArgs(['--metadata', 'novalue']), UsageError);
  const { parseTimeoutArgs } = await import('./lifecycle.js');
  assert.deepEqual(parseTimeoutArgs(['sbx-abcdefghijkl', '0', '--json']), { id: 'sbx-abcdefghijkl', seconds: 0, json: true });
  assert.throws(() => parseTimeoutArgs(['sbx-abcdefghijkl', '-5']), UsageError);
});

test('keys and audit', () => {
  assert.deepEqual(parseKeysArgs(['create', '--tenant', 'acme', '--format', 'e2b', '--json']), { sub: 'create', request: { tenant: 'acme', format: 'e2b' }, json: true });
  assert.deepEqual(parseKeysArgs(['list']), { sub: 'list', json: false });
  assert.deepEqual(parseKeysArgs(['revoke', 'key-a', 'key-b']), { sub: 'revoke', ids: ['key-a', 'key-b'] });
  assert.throws(() => parseKeysArgs(['create', '--tenant', 'Not Ok']), UsageError);
  assert.throws(() => parseKeysArgs(['create', '--format', 'aws']), UsageError);
  assert.throws(() => parseKeysArgs(['revoke']), UsageError);
  assert.throws(() => parseKeysArgs([]), UsageError);
  assert.deepEqual(parseAuditArgs(['--sandbox', 'sbx-abcdefghijkl', '--limit', '5', '--json']), { filter: { sandbox: 'sbx-abcdefghijkl', limit: 5 }, json: true });
  assert.throws(() => parseAuditArgs(['--limit', 'x']), UsageError);
});

test('nodes', () => {
  assert.deepEqual(parseNodesArgs(['ls', '--json']), { sub: 'ls', json: true });
  assert.deepEqual(parseNodesArgs(['drain', 'node-a', 'node-b']), { sub: 'drain', ids: ['node-a', 'node-b'] });
  assert.deepEqual(parseNodesArgs(['rm', 'node-a']), { sub: 'rm', ids: ['node-a'] });
  assert.throws(() => parseNodesArgs(['drain']), UsageError);
  assert.throws(() => parseNodesArgs(['ls', 'extra']), UsageError);
  assert.throws(() => parseNodesArgs(['move']), UsageError);
  assert.deepEqual(parseNodesArgs(['migrate', 'sbx-abcdefghijkl', '--to', 'node-b']), { sub: 'migrate', sandbox: 'sbx-abcdefghijkl', to: 'node-b' });
  assert.deepEqual(parseNodesArgs(['migrate', 'sbx-abcdefghijkl']), { sub: 'migrate', sandbox: 'sbx-abcdefghijkl' });
  assert.throws(() => parseNodesArgs(['migrate']), UsageError);
  const out = nodesTable([{ id: 'node-a', url: 'http://10.0.0.5:8081', state: 'draining', registeredAt: '2026-01-01T00:00:00.000Z', lastSeenAt: '2026-01-01T00:00:00.000Z', sandboxes: 3, capacity: { memoryBytes: 8 * 1024 ** 3, memoryFreeBytes: 2 * 1024 ** 3, cpus: 4, poolFreeBytes: 1024 ** 3, running: 2, paused: 1, templates: ['base'] } }], Date.parse('2026-01-01T00:00:05.000Z'));
  assert.match(out, /node-a\s+draining\s+2\.0 GB\s+1\.0 GB\s+3\s+2/);
});

test('ls filters', () => {
  assert.deepEqual(parseLsArgs(['--state', 'running,paused', '--metadata', 'owner=ci', '--json']), { filter: { state: ['running', 'paused'], metadata: { owner: 'ci' } }, json: true });
  assert.throws(() => parseLsArgs(['--state', 'sleepy']), UsageError);
  assert.deepEqual(parseLsArgs(['--all-tenants']), { filter: { allTenants: true }, json: false });
});

test('ls says when a sandbox came back after losing its processes, and what it lost', () => {
  const base = { id: 'sbx-abcdefghijkl', template: 'base', limits: { memoryMb: 512, cpus: 1, pids: 1024 }, env: {}, metadata: {}, createdAt: '2025-01-01T00:00:00Z', hostname: 'sbx-abcdefghijkl' };
  const now = Date.parse('2025-01-01T01:00:00Z');
  const at = '2025-01-01T00:55:00Z';
  assert.equal(stateCell({ ...base, state: 'running', recovered: { at, reason: 'host reboot', fromSnapshot: 'snap-aaaaaaaaaaaa', lostSeconds: 12.5 } }, now), 'running (recovered 5m ago from snap-aaaaaaaaaaaa, 12.5s lost)');
  assert.equal(stateCell({ ...base, state: 'running', recovered: { at, reason: 'host reboot' } }, now), 'running (recovered 5m ago cold from its files, memory lost)');
  assert.equal(stateCell({ ...base, state: 'failed', error: 'the sandbox processes were lost: x' }, now), 'failed (the sandbox processes were lost: x)');
  assert.equal(stateCell({ ...base, state: 'running' }, now), 'running');
});
