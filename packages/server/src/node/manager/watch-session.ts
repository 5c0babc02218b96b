import type { GuestClient } from '../guest/guest-client.js';
import type { SessionHost } from './process-session.js';

import type { WatchHandle } from '../../node-contract/node-types.js';
export type { WatchHandle };

type GuestWatch = Awaited<ReturnType<GuestClient['watch']>>;

/**
 * A directory watch that outlives its guest connection: the guest's inotify
 * watch goes with the connection a snapshot lets go of, so it is opened
 * again once the sandbox is reachable. Changes made between the detach and
 * the new watch (the frozen part makes none) are not reported.
 */
export function watchSession(host: SessionHost, id: string, first: GuestWatch, reopen: (g: GuestClient) => Promise<GuestWatch>): WatchHandle {
  const abort = new AbortController();
  let current = first;
  const done = (async () => {
    for (;;) {
      const why = await current.done.catch(() => 'lost' as const);
      if (why === 'client' || abort.signal.aborted) return;
      try {
        const { guest } = await host.reattachPoint(id, abort.signal);
        current = await reopen(guest);
      } catch (err) {
        if (!abort.signal.aborted) host.warn('watch could not be re-opened', { sandbox: id, error: String(err) });
        return;
      }
      if (abort.signal.aborted) current.close();
    }
  })();
  return {
    close: () => {
      abort.abort();
      current.close();
    },
    done,
  };
}
