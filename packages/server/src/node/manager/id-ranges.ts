import { ForkdError } from '@forkd/protocol';

/** Ids per sandbox: what a Debian root uses (0..65535), nobody (65534) included. */
export const ID_RANGE_SIZE = 65536;
/** Ranges start at 2^31: far from the ids of host users and of /etc/subuid's usual 100000+. */
const FIRST = 2 ** 31;
/** The last range would end at 2^32 - 1, which is (uid_t)-1: not a valid id. */
const SLOTS = (2 ** 32 - FIRST) / ID_RANGE_SIZE - 1;

/**
 * The first host id of a user namespace range that no one uses: random, so
 * a sandbox's range says nothing about its neighbours, and a new sandbox
 * never gets the range of one whose files or memory images still exist.
 */
export function pickIdRange(used: ReadonlySet<number>, random: () => number = Math.random): number {
  for (let i = 0; i < 64; i++) {
    const hostId = FIRST + Math.floor(random() * SLOTS) * ID_RANGE_SIZE;
    if (!used.has(hostId)) return hostId;
  }
  for (let s = 0; s < SLOTS; s++) if (!used.has(FIRST + s * ID_RANGE_SIZE)) return FIRST + s * ID_RANGE_SIZE;
  throw new ForkdError('RESOURCE_EXHAUSTED', 'no free user namespace range on this node');
}
