import { DurationMemory, planFor, StepProgress } from '@forkd/cli';

/**
 * The bench's sections, run in order and announced on stderr as they start
 * (`step 3/13 · density ... (~12m left)`) and end, with the time left from
 * how long each took in the last whole run of the same kind (full or
 * --quick; the first run has none). Plain lines, terminal or not: the rows
 * print in between, each as it is measured (LiveRows).
 */
export class Sections {
  readonly #kind: string;
  readonly #memory: DurationMemory;
  readonly #progress: StepProgress;

  constructor(kind: string, names: readonly string[], o: { memory?: DurationMemory; write?: (s: string) => void } = {}) {
    this.#kind = kind;
    this.#memory = o.memory ?? new DurationMemory();
    const known = new Map(planFor(this.#memory, kind, []).map((s) => [s.name, s.expectedMs]));
    const write = o.write ?? ((s: string) => void process.stderr.write(s));
    this.#progress = new StepProgress({ write, isTTY: false }, { plan: names.map((name) => ({ name, expectedMs: known.get(name) })) });
  }

  async run<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const t0 = Date.now();
    this.#progress.event({ step: name });
    try {
      const result = await fn();
      this.#progress.event({ step: name, done: true, ms: Date.now() - t0 });
      return result;
    } catch (err) {
      this.#progress.fail();
      throw err;
    }
  }

  /** After the last section: remembered for the next run's estimate. */
  finish(): void {
    this.#memory.remember(this.#kind, this.#progress.ran);
  }
}
