import type { TimerClock } from '../node/policy/sandbox-timers.js';

/** A clock the test moves by hand (unit tests of timer logic): timers fire in order as it passes them. */
export class ManualClock implements TimerClock {
  #now: number;
  #seq = 0;
  readonly #pending = new Map<number, { at: number; fn: () => void }>();

  constructor(start = Date.UTC(2026, 11, 3, 8, 0, 0)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const h = ++this.#seq;
    this.#pending.set(h, { at: this.#now + Math.max(0, ms), fn });
    return h;
  }

  clearTimeout(handle: unknown): void {
    this.#pending.delete(handle as number);
  }

  /** Timers pending. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Moves time forward by `ms`, firing every timer due on the way, earliest first. */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.#pending) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e;
      if (!next) break;
      this.#pending.delete(next[0]);
      this.#now = Math.max(this.#now, next[1].at);
      next[1].fn();
    }
    this.#now = end;
  }
}
