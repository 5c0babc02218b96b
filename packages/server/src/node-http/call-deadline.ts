import { ForkdError } from '@forkd/protocol';

/**
 * How long a control plane waits for a node, by kind of call
 * (FORKD_NODE_CALL_TIMEOUT_S, `READ,LIFECYCLE,TRANSFER` seconds). A node that
 * accepts a connection and never answers, or answers a byte at a time, must
 * not hold a control-plane call (nor the fleet's list, a drain, a restore)
 * for ever.
 */
export interface NodeCallTimeouts {
  /** Reads: a sandbox, the lists, stats, file metadata, the head of a download or a watch. */
  readMs: number;
  /** Calls that change a sandbox: create, pause (the node's own CRIU dump deadline is 120 s), resume, fork, snapshot, files, process handles. */
  lifecycleMs: number;
  /** Moving snapshots through the blob store and building templates: bytes and commands, minutes for a large sandbox. */
  transferMs: number;
}

export type CallKind = 'read' | 'lifecycle' | 'transfer';

export const DEFAULT_NODE_CALL_TIMEOUTS: NodeCallTimeouts = { readMs: 30_000, lifecycleMs: 300_000, transferMs: 3_600_000 };

export function timeoutOf(t: NodeCallTimeouts, kind: CallKind): number {
  return kind === 'read' ? t.readMs : kind === 'lifecycle' ? t.lifecycleMs : t.transferMs;
}

interface Destroyable {
  destroy(err?: Error): unknown;
}

/**
 * One call's deadline: once it passes, what the call holds (its request,
 * its response) is destroyed with a TIMEOUT error, so whoever awaits the
 * call or reads its body gets that error. Armed by whoever starts the clock
 * (at the request, or once a streamed body is sent), cleared when the call
 * is done with the node (its answer read, or a stream's first line).
 */
export class CallDeadline {
  readonly ms: number;
  readonly #what: string;
  readonly #held = new Set<Destroyable>();
  #timer: NodeJS.Timeout | undefined;
  #expired: ForkdError | undefined;

  constructor(ms: number, what: string) {
    this.ms = ms;
    this.#what = what;
  }

  /** The error a call past its deadline fails with. */
  get error(): ForkdError {
    return new ForkdError('TIMEOUT', `${this.#what} did not answer within ${this.ms / 1000} s`, { timeoutMs: this.ms });
  }

  /** Starts (or restarts) the clock. */
  arm(): this {
    if (this.#expired) return this;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#expire(), this.ms);
    return this;
  }

  /** Destroyed with the TIMEOUT error when the deadline passes (at once, when it has). */
  hold<T extends Destroyable>(x: T): T {
    if (this.#expired) x.destroy(this.#expired);
    else this.#held.add(x);
    return x;
  }

  clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#held.clear();
  }

  #expire(): void {
    this.#expired = this.error;
    for (const x of this.#held) x.destroy(this.#expired);
    this.#held.clear();
  }
}
