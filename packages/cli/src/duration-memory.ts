import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

/** One step of a past run and how long it took. */
export interface RememberedStep {
  name: string;
  ms: number;
}

type Runs = Record<string, RememberedStep[]>;

/** Kinds kept (each template's builds are one): the least recently run go first. */
const MAX_KINDS = 64;

/**
 * How long the steps of long work took the last time, per kind of work
 * (`setup`, `build:NAME`, `bench`…), for the next run's estimates. A small
 * JSON file in the user's cache directory; unreadable or missing means
 * nothing remembered, and a failed write only loses the estimate.
 */
export class DurationMemory {
  readonly #file: string;

  constructor(file = defaultFile()) {
    this.#file = file;
  }

  /** The steps of the last run of `kind`, in the order they ran. */
  last(kind: string): RememberedStep[] | undefined {
    return this.#read()[kind];
  }

  remember(kind: string, steps: readonly RememberedStep[]): void {
    const runs = this.#read();
    delete runs[kind];
    runs[kind] = steps.map((s) => ({ name: s.name, ms: Math.round(s.ms) }));
    for (const old of Object.keys(runs).slice(0, -MAX_KINDS)) delete runs[old];
    try {
      mkdirSync(dirname(this.#file), { recursive: true, mode: 0o700 });
      const tmp = `${this.#file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(runs), { mode: 0o600 });
      renameSync(tmp, this.#file);
    } catch {
      // a read-only home or a full disk: the next run just has no estimate
    }
  }

  #read(): Runs {
    try {
      const v = JSON.parse(readFileSync(this.#file, 'utf8')) as unknown;
      return isRuns(v) ? v : {};
    } catch {
      return {};
    }
  }
}

function isRuns(v: unknown): v is Runs {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  return Object.values(v).every((steps) => Array.isArray(steps) && steps.every((s) => typeof s?.name === 'string' && typeof s?.ms === 'number' && Number.isFinite(s.ms) && s.ms >= 0));
}

function defaultFile(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'forkd', 'durations.json');
}
