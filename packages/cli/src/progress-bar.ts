import { byteRate, formatRemaining } from '@forkd/protocol/progress-estimate';
import { formatBytes } from './format.js';

interface Output {
  write(s: string): unknown;
  columns?: number;
}

/** A byte-count bar for `cp` on a terminal (rate, and the time left when the size is known), redrawn at most every 100 ms. */
export class ProgressBar {
  readonly #out: Output;
  readonly #total: number | undefined;
  readonly #label: string;
  readonly #now: () => number;
  readonly #t0: number;
  #done = 0;
  #lastDraw = 0;

  constructor(out: Output, label: string, total: number | undefined, now: () => number = Date.now) {
    this.#out = out;
    this.#label = label;
    this.#total = total;
    this.#now = now;
    this.#t0 = now();
  }

  add(bytes: number): void {
    this.#done += bytes;
    const now = this.#now();
    if (now - this.#lastDraw >= 100) {
      this.#lastDraw = now;
      this.#draw();
    }
  }

  finish(): void {
    this.#draw();
    this.#out.write('\n');
  }

  /** Clears the line, for when the copy failed. */
  abort(): void {
    this.#out.write('\r\x1b[K');
  }

  #draw(): void {
    const { perSecond, remainingMs } = byteRate({ done: this.#done, total: this.#total || undefined, elapsedMs: this.#now() - this.#t0 });
    const rate = `${formatBytes(Math.round(perSecond ?? 0))}/s`;
    const amount = this.#total ? `${formatBytes(this.#done)} / ${formatBytes(this.#total)}` : formatBytes(this.#done);
    const left = remainingMs !== undefined && this.#done < (this.#total ?? 0) ? `  ${formatRemaining(remainingMs)}` : '';
    const tail = ` ${amount}  ${rate}${left}`;
    let bar = '';
    if (this.#total) {
      const width = Math.max(10, Math.min(40, (this.#out.columns || 80) - this.#label.length - tail.length - 12));
      const frac = Math.min(1, this.#done / this.#total);
      const full = Math.round(frac * width);
      bar = ` [${'#'.repeat(full)}${'-'.repeat(width - full)}] ${String(Math.floor(frac * 100)).padStart(3)}%`;
    }
    this.#out.write(`\r\x1b[K${this.#label}${bar}${tail}`);
  }
}
