import { ForkdError } from '@forkd/protocol';
import { KeyedBuckets } from '../../shared/keyed-buckets.js';

/**
 * Failed authentications per source address: 20 in a burst, then one every
 * 3 s. While a source's bucket is empty every attempt from it is refused
 * before its key is looked at, valid or not, so guessing gains nothing from
 * a flood. The address is the TCP peer's: behind a reverse proxy every caller
 * shares the proxy's (forkd does not trust X-Forwarded-For).
 */
export class AuthThrottle {
  readonly #failures: KeyedBuckets;

  constructor(opts: { burst?: number; perSecond?: number; now?: () => number } = {}) {
    this.#failures = new KeyedBuckets({ capacity: opts.burst ?? 20, perSecond: opts.perSecond ?? 1 / 3, ...(opts.now ? { now: opts.now } : {}) });
  }

  /** Refuses a source that has used up its failures, with a retry hint. */
  check(source: string): void {
    const ms = this.#failures.waitMs(source);
    if (ms > 0) {
      const s = Math.ceil(ms / 1000);
      throw new ForkdError('RESOURCE_EXHAUSTED', `too many failed authentications from this address; retry in ${s} s`, { retryAfterSeconds: s });
    }
  }

  failed(source: string): void {
    this.#failures.spend(source);
  }
}
