import { ForkdError } from '@forkd/protocol/errors';

/** Where a process stream is, to resume it after its connection went (the protocol's ResumePoint). */
export interface ResumePoint {
  token: number;
  offset: number;
}

/** How long a stream whose connection went (a daemon restart) keeps trying to resume, unless the client says otherwise. */
export const DEFAULT_RECONNECT_MS = 60_000;

/** What an output event moves a stream's position by beyond its bytes: the guest ring's frame header (see the protocol's ResumePoint). */
const OUTPUT_FRAME_OVERHEAD = 5;

/**
 * A stream's position as its client counts it: set by `started` (a server
 * that gives a token and offset: the stream can resume) and by `position`
 * events, moved by every output event. A re-attach at that point gets each
 * byte once: what came before it is not sent again, nothing after it is lost.
 */
export class StreamPosition {
  #token: number | undefined;
  #offset = 0;

  started(e: { token?: unknown; offset?: unknown }): void {
    if (typeof e.token !== 'number' || typeof e.offset !== 'number') return;
    this.#token = e.token;
    this.#offset = e.offset;
  }

  output(bytes: number): void {
    this.#offset += OUTPUT_FRAME_OVERHEAD + bytes;
  }

  moved(offset: number): void {
    if (Number.isSafeInteger(offset) && offset >= 0) this.#offset = offset;
  }

  /** Undefined: the server cannot resume this stream (an agent too old, a server too old). */
  get point(): ResumePoint | undefined {
    return this.#token === undefined ? undefined : { token: this.#token, offset: this.#offset };
  }
}

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
