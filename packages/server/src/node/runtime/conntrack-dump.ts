import { readFile, writeFile } from 'node:fs/promises';

const BUCKETS = '/proc/sys/net/netfilter/nf_conntrack_buckets';

/** The conntrack hash size forkd leaves a host with (FORKD_CONNTRACK_BUCKETS; 0 leaves it alone). */
export const DEFAULT_CONNTRACK_BUCKETS = 16_384;

/**
 * CRIU dumps every network namespace's conntrack entries with a netlink
 * dump that walks the whole host hash table, every bucket of every
 * namespace, twice per dump (entries, then expectations through the same
 * request), inside the freeze. The kernel sizes that table from the host's
 * memory: 262,144 buckets on a 24 GB host walk in ~10 ms each (1.3 µs per
 * 32 buckets, measured), so ~20 ms of every snapshot's freeze were spent on
 * empty buckets. 16,384 buckets walk in ~0.6 ms and still hold the
 * default nf_conntrack_max entries at 16 per bucket (a lookup cost only a
 * host with hundreds of thousands of tracked connections notices). Never
 * grown: an operator's smaller value stays. Resolves with what it did.
 */
export async function shrinkConntrackHash(target = DEFAULT_CONNTRACK_BUCKETS): Promise<{ from: number; to: number } | undefined> {
  if (target <= 0) return undefined;
  const now = Number((await readFile(BUCKETS, 'utf8').catch(() => '')).trim());
  if (!Number.isSafeInteger(now) || now <= target) return undefined;
  // Read-only outside the initial network namespace, or without conntrack: nothing to do.
  const ok = await writeFile(BUCKETS, String(target)).then(() => true, () => false);
  return ok ? { from: now, to: target } : undefined;
}
