/** What the timers need of time: the real clock, or a test's. */
export interface TimerClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const REAL_CLOCK: TimerClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** setTimeout's longest delay (~24.8 days): later instants are reached in steps. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/**
 * One one-shot timer per sandbox: arming again replaces it. An idle
 * sandbox costs one pending timer and nothing per pass; `onDue` runs once
 * at (or after) the instant armed.
 */
export class SandboxTimers {
  readonly #onDue: (id: string) => void;
  readonly #clock: TimerClock;
  readonly #armed = new Map<string, { at: number; handle: unknown }>();

  constructor(onDue: (id: string) => void, clock: TimerClock = REAL_CLOCK) {
    this.#onDue = onDue;
    this.#clock = clock;
  }

  /** Fires `onDue(id)` at `at` (at once if it has passed), replacing any earlier arming. */
  arm(id: string, at: number): void {
    this.cancel(id);
    const delay = Math.min(Math.max(0, at - this.#clock.now()), MAX_DELAY_MS);
    const entry = { at, handle: undefined as unknown };
    entry.handle = this.#clock.setTimeout(() => {
      if (this.#armed.get(id) !== entry) return;
      if (this.#clock.now() < at) return this.arm(id, at);
      this.#armed.delete(id);
      this.#onDue(id);
    }, delay);
    this.#armed.set(id, entry);
  }

  cancel(id: string): void {
    const e = this.#armed.get(id);
    if (!e) return;
    this.#clock.clearTimeout(e.handle);
    this.#armed.delete(id);
  }

  /** The instant armed for `id`, if any. */
  dueAt(id: string): number | undefined {
    return this.#armed.get(id)?.at;
  }

  get size(): number {
    return this.#armed.size;
  }

  clear(): void {
    for (const id of [...this.#armed.keys()]) this.cancel(id);
  }
}
