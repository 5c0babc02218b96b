import { Socket } from 'node:net';
import { join } from 'node:path';
import { REPO_ROOT } from '../../shared/config.js';
import { spawnIpc, type IpcChild } from '../../shared/exec.js';
import { endSpan, profiling } from '../../shared/profile.js';

const NETNS_DIAL = join(REPO_ROOT, 'packages/host-tools/build/forkd-netns-dial');

/** A connection to a port in a namespace: the socket, or why there is none. */
export type DialResult = { socket: Socket } | { refused: true } | { error: string };

export interface Dialer {
  /** Connects to 127.0.0.1:port (then [::1]) in the network namespace at `nsPath`. */
  dial(nsPath: string, port: number): Promise<DialResult>;
  close(): void;
}

/** The dialer's own connect timeout: a listener whose backlog is full never completes a connect. */
const CONNECT_MS = 10_000;
/** Past the connect timeout: an answer that never comes is an error, not a hang. */
const ANSWER_GRACE_MS = 5_000;
/** Requests under way at once (the port slots keep the daemon's below; the dialer has room for 1024). */
const MAX_WAITING = 1000;

interface Waiting {
  resolve(r: DialResult): void;
  timer: NodeJS.Timeout;
}

/**
 * The port proxy's connections into sandboxes without a process per
 * connection: one resident forkd-netns-dial (host-tools) makes each socket in
 * the sandbox's namespace, connects it there and hands the connected socket
 * over Node's IPC channel (SCM_RIGHTS); the daemon then owns an ordinary
 * net.Socket, with no relay between it and the sandbox's server. The helper
 * is started at the first dial and again after it ends.
 */
export class NetnsDialer implements Dialer {
  readonly #file: string;
  readonly #connectMs: number;
  #child: IpcChild | undefined;
  readonly #waiting = new Map<number, Waiting>();
  #next = 0;

  constructor(opts: { file?: string; connectMs?: number } = {}) {
    this.#file = opts.file ?? NETNS_DIAL;
    this.#connectMs = opts.connectMs ?? CONNECT_MS;
  }

  /** The helper's pid; 0 while none runs (tests: one process serves every dial). */
  get pid(): number {
    return this.#child?.pid ?? 0;
  }

  /** Requests waiting for their answer (tests: none is left behind). */
  get waiting(): number {
    return this.#waiting.size;
  }

  dial(nsPath: string, port: number): Promise<DialResult> {
    if (this.#waiting.size >= MAX_WAITING) return Promise.resolve({ error: 'too many connections being made' });
    const child = this.#helper();
    const id = this.#next++;
    const t0 = profiling() ? performance.now() : 0;
    return new Promise<DialResult>((resolve) => {
      const ms = this.#connectMs + ANSWER_GRACE_MS;
      const timer = setTimeout(() => this.#answer(id, { error: `no answer from forkd-netns-dial in ${ms} ms` }), ms);
      const settle = (r: DialResult) => {
        if (t0) endSpan('netns dial', t0);
        resolve(r);
      };
      this.#waiting.set(id, { resolve: settle, timer });
      if (!child.send(`${id} ${port} ${nsPath}`)) this.#answer(id, { error: 'forkd-netns-dial is not running' });
    });
  }

  close(): void {
    this.#child?.kill();
    this.#child = undefined;
  }

  #helper(): IpcChild {
    if (this.#child) return this.#child;
    const child = spawnIpc(this.#file, [String(this.#connectMs)]);
    this.#child = child;
    child.onMessage((m, handle) => this.#message(m, handle));
    void child.exit.then(({ code, stderr }) => {
      if (this.#child === child) this.#child = undefined;
      const why = `forkd-netns-dial ended (exit ${code}${stderr.trim() ? `: ${stderr.trim().split('\n').pop()}` : ''})`;
      for (const id of [...this.#waiting.keys()]) this.#answer(id, { error: why });
    });
    return child;
  }

  #message(m: unknown, handle: unknown): void {
    const msg = (m ?? {}) as { id?: unknown; refused?: unknown; error?: unknown };
    const id = typeof msg.id === 'number' ? msg.id : -1;
    if (handle instanceof Socket) {
      // An answer after its timeout: nobody wants the socket any more.
      if (!this.#waiting.has(id)) return void handle.destroy();
      return this.#answer(id, { socket: handle });
    }
    if (msg.refused === true) return this.#answer(id, { refused: true });
    this.#answer(id, { error: typeof msg.error === 'string' ? msg.error : 'unreadable answer from forkd-netns-dial' });
  }

  #answer(id: number, r: DialResult): void {
    const w = this.#waiting.get(id);
    if (!w) return;
    this.#waiting.delete(id);
    clearTimeout(w.timer);
    w.resolve(r);
  }
}
