import { ForkdError, fromErrorBody } from '@forkd/protocol';
import type { ExecExit, OutputHandlers, ProcessHandle, ProcessStream, ResumePoint } from '../node-contract/node-types.js';
import type { NodeTransport } from './node-transport.js';
import type { ProcessLine } from './node-wire.js';

type Started = Extract<ProcessLine, { type: 'started' }>;

/**
 * A process stream served by a remote node. Its handle's calls are small
 * POSTs to the stream's handle on the node, sent one at a time in the order
 * they were made (a write then closeStdin must not arrive the other way round).
 */
class RemoteProcessHandle implements ProcessHandle {
  readonly pid: number;
  readonly tag: string | undefined;
  readonly pty: boolean;
  readonly resume: ResumePoint | undefined;
  readonly #t: NodeTransport;
  readonly #path: string;
  readonly #abort: AbortController;
  #queue: Promise<unknown> = Promise.resolve();
  detached = false;

  constructor(t: NodeTransport, sandbox: string, s: Started, abort: AbortController) {
    this.pid = s.pid;
    this.tag = s.tag;
    this.pty = s.pty;
    this.resume = s.token !== undefined && s.offset !== undefined ? { token: s.token, offset: s.offset } : undefined;
    this.#t = t;
    this.#path = `/sandboxes/${encodeURIComponent(sandbox)}/processes/${s.pid}/streams/${encodeURIComponent(s.stream)}`;
    this.#abort = abort;
  }

  #send(op: string, o: { json?: unknown; body?: Uint8Array }): Promise<void> {
    const p = this.#queue.then(() => this.#t.call<void>('POST', `${this.#path}/${op}`, { ...o, kind: 'lifecycle' }));
    this.#queue = p.catch(() => {});
    return p;
  }

  write(data: Buffer): Promise<void> {
    return this.#send('write', { body: data });
  }

  // Fire and forget, as in process: a stream that already ended has nothing to close or signal.
  closeStdin(): void {
    void this.#send('eof', {}).catch(() => {});
  }

  signal(signal: number): void {
    void this.#send('signal', { json: { signal } }).catch(() => {});
  }

  resize(cols: number, rows: number): void {
    void this.#send('resize', { json: { cols, rows } }).catch(() => {});
  }

  /**
   * Closes the stream: the node detaches its handle and the process keeps
   * running. `hold`: the node lets go as for a snapshot and ends the stream
   * after the output the guest sent before it (or, unreachable, it is cut).
   */
  detach(opts: { hold?: boolean } = {}): void {
    this.detached = true;
    if (opts.hold) void this.#send('detach', { json: { hold: true } }).catch(() => this.#abort.abort());
    else this.#abort.abort();
  }
}

/** POSTs a spawn or attach and resolves once the node answered `started`; output then goes to `handlers`, awaited line by line. */
export async function openProcessStream(t: NodeTransport, sandbox: string, path: string, json: unknown, handlers: OutputHandlers = {}): Promise<ProcessStream> {
  const abort = new AbortController();
  // Started within the lifecycle deadline (a spawn may wait for a resume); the output then comes at the process's pace.
  const { res, lines, first } = await t.openLines<ProcessLine>('POST', path, { json, signal: abort.signal, kind: 'lifecycle' });
  if (first.done) throw new ForkdError('UNAVAILABLE', `node ${t.url} ended the stream before the process started`);
  if (first.value.type === 'error') throw fromErrorBody(first.value, 500);
  if (first.value.type !== 'started') throw new ForkdError('INTERNAL', `node ${t.url} sent ${first.value.type} before started`);
  const process = new RemoteProcessHandle(t, sandbox, first.value, abort);
  // A handler's own failure ends the stream as it would in process (the node's process runs on); it is told apart from the connection's.
  let handlerError: { err: unknown } | undefined;
  const deliver = async (f: () => void | Promise<void>) => {
    try {
      await f();
    } catch (err) {
      handlerError = { err };
      throw err;
    }
  };
  const exit = (async (): Promise<ExecExit | null> => {
    try {
      for await (const l of lines) {
        switch (l.type) {
          case 'stdout':
            await deliver(() => handlers.onStdout?.(Buffer.from(l.data, 'base64')));
            break;
          case 'stderr':
            await deliver(() => handlers.onStderr?.(Buffer.from(l.data, 'base64')));
            break;
          case 'dropped':
            await deliver(() => handlers.onDropped?.(l.bytes));
            break;
          case 'rewound':
            await deliver(() => handlers.onRewound?.());
            break;
          case 'position':
            await deliver(() => handlers.onPosition?.(l.offset));
            break;
          case 'exit':
            return { exitCode: l.exitCode, signal: l.signal, oomKilled: l.oomKilled };
          case 'detached':
            return null;
          case 'error':
            throw fromErrorBody(l, 500);
        }
      }
    } catch (err) {
      if (handlerError) throw handlerError.err;
      if (process.detached) return null;
      throw t.unavailable(err);
    } finally {
      // Whatever ended the loop (exit, error, a handler that threw): the response is not read any more.
      if (!res.complete && !res.destroyed) res.destroy();
    }
    if (process.detached) return null;
    throw new ForkdError('UNAVAILABLE', `node ${t.url} ended the stream of process ${process.pid} without its exit`);
  })();
  exit.catch(() => {});
  return { process, exit };
}
