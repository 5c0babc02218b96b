import type { ServerResponse } from 'node:http';
import { envelope, FLAG_END_STREAM, FLAG_MESSAGE } from './connect-framing.js';
import type { ConnectCode } from './e2b-errors.js';
import { guardListener } from '../../shared/connection-guard.js';

/**
 * One server-streaming Connect response: headers and every envelope are
 * flushed at once (the SDK waits for the first message), idle streams get
 * keepalive messages, and the stream ends with exactly one end-stream
 * envelope, or is cut at the TCP level (`abort`) when its sandbox goes away.
 */
export class RpcStream {
  readonly #res: ServerResponse;
  readonly #keepalive: unknown;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #ended = false;
  readonly #onClose: (() => void)[] = [];

  constructor(res: ServerResponse, keepaliveMessage: unknown, keepaliveIntervalMs: number) {
    this.#res = res;
    this.#keepalive = keepaliveMessage;
    this.#intervalMs = keepaliveIntervalMs;
    res.writeHead(200, { 'content-type': 'application/connect+json' });
    res.flushHeaders();
    res.on('close', guardListener('envd', () => res.socket?.destroy(), () => {
      this.#stop();
      for (const f of this.#onClose.splice(0)) f();
    }));
    this.#arm();
  }

  get closed(): boolean {
    return this.#ended || this.#res.destroyed || this.#res.writableEnded;
  }

  /** Called once when the client went away or the stream ended. */
  onClose(f: () => void): void {
    if (this.#res.destroyed || this.#res.writableFinished) f();
    else this.#onClose.push(f);
  }

  /** Sends one message; resolves when the socket took it (back-pressure for the producer). */
  send(message: unknown): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.#arm();
    if (this.#res.write(envelope(FLAG_MESSAGE, message))) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.#res.off('drain', done);
        this.#res.off('close', done);
        resolve();
      };
      this.#res.once('drain', done);
      this.#res.once('close', done);
    });
  }

  end(error?: { code: ConnectCode; message: string }): void {
    if (this.closed) return;
    this.#ended = true;
    this.#stop();
    this.#res.end(envelope(FLAG_END_STREAM, error ? { error } : {}));
  }

  /** Cuts the connection without an end-stream: what the SDK reads as "the sandbox was killed". */
  abort(): void {
    this.#ended = true;
    this.#stop();
    this.#res.socket?.destroy();
    this.#res.destroy();
  }

  #arm(): void {
    this.#stop();
    if (this.#ended) return;
    this.#timer = setTimeout(() => {
      void this.send(this.#keepalive);
    }, this.#intervalMs);
    this.#timer.unref();
  }

  #stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
