import { formatDuration } from './format.js';
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

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * Renders set-up progress. On a terminal each step is one line, redrawn with
 * a spinner, the elapsed seconds and its latest detail (dimmed), then frozen
 * with ✓ when done. Elsewhere (logs, CI) it prints plain lines, one per event.
 */
export class StepProgress {
  readonly #out: Output;
  readonly #style: Style;
  readonly #tty: boolean;
  #current: { step: string; t0: number; detail: string } | undefined;
  #frame = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(out: Output = process.stderr) {
    this.#out = out;
    this.#tty = !!out.isTTY;
    this.#style = styleFor(out);
  }

  /** Bound, so it can be handed to setup() as its Progress callback. */
  readonly event = (e: ProgressEvent): void => {
    if (e.done) return this.#finish(e.step, e.ms);
    if (this.#current?.step !== e.step) this.#start(e.step);
    if (e.detail !== undefined) this.#detail(e.detail);
  };

  /** Marks the running step failed (call before reporting the error). */
  fail(): void {
    const c = this.#current;
    if (!c) return;
    this.#stop();
    if (this.#tty) this.#out.write(`\r\x1b[K${this.#style.red('✗')} ${c.step}\n`);
    else this.#out.write(`${c.step}: failed\n`);
  }

  #start(step: string): void {
    if (this.#current) this.#finish(this.#current.step, Date.now() - this.#current.t0);
    this.#current = { step, t0: Date.now(), detail: '' };
    if (this.#tty) {
      this.#render();
      this.#timer = setInterval(() => this.#render(), 100);
      this.#timer.unref();
    } else {
      this.#out.write(`${step} ...\n`);
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
    const took = ms ?? (this.#current ? Date.now() - this.#current.t0 : 0);
    this.#stop();
    if (this.#tty) this.#out.write(`\r\x1b[K${this.#style.green('✓')} ${step} ${this.#style.dim(formatDuration(took))}\n`);
    else this.#out.write(`${step}: done (${formatDuration(took)})\n`);
  }

  #stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#current = undefined;
  }

  #render(): void {
    const c = this.#current;
    if (!c) return;
    const spin = SPINNER[this.#frame++ % SPINNER.length]!;
    const head = `${spin} ${c.step} ${Math.floor((Date.now() - c.t0) / 1000)}s`;
    const room = (this.#out.columns || 80) - head.length - 3;
    const detail = c.detail && room > 10 ? `  ${this.#style.dim(c.detail.length > room ? c.detail.slice(0, room - 1) + '…' : c.detail)}` : '';
    this.#out.write(`\r\x1b[K${head}${detail}`);
  }
}
