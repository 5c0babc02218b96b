import { ForkdError } from '@forkd/protocol';
import type { ControlStore } from '../store/control-store.js';

/** How long the health check waits for the control plane's database: a probe every few seconds must not pile up behind a hung one. */
export const STORE_HEALTH_DEADLINE_MS = 2000;

/**
 * Whether the control plane's store answers a trivial query within the
 * deadline: UNAVAILABLE otherwise (the driver's reason as the cause, for the
 * log; the message names neither the server nor the error, since
 * `/v1/health` needs no key).
 */
export async function checkStore(store: Pick<ControlStore, 'ping'>, deadlineMs = STORE_HEALTH_DEADLINE_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${deadlineMs} ms`)), deadlineMs);
  });
  try {
    await Promise.race([store.ping(), late]);
  } catch (err) {
    throw new ForkdError('UNAVAILABLE', "the control plane's database does not answer", undefined, { cause: err });
  } finally {
    clearTimeout(timer);
  }
}
