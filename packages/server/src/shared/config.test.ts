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
