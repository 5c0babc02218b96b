import type { Logger } from '../../shared/logger.js';
import { shrinkConntrackHash } from './conntrack-dump.js';
import { refreshCriuKdat } from './criu-kdat.js';

/**
 * What CRIU wants of the host, done once at the node's start: its kernel
 * probe cached (cacheDir; '' leaves every run to probe) and the conntrack
 * hash it walks inside every freeze small (conntrackBuckets; 0 leaves it).
 */
export async function prepareCriuHost(o: { criu: string; cacheDir: string; conntrackBuckets: number }, log: Pick<Logger, 'info' | 'warn'>): Promise<void> {
  if (!o.cacheDir || !(await refreshCriuKdat(o.criu, o.cacheDir))) log.warn('criu kernel probe not cached: every checkpoint and restore will probe again');
  const conntrack = await shrinkConntrackHash(o.conntrackBuckets);
  if (conntrack) log.info('conntrack hash shrunk: CRIU walks all of it inside every freeze', conntrack);
}
