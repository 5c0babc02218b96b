/**
 * Results printed the moment they are recorded: a bench runs for many
 * minutes, and what finished should be seen (and survive a run cut short)
 * without waiting for the report at the end.
 */
export class LiveRows<T> extends Array<T> {
  static override get [Symbol.species]() {
    return Array;
  }

  readonly #line: (row: T) => string;

  constructor(line: (row: T) => string) {
    super();
    this.#line = line;
  }

  override push(...rows: T[]): number {
    for (const r of rows) console.log(this.#line(r));
    return super.push(...rows);
  }
}
