import type { WireResponse } from './fetch-like.js';
import type { ProcessExit } from './types.js';
import { readNdjson } from './ndjson.js';
import { consumeProcessEvents, type ProcessEventHandlers } from './process-events.js';
import { retryable, StreamPosition, withReconnect, type ResumePoint } from './resume.js';

export interface FollowOptions {
  /** How long to keep trying to resume after the stream went (0: never). */
  reconnectMs: number;
  signal?: AbortSignal | undefined;
  /** Re-attaches to the process from `at` (`GET .../processes/{pid}/output?token=&offset=`). */
  reopen(pid: number, at: ResumePoint): Promise<WireResponse>;
}

/** Reopenings in a row that brought no event at all before giving up: a server that keeps ending the stream at once. */
const MAX_EMPTY_REOPENS = 5;

/** Counts the stream's position as events arrive; the caller's handlers see each event once. */
function counted(h: ProcessEventHandlers, pos: StreamPosition, seen: { pid: number; events: number }): ProcessEventHandlers {
  const tick = () => void seen.events++;
  return {
    ...h,
    onStartedAt: (e) => {
      tick();
      pos.started(e);
    },
    onStarted: (p) => {
      // A resumed stream starts again; its caller heard of the process once.
      if (seen.pid === 0) h.onStarted?.(p);
      seen.pid = p.pid;
    },
    onStdout: (c) => {
      tick();
      pos.output(c.byteLength);
      h.onStdout?.(c);
    },
    onStderr: (c) => {
      tick();
      pos.output(c.byteLength);
      h.onStderr?.(c);
    },
    onPosition: (offset) => {
      tick();
      pos.moved(offset);
    },
  };
}

/**
 * Follows a process's NDJSON stream to its exit. When the stream ends or
 * breaks before the exit (the daemon stopped or restarted: the process runs
 * on in the sandbox) and the server gave a resume point, it re-attaches from
 * where it was, retrying while forkd is unreachable (see withReconnect), so
 * output goes on with nothing lost or repeated and the real exit comes.
 * Resolves null when it ends without an exit and cannot resume.
 */
export async function followProcess(first: WireResponse, h: ProcessEventHandlers, o: FollowOptions): Promise<ProcessExit | null> {
  const pos = new StreamPosition();
  const seen = { pid: 0, events: 0 };
  const handlers = counted(h, pos, seen);
  let res = first;
  for (let empty = 0; ; ) {
    const before = seen.events;
    try {
      const exit = await consumeProcessEvents(readNdjson(res.body!), handlers);
      if (exit) return exit;
    } catch (err) {
      if (!retryable(err) || !pos.point || o.reconnectMs <= 0 || o.signal?.aborted) throw err;
    }
    const at = pos.point;
    empty = seen.events > before ? 0 : empty + 1;
    if (!at || o.reconnectMs <= 0 || o.signal?.aborted || empty > MAX_EMPTY_REOPENS) return null;
    res = await withReconnect(() => o.reopen(seen.pid, at), { timeoutMs: o.reconnectMs, signal: o.signal, what: `the stream of process ${seen.pid}` });
  }
}
