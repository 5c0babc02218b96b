/**
 * The unread events of polled watchers, bounded per watcher and in all (by
 * count and by bytes). E2B's FilesystemEvent has no overflow marker, so a
 * full queue does what inotify's does: later events are dropped (and
 * counted) until the client polls; what was queued stays in order.
 */
export interface EventBudget {
  perWatcherEvents: number;
  perWatcherBytes: number;
  totalBytes: number;
}

export class UnreadEvents {
  readonly #budget: EventBudget;
  #totalBytes = 0;
  /** Events dropped for want of room since the process started (logs, tests). */
  dropped = 0;

  constructor(budget: EventBudget) {
    this.#budget = budget;
  }

  get totalBytes(): number {
    return this.#totalBytes;
  }

  /** One watcher's queue, drawing on the shared budget. */
  queue(): EventQueue {
    return new EventQueue(this, this.#budget);
  }

  /** @internal */
  reserve(bytes: number): boolean {
    if (this.#totalBytes + bytes > this.#budget.totalBytes) return false;
    this.#totalBytes += bytes;
    return true;
  }

  /** @internal */
  release(bytes: number): void {
    this.#totalBytes -= bytes;
  }
}

export class EventQueue {
  readonly #shared: UnreadEvents;
  readonly #budget: EventBudget;
  #events: unknown[] = [];
  #bytes = 0;
  #closed = false;

  constructor(shared: UnreadEvents, budget: EventBudget) {
    this.#shared = shared;
    this.#budget = budget;
  }

  get length(): number {
    return this.#events.length;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Queues an event, or drops it when this queue or the node's budget is full; false when dropped. */
  push(event: unknown): boolean {
    if (this.#closed) return false;
    const size = Buffer.byteLength(JSON.stringify(event));
    if (this.#events.length >= this.#budget.perWatcherEvents || this.#bytes + size > this.#budget.perWatcherBytes || !this.#shared.reserve(size)) {
      this.#shared.dropped++;
      return false;
    }
    this.#events.push(event);
    this.#bytes += size;
    return true;
  }

  /** Everything queued, in order; the queue is empty after. */
  take(): unknown[] {
    const out = this.#events;
    this.#shared.release(this.#bytes);
    this.#events = [];
    this.#bytes = 0;
    return out;
  }

  /** Gives its bytes back for good: events of a watcher being removed are not queued any more. */
  close(): void {
    this.#closed = true;
    this.take();
  }
}
