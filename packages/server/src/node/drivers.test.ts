import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../shared/config.js';
import { checkDrivers } from './drivers.js';

test('driver names: the defaults pass; an unknown one fails naming the choices', () => {
  checkDrivers(loadConfig({}));
  assert.throws(() => checkDrivers(loadConfig({ FORKD_RUNTIME: 'firecracker' })), /FORKD_RUNTIME=firecracker is not one of: runc/);
  assert.throws(() => checkDrivers(loadConfig({ FORKD_STORAGE: 'zfs' })), /FORKD_STORAGE=zfs is not one of: btrfs/);
  // Not an own entry of the registry (no prototype lookup).
  assert.throws(() => checkDrivers(loadConfig({ FORKD_STORAGE: 'constructor' })), /FORKD_STORAGE=constructor/);
});
