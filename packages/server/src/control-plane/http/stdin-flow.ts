/**
 * A stream socket's stdin on its way to the process: writes go in order, one
 * at a time, and past `maxInFlight` bytes not yet taken by the process the
 * socket stops being read (`pause`) until they are. A process that never
 * reads its stdin so holds the client's bytes in TCP, not in the daemon.
 */
export interface StdinSink {
  write(data: Buffer): Promise<void>;
  closeStdin(): void;
}

export interface Reading {
  pause(): void;
  resume(): void;
}

export class StdinFlow {
  readonly #sink: StdinSink;
  readonly #reading: Reading;
  readonly #max: number;
  #queue: Promise<void> = Promise.resolve();
  #inFlight = 0;
  #paused = false;

  constructor(sink: StdinSink, reading: Reading, maxInFlight: number) {
    this.#sink = sink;
    this.#reading = reading;
    this.#max = maxInFlight;
  }

  /** Bytes handed in and not yet written (tests). */
  get inFlight(): number {
    return this.#inFlight;
  }

  write(data: Buffer): void {
    this.#inFlight += data.length;
    if (this.#inFlight > this.#max && !this.#paused) {
      this.#paused = true;
      this.#reading.pause();
    }
    this.#then(() => this.#sink.write(data), () => {
      this.#inFlight -= data.length;
      if (this.#paused && this.#inFlight <= this.#max) {
        this.#paused = false;
        this.#reading.resume();
      }
    });
  }

  /** After every write handed in before it (EOF must not overtake data). */
  eof(): void {
    this.#then(async () => this.#sink.closeStdin(), () => {});
  }

  #then(op: () => Promise<void>, after: () => void): void {
    // A failed write (the process is gone) counts as done: its stream is ending anyway.
    this.#queue = this.#queue
      .then(op)
      .catch(() => {})
      .then(() => {
        try {
          after();
        } catch {
          // resuming a socket that closed meanwhile: nothing left to read
        }
      });
  }
}
