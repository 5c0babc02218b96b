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
