import { ForkdError } from '@forkd/protocol';

/**
 * Node admission for disk: the quotas of every sandbox on the node (paused
 * and failed ones keep their files) may add up to `overcommit` × the pool's
 * size. Quotas are ceilings, most sandboxes use a small part of theirs, so
 * the ratio is generous; it keeps one node from promising more than it could
 * ever hold several times over. 0 turns the check off.
 */
export function checkDiskAdmission(committedMb: number, demandMb: number, poolSizeBytes: number, overcommit: number): void {
  if (overcommit <= 0 || demandMb <= 0 || poolSizeBytes <= 0) return;
  const capMb = Math.floor((poolSizeBytes / 2 ** 20) * overcommit);
  if (committedMb + demandMb <= capMb) return;
  throw new ForkdError(
    'RESOURCE_EXHAUSTED',
    `this node cannot take ${demandMb} MB more of disk quota: sandboxes' disk quotas would pass ${overcommit}× the storage pool's size (FORKD_DISK_OVERCOMMIT); ask for a smaller diskMb or delete sandboxes`,
    { limit: 'FORKD_DISK_OVERCOMMIT', poolMb: Math.floor(poolSizeBytes / 2 ** 20), committedMb, requestedMb: demandMb },
  );
}

/** The quotas the node has promised: every recorded sandbox's (older records without one count the default). */
export function committedDiskMb(records: Iterable<{ limits: { diskMb?: number | undefined } }>, defaultDiskMb: number): number {
  let sum = 0;
  for (const r of records) sum += r.limits.diskMb ?? defaultDiskMb;
  return sum;
}
