import { statfsSync } from 'node:fs';
import { ForkdError } from '@forkd/protocol';

export interface PoolSpace {
  sizeBytes: number;
  /** What unprivileged writers can still get (statfs f_bavail: Btrfs's estimate, metadata reserve excluded). */
  freeBytes: number;
}

/** Below max(minFreeMb, minFreePct % of the pool) free, nothing new is made in the pool. */
export interface PoolFreePolicy {
  minFreeMb: number;
  minFreePct: number;
}

const MB = 2 ** 20;

/**
 * Synchronous (one statfs, microseconds): a caller checks and then takes its
 * sandbox's lock or records its object in the same turn, so a delete asked
 * for after it cannot slip in between.
 */
export function readPoolSpace(path: string): PoolSpace {
  const s = statfsSync(path);
  return { sizeBytes: s.blocks * s.bsize, freeBytes: s.bavail * s.bsize };
}

export function minFreeBytes(space: PoolSpace, policy: PoolFreePolicy): number {
  return Math.max(policy.minFreeMb * MB, Math.floor((space.sizeBytes * policy.minFreePct) / 100));
}

/**
 * RESOURCE_EXHAUSTED when the pool is below its free-space threshold. Called
 * before a create, fork or snapshot makes anything, so a refusal leaves
 * nothing to clean up; running sandboxes keep writing into what is left
 * (their quotas bound each of them).
 */
export function checkPoolFree(space: PoolSpace, policy: PoolFreePolicy, what: string): void {
  const floor = minFreeBytes(space, policy);
  if (space.freeBytes >= floor) return;
  throw new ForkdError(
    'RESOURCE_EXHAUSTED',
    `the storage pool is almost full (${Math.floor(space.freeBytes / MB)} MB free, below the ${Math.ceil(floor / MB)} MB threshold: FORKD_POOL_MIN_FREE_MB / FORKD_POOL_MIN_FREE_PCT); cannot ${what} until snapshots or sandboxes are deleted`,
    { limit: 'FORKD_POOL_MIN_FREE_MB', freeMb: Math.floor(space.freeBytes / MB), thresholdMb: Math.ceil(floor / MB) },
  );
}
