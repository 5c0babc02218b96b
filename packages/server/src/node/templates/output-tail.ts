/**
 * The last `limit` bytes of a stream of chunks, whatever the stream's length:
 * a command's output is unbounded, what is kept of it must not be.
 */
export class OutputTail {
  readonly #limit: number;
  #chunks: Buffer[] = [];
  #size = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  push(d: Buffer): void {
    // A copy: the caller's buffer may be a view of a larger one that must not be kept alive.
    const c = Buffer.from(d.length > this.#limit ? d.subarray(d.length - this.#limit) : d);
    this.#chunks.push(c);
    this.#size += c.length;
    while (this.#size - this.#chunks[0]!.length >= this.#limit) this.#size -= this.#chunks.shift()!.length;
  }

  text(): string {
    const all = Buffer.concat(this.#chunks, this.#size);
    return all.subarray(Math.max(0, all.length - this.#limit)).toString();
  }
}
