import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { checkPoolFree, minFreeBytes } from './pool-space.js';

const MB = 2 ** 20;
const GB = 2 ** 30;

test('the threshold is the larger of the MB floor and the percentage', () => {
  assert.equal(minFreeBytes({ sizeBytes: 64 * GB, freeBytes: 0 }, { minFreeMb: 2048, minFreePct: 5 }), Math.floor(64 * GB * 0.05));
  assert.equal(minFreeBytes({ sizeBytes: 16 * GB, freeBytes: 0 }, { minFreeMb: 2048, minFreePct: 5 }), 2048 * MB);
  assert.equal(minFreeBytes({ sizeBytes: 16 * GB, freeBytes: 0 }, { minFreeMb: 0, minFreePct: 0 }), 0);
});

test('below the threshold: RESOURCE_EXHAUSTED naming the setting and what was refused', () => {
  const policy = { minFreeMb: 1024, minFreePct: 0 };
  checkPoolFree({ sizeBytes: 16 * GB, freeBytes: 1024 * MB }, policy, 'create a sandbox');
  assert.throws(
    () => checkPoolFree({ sizeBytes: 16 * GB, freeBytes: 1023 * MB }, policy, 'fork a sandbox'),
    (e: unknown) => e instanceof ForkdError && e.code === 'RESOURCE_EXHAUSTED' && /fork a sandbox/.test(e.message) && /FORKD_POOL_MIN_FREE_MB/.test(e.message) && e.details?.thresholdMb === 1024 && e.details?.freeMb === 1023,
  );
});
