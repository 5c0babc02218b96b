import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { checkDiskAdmission, committedDiskMb } from './disk-admission.js';

const GB = 2 ** 30;

test('quotas add up to overcommit × the pool, no more', () => {
  checkDiskAdmission(0, 64 * 1024, 16 * GB, 4);
  checkDiskAdmission(60 * 1024, 4 * 1024, 16 * GB, 4);
  assert.throws(
    () => checkDiskAdmission(60 * 1024, 4 * 1024 + 1, 16 * GB, 4),
    (e: unknown) => e instanceof ForkdError && e.code === 'RESOURCE_EXHAUSTED' && /FORKD_DISK_OVERCOMMIT/.test(e.message) && e.details?.limit === 'FORKD_DISK_OVERCOMMIT',
  );
});

test('overcommit 0 turns the check off', () => {
  checkDiskAdmission(10 ** 9, 10 ** 9, 16 * GB, 0);
});

test('records without a quota (older versions) count the default', () => {
  assert.equal(committedDiskMb([{ limits: { diskMb: 100 } }, { limits: {} }, { limits: { diskMb: undefined } }], 10240), 100 + 2 * 10240);
});
