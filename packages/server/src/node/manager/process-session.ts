import { setTimeout as sleep } from 'node:timers/promises';
import { ForkdError } from '@forkd/protocol';
import type { GuestClient } from '../guest/guest-client.js';
import type { GuestProcess, OutputHandlers, ProcessExit } from '../guest/guest-process.js';

import type { ProcessHandle, ResumePoint } from '../../node-contract/node-types.js';
export type { ProcessHandle };

/** What a session needs of the node to come back after its guest connection went away. */
export interface SessionHost {
  /**
   * The guest of the sandbox's current instance and its runtime key, once
   * streams may come back (after a snapshot's thaw; a paused sandbox once it
   * is resumed). Throws the ForkdError the stream should end with.
   */
  reattachPoint(id: string, signal: AbortSignal): Promise<{ guest: GuestClient; key: string }>;
  /** Resumes a hibernated sandbox for a stream that has input for it. */
  wake(id: string): Promise<void>;
  warn(message: string, fields: Record<string, unknown>): void;
}

/** Stdin kept for a resend after a detach: what the guest's pipe and read-ahead can hold, with room to spare. */
const STDIN_KEEP = 1024 * 1024;
const MAX_REATTACH_FAILURES = 5;

type Pending = { kind: 'data'; data: Buffer } | { kind: 'eof' } | { kind: 'signal'; signal: number } | { kind: 'resize'; cols: number; rows: number };

/**
 * A client-facing process stream that outlives its guest connection. Before
 * a snapshot, pause or rewind the node lets go of the guest (CRIU cannot
 * dump a socket whose peer is outside the sandbox); the session then waits
 * for the sandbox to be reachable again and re-attaches at the ring offset
 * it had received up to, so its client gets every byte once, in order. Input
 * that arrives meanwhile is queued, stdin the guest had not taken is sent
 * again, and input to a hibernated sandbox wakes it. After a rewind the
 * stream goes on if its process exists in the state rewound to (the client
 * is told, `onRewound`), and otherwise ends with REWOUND.
 */
