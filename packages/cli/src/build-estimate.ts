import type { BuildStep } from '@forkd/sdk';
import type { RememberedStep } from './duration-memory.js';

/**
 * Time left in a Dockerfile build, from how long each step took in this
 * template's last build: used while the build has as many steps as that one
 * had (a changed Dockerfile has no estimate until it has run once). It
 * counts every step as run; those the cache answers take no time, so it
 * tends to say too much rather than too little, and drops as they come.
 */
export class BuildEstimate {
  readonly #last: readonly RememberedStep[] | undefined;
  readonly #ran: RememberedStep[] = [];
  #total = 0;

  constructor(last: readonly RememberedStep[] | undefined) {
    this.#last = last;
  }

  /** At a step's start: the time left, this step included; at its end it is recorded. */
  onStep(step: BuildStep): number | undefined {
    this.#total = step.total;
    if (step.status !== 'start') {
      // A step the cache answered keeps what it took when it ran: the next build may have to run it.
      const before = this.#last?.[step.index - 1];
      const ms = step.status === 'cached' && before?.name === step.instruction ? before.ms : (step.durationMs ?? 0);
      this.#ran[step.index - 1] = { name: step.instruction, ms };
      return undefined;
    }
    const last = this.#last;
    if (!last || last.length !== step.total) return undefined;
    return last.slice(step.index - 1).reduce((sum, s) => sum + s.ms, 0);
  }

  /** The steps of this build that finished, in order, for the next one's estimate (undefined unless all did). */
  get ran(): RememberedStep[] | undefined {
    const ran = [...this.#ran];
    return ran.length === this.#total && ran.every((s) => s !== undefined) ? ran : undefined;
  }
}
