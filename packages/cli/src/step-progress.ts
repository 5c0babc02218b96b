import type { RememberedStep } from './duration-memory.js';
import { formatRemaining } from '@forkd/protocol/progress-estimate';
import { formatDuration } from './format.js';
import { StepPlan, type PlannedStep } from './step-plan.js';
import { styleFor, type Style } from './style.js';

export interface ProgressEvent {
  step: string;
  detail?: string;
  done?: boolean;
  ms?: number;
}

interface Output {
  write(s: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface StepProgressOptions {
  /** The steps expected, with how long each took last time: shows `step i/n` and the time left. */
  plan?: readonly PlannedStep[] | undefined;
  /** Milliseconds; tests pass their own. */
  now?: () => number;
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * Renders set-up progress. On a terminal each step is one line, redrawn with
 * a spinner, its place in the plan, the elapsed seconds, the time left and
 * its latest detail (dimmed), then frozen with ✓ when done. Elsewhere (logs,
 * CI) it prints plain lines, one per event, and never redraws.
 */
export class StepProgress {
  readonly #out: Output;
  readonly #style: Style;
  readonly #tty: boolean;
  readonly #plan: StepPlan | undefined;
  readonly #now: () => number;
  readonly #ran: RememberedStep[] = [];
  #current: { step: string; t0: number; detail: string; position: string } | undefined;
  #frame = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(out: Output = process.stderr, opts: StepProgressOptions = {}) {
    this.#out = out;
    this.#tty = !!out.isTTY;
    this.#style = styleFor(out);
    this.#plan = opts.plan ? new StepPlan(opts.plan) : undefined;
    this.#now = opts.now ?? Date.now;
  }

  /** Bound, so it can be handed to setup() as its Progress callback. */
  readonly event = (e: ProgressEvent): void => {
    if (e.done) return this.#finish(e.step, e.ms);
    if (this.#current?.step !== e.step) this.#start(e.step);
    if (e.detail !== undefined) this.#detail(e.detail);
  };

  /** The steps that finished and how long each took, for the next run's plan (DurationMemory). */
  get ran(): readonly RememberedStep[] {
    return this.#ran;
  }

  /** Marks the running step failed (call before reporting the error). */
  fail(): void {
    const c = this.#current;
    if (!c) return;
    this.#stop();
    if (this.#tty) this.#out.write(`\r\x1b[K${this.#style.red('✗')} ${c.step}\n`);
    else this.#out.write(`${c.step}: failed\n`);
  }

  #start(step: string): void {
    if (this.#current) this.#finish(this.#current.step, this.#now() - this.#current.t0);
    const at = this.#plan?.begin(step);
    this.#current = { step, t0: this.#now(), detail: '', position: at ? `step ${at.index}/${at.total} · ` : '' };
    if (this.#tty) {
      this.#render();
      this.#timer = setInterval(() => this.#render(), 100);
      this.#timer.unref();
    } else {
      const left = this.#left(0);
      this.#out.write(`${this.#current.position}${step} ...${left ? ` (${left})` : ''}\n`);
    }
  }

  #detail(detail: string): void {
    const c = this.#current!;
    const d = detail.replace(/\s+/g, ' ').trim();
    if (!d) return;
    c.detail = d;
    if (this.#tty) this.#render();
    else this.#out.write(`  ${d}\n`);
  }

  #finish(step: string, ms: number | undefined): void {
    const took = ms ?? (this.#current ? this.#now() - this.#current.t0 : 0);
    this.#ran.push({ name: step, ms: took });
    this.#stop();
    if (this.#tty) this.#out.write(`\r\x1b[K${this.#style.green('✓')} ${step} ${this.#style.dim(formatDuration(took))}\n`);
    else this.#out.write(`${step}: done (${formatDuration(took)})\n`);
  }

  #stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#current = undefined;
  }

  /** "~40s left" for the whole plan, `elapsedMs` into the running step; empty when unknown. */
  #left(elapsedMs: number): string {
    const ms = this.#plan?.remainingMs(elapsedMs);
    return ms === undefined ? '' : formatRemaining(ms);
  }

  #render(): void {
    const c = this.#current;
    if (!c) return;
    const spin = SPINNER[this.#frame++ % SPINNER.length]!;
    const elapsed = this.#now() - c.t0;
    const left = this.#left(elapsed);
    const head = `${spin} ${c.position}${c.step} · ${Math.floor(elapsed / 1000)}s${left ? ` · ${left}` : ''}`;
    const room = (this.#out.columns || 80) - head.length - 3;
    const detail = c.detail && room > 10 ? `  ${this.#style.dim(c.detail.length > room ? c.detail.slice(0, room - 1) + '…' : c.detail)}` : '';
    this.#out.write(`\r\x1b[K${head}${detail}`);
  }
}