export class ProcessSession implements ProcessHandle {
  readonly pid: number;
  readonly tag: string | undefined;
  readonly pty: boolean;
  /** Where the stream started (its client resumes from here plus what it received, after a daemon restart). */
  readonly resume: ResumePoint | undefined;
  readonly done: Promise<ProcessExit | null>;
  readonly #host: SessionHost;
  readonly #id: string;
  readonly #handlers: OutputHandlers;
  readonly #abort = new AbortController();
  #gp: GuestProcess;
  #key: string;
  #closed = false;
  /** Stdin sent on the current connection (its tail, up to STDIN_KEEP) and how much in all. */
  #sent: Buffer[] = [];
  #sentKept = 0;
  #sentTotal = 0;
  #eofSent = false;
  #pending: Pending[] = [];
  #reattached: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(host: SessionHost, id: string, key: string, gp: GuestProcess, handlers: OutputHandlers) {
    this.#host = host;
    this.#id = id;
    this.#key = key;
    this.#gp = gp;
    this.#handlers = handlers;
    this.pid = gp.pid;
    this.tag = gp.tag;
    this.pty = gp.pty;
    this.resume = gp.token === undefined ? undefined : { token: gp.token, offset: gp.startOffset };
    this.done = this.#run();
    this.done.catch(() => {});
  }

  async #run(): Promise<ProcessExit | null> {
    try {
      for (;;) {
        const gp = this.#gp;
        const exit = await gp.done;
        if (exit) return exit;
        if (this.#closed || gp.reason === 'client' || !gp.resumable) return null;
        const carry = this.#unconfirmed(gp);
        this.#gp = await this.#reattach(gp);
        this.#replay(carry);
      }
    } finally {
      this.#closed = true;
      this.#reattached?.resolve();
    }
  }

  async #reattach(gp: GuestProcess): Promise<GuestProcess> {
    for (let failures = 0; ; failures++) {
      try {
        const { guest, key } = await this.#host.reattachPoint(this.#id, this.#abort.signal);
        const rewound = key !== this.#key;
        let next: GuestProcess;
        try {
          next = await guest.attach({ pid: this.pid }, this.#handlers, { token: gp.token!, offset: gp.offset });
        } catch (err) {
          if (err instanceof ForkdError && err.code === 'NOT_FOUND' && rewound) {
            throw new ForkdError('REWOUND', `the sandbox was rewound to a state in which process ${this.pid} does not exist`);
          }
          throw err;
        }
        this.#key = key;
        // Output before the point rewound to is history both states share; after it, the client sees the new state's.
        if (rewound || next.startOffset < gp.offset) await this.#handlers.onRewound?.();
        return next;
      } catch (err) {
        if (this.#abort.signal.aborted) throw new ForkdError('CANCELLED', 'detached');
        const retry = err instanceof ForkdError && (err.code === 'UNAVAILABLE' || err.code === 'TIMEOUT') && failures < MAX_REATTACH_FAILURES;
        if (!retry) throw err;
        this.#host.warn('stream re-attach failed; retrying', { sandbox: this.#id, pid: this.pid, error: String(err) });
        await sleep(100 * 2 ** failures);
      }
    }
  }

  /** Input of the connection that ended which the guest had not taken yet, to send again first. */
  #unconfirmed(gp: GuestProcess): Pending[] {
    const accepted = gp.stdinAccepted ?? this.#sentTotal;
    let missing = Math.max(0, this.#sentTotal - accepted);
    const out: Pending[] = [];
    if (missing > this.#sentKept) {
      this.#host.warn('stdin lost across a detach', { sandbox: this.#id, pid: this.pid, bytes: missing - this.#sentKept });
      missing = this.#sentKept;
    }
    if (missing > 0) out.push({ kind: 'data', data: Buffer.concat(this.#sent).subarray(this.#sentKept - missing) });
    if (this.#eofSent && missing > 0) out.push({ kind: 'eof' });
    this.#sent = [];
    this.#sentKept = this.#sentTotal = 0;
    this.#eofSent = false;
    return out;
  }

  #replay(carry: Pending[]): void {
    const queued = [...carry, ...this.#pending];
    const waiting = this.#reattached;
    this.#pending = [];
    this.#reattached = undefined;
    for (const p of queued) this.#send(p);
    waiting?.resolve();
  }

  /** Sends on the current connection, or queues while there is none; a write sent resolves once the guest's socket took it. */
  #send(p: Pending): Promise<void> | undefined {
    const gp = this.#gp;
    if (gp.closed || this.#reattached) {
      if (this.#closed) return;
      this.#pending.push(p);
      if (p.kind === 'data' || p.kind === 'eof') void this.#host.wake(this.#id).catch(() => {});
      return;
    }
    try {
      switch (p.kind) {
        case 'data':
          this.#remember(p.data);
          return gp.write(p.data).catch(() => {});
        case 'eof':
          this.#eofSent = true;
          gp.closeStdin();
          break;
        case 'signal':
          gp.signal(p.signal);
          break;
        case 'resize':
          gp.resize(p.cols, p.rows);
          break;
      }
    } catch {
      // The connection closed under the write: its bytes are counted as sent, and DETACHED says whether they arrived.
    }
  }

  #remember(data: Buffer): void {
    this.#sent.push(data);
    this.#sentKept += data.length;
    this.#sentTotal += data.length;
    while (this.#sentKept - (this.#sent[0]?.length ?? 0) >= STDIN_KEEP && this.#sent.length > 1) this.#sentKept -= this.#sent.shift()!.length;
  }

  async write(data: Buffer): Promise<void> {
    if (this.#gp.closed && !this.#closed) {
      this.#reattached ??= withResolve();
      this.#send({ kind: 'data', data });
      // Back-pressure while detached: the caller waits for the re-attach.
      return this.#reattached?.promise;
    }
    // Back-pressure while attached: a process that does not read its stdin holds the writer here
    // (the guest's socket is full), not in a queue of the daemon's memory.
    return this.#send({ kind: 'data', data });
  }

  closeStdin(): void {
    this.#send({ kind: 'eof' });
  }

  signal(signal: number): void {
    this.#send({ kind: 'signal', signal });
  }

  resize(cols: number, rows: number): void {
    this.#send({ kind: 'resize', cols, rows });
  }

  detach(opts: { hold?: boolean } = {}): void {
    this.#closed = true;
    this.#abort.abort();
    if (opts.hold && this.#gp.resumable) this.#gp.release();
    else this.#gp.detach();
  }
}

function withResolve(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
