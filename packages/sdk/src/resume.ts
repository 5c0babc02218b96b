import { ForkdError } from '@forkd/protocol/errors';

export { StreamPosition, type ResumePoint } from '@forkd/protocol/stream-position';

/** How long a stream whose connection went (a daemon restart) keeps trying to resume, unless the client says otherwise. */
export const DEFAULT_RECONNECT_MS = 60_000;

/** A failure worth trying again: forkd unreachable or restarting (refused, reset, 502/503/504). */
export function retryable(err: unknown): boolean {
  return err instanceof ForkdError && (err.code === 'UNAVAILABLE' || err.code === 'TIMEOUT');
}

export interface ReconnectOptions {
  /** Give up after this long (0: do not resume). */
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** What is being resumed, for the error when it cannot be. */
  what: string;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Calls `attempt` until it succeeds: while it fails with a retryable error
 * (forkd down or restarting), again after 100 ms, doubling up to 2 s, for at
 * most `timeoutMs`. Anything else (the process or sandbox gone, a refusal)
 * ends it at once.
 */
export async function withReconnect<T>(attempt: () => Promise<T>, o: ReconnectOptions): Promise<T> {
  const until = Date.now() + o.timeoutMs;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
    try {
      return await attempt();
    } catch (err) {
      if (o.signal?.aborted) throw new ForkdError('CANCELLED', 'request aborted', undefined, { cause: err });
      if (!retryable(err)) throw err;
      if (Date.now() + delay > until) {
        const why = err instanceof Error ? err.message : String(err);
        throw new ForkdError('UNAVAILABLE', `could not resume ${o.what} within ${Math.round(o.timeoutMs / 1000)} s (${why}); it may still be running`, undefined, { cause: err });
      }
      await sleep(delay, o.signal);
    }
  }
}
