/**
 * Estimates of the time left in work made of named steps, from how long each
 * step took before (DurationMemory) or a typical figure. No clock of its own:
 * callers pass the elapsed time in.
 */
export interface PlannedStep {
  name: string;
  /** How long it is expected to take; undefined: unknown. */
  expectedMs?: number | undefined;
}

export interface StepPosition {
  /** 1-based. */
  index: number;
  total: number;
}

/**
 * Milliseconds left: the expected durations of the steps after `current`,
 * plus what is left of the current one (never below zero: a step running
 * over says nothing about the ones after it). Undefined when any step still
 * to come has no expectation: a partial sum would promise too little.
 */
export function remainingMs(plan: readonly PlannedStep[], current: number, elapsedInCurrentMs: number): number | undefined {
  let left = 0;
  for (let i = Math.max(current, 0); i < plan.length; i++) {
    const expected = plan[i]!.expectedMs;
    if (expected === undefined) return undefined;
    left += i === current ? Math.max(expected - elapsedInCurrentMs, 0) : expected;
  }
  return left;
}

/**
 * The steps expected and which one runs. A step that was not planned is
 * inserted after the running one; planned steps passed over are dropped
 * (they had nothing to do), so `total` follows what actually runs.
 */
export class StepPlan {
  readonly #steps: PlannedStep[];
  #current = -1;

  constructor(steps: readonly PlannedStep[]) {
    this.#steps = steps.map((s) => ({ ...s }));
  }

  /** Step `name` runs now: its position. */
  begin(name: string): StepPosition {
    const at = this.#steps.findIndex((s, i) => i > this.#current && s.name === name);
    if (at < 0) this.#steps.splice(this.#current + 1, 0, { name });
    else this.#steps.splice(this.#current + 1, at - this.#current - 1);
    this.#current++;
    return { index: this.#current + 1, total: this.#steps.length };
  }

  /** Time left, `elapsedMs` into the running step (see remainingMs). */
  remainingMs(elapsedMs: number): number | undefined {
    return remainingMs(this.#steps, this.#current, elapsedMs);
  }
}
