import type { Context } from 'hono';
import type { ErrorBody, ExecEvent } from '@forkd/protocol';
import type { ExecExit, OutputHandlers, ProcessStream, WaitingCall } from '../../../node-contract/index.js';
import type { Logger } from '../../../shared/logger.js';
import type { Principal } from '../../auth/api-keys.js';
import { NDJSON_HEADERS, ndjsonStream } from '../../../shared/ndjson-stream.js';
import type { OpenStreams } from '../../../shared/open-streams.js';
import { logRequestError, newRequestId, publicError } from '../public-error.js';

function exitEvent(e: ExecExit): ExecEvent {
  return { type: 'exit', exitCode: e.exitCode, signal: e.signal, oomKilled: e.oomKilled };
}

/** An error event of a stream already answered (NDJSON): logged whole, shown as the caller may see it. */
export function streamError(c: Context, err: unknown): ErrorBody['error'] {
  const requestId = (c.get('requestId') as string | undefined) ?? newRequestId();
  const who = c.get('who') as Principal | undefined;
  const log = c.get('logger') as Logger | undefined;
  if (log) logRequestError(log, err, { requestId, method: c.req.method, path: c.req.path, ...(who ? { tenant: who.tenant, keyId: who.keyId } : {}), stream: true });
  return publicError(err, requestId, !!who?.admin);
}

type StreamHandlers = Required<Omit<OutputHandlers, 'abort'>> & Pick<OutputHandlers, 'abort'>;

/**
 * The handlers that write a stream's events. Output waits for `started`
 * (`opened`): a client counts its position from the offset `started` gives
 * (see the protocol's ResumePoint).
 */
function eventHandlers(out: { write(e: ExecEvent): Promise<void> }, abort: AbortSignal, onWaiting: () => void): { h: StreamHandlers; opened: () => void } {
  let opened!: () => void;
  const started = new Promise<void>((r) => (opened = r));
  const line = async (e: ExecEvent) => {
    await started;
    await out.write(e);
  };
  const h: StreamHandlers = {
    onStdout: (d: Buffer) => line({ type: 'stdout', data: d.toString('base64') }),
    onStderr: (d: Buffer) => line({ type: 'stderr', data: d.toString('base64') }),
    onDropped: (n: number) => line({ type: 'dropped', bytes: n }),
    onRewound: () => line({ type: 'rewound' }),
    onPosition: (offset: number) => line({ type: 'position', offset }),
    onWaiting: (w: WaitingCall) => {
      void out.write({ type: 'waiting', ...w });
      onWaiting();
    },
    onLimit: (l: { limit: 'maxOutputBytes' | 'maxDurationSeconds'; rule: string }) => line({ type: 'limit', ...l }),
    abort,
  };
  return { h, opened };
}

/**
 * Streams a process (already started or attached) as NDJSON events. A call
 * held for approval (policy) is answered at once with its `waiting` event;
 * its start, or its refusal as an `error` event, follows in the stream.
 * `finish` runs once when the stream ends, however (exit, error, the caller
 * gone), or when the start fails. A stopping daemon ends it without an exit
 * (OpenStreams): its client resumes it from the next daemon.
 */
export function processStream(c: Context, start: (h: StreamHandlers) => Promise<ProcessStream>, after?: (p: { pid: number }) => Promise<void>, finish?: () => Promise<void>) {
  let finished = false;
  const end = () => {
    if (finished || !finish) return;
    finished = true;
    void finish().catch((err: unknown) => (c.get('logger') as Logger | undefined)?.warn('stream clean-up failed', { error: String(err) }));
  };
  let detach = () => {};
  const gone = new AbortController();
  const out = ndjsonStream(() => {
    gone.abort();
    detach();
    end();
  });
  let res: Response | undefined;
  const respond = () => (res ??= c.body(out.stream, 200, NDJSON_HEADERS));
  let waited = false;
  let answerEarly = () => {};
  const early = new Promise<Response>((r) => (answerEarly = () => r(respond())));
  const { h, opened } = eventHandlers(out, gone.signal, () => {
    waited = true;
    answerEarly();
  });
  const run = start(h).then(
    ({ process, exit }) => {
      detach = () => process.detach();
      const unregister = (c.get('streams') as OpenStreams | undefined)?.add(() => process.detach({ hold: true }));
      void out.write({ type: 'started', pid: process.pid, ...(process.tag ? { tag: process.tag } : {}), pty: process.pty, ...process.resume });
      opened();
      void (async () => {
        try {
          if (after) await after(process);
          const e = await exit;
          if (e) await out.write(exitEvent(e));
        } catch (err) {
          await out.write({ type: 'error', error: streamError(c, err) });
        } finally {
          unregister?.();
          end();
          out.close();
        }
      })();
      return respond();
    },
    async (err: unknown) => {
      end();
      if (!waited) throw err;
      // Already answered (the call waited): the refusal is the stream's last event.
      await out.write({ type: 'error', error: streamError(c, err) });
      out.close();
      return respond();
    },
  );
  return Promise.race([run, early]);
}
