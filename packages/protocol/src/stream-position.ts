/**
 * A stream's position as its client counts it, to resume the stream after its
 * connection went (the wire form is exec.ts's ResumePoint). Standalone (no
 * imports): the SDK and the web console, which loads it as it is, share it.
 */

/** Where a process stream is: the spawn's token and the ring offset received up to. */
export interface ResumePoint {
  token: number;
  offset: number;
}

/** What an output event moves a stream's position by beyond its bytes: the guest ring's frame header (see exec.ts's ResumePoint). */
export const OUTPUT_FRAME_OVERHEAD = 5;

/**
 * Set by `started` (a server that gives a token and offset: the stream can
 * resume) and by `position` events, moved by every output event. A re-attach
 * at that point gets each byte once: what came before it is not sent again,
 * nothing after it is lost.
 */
export class StreamPosition {
  #token: number | undefined;
  #offset = 0;

  started(e: { token?: unknown; offset?: unknown }): void {
    if (typeof e.token !== 'number' || typeof e.offset !== 'number') return;
    this.#token = e.token;
    this.#offset = e.offset;
  }

  output(bytes: number): void {
    this.#offset += OUTPUT_FRAME_OVERHEAD + bytes;
  }

  moved(offset: number): void {
    if (Number.isSafeInteger(offset) && offset >= 0) this.#offset = offset;
  }

  /** Undefined: the server cannot resume this stream (an agent too old, a server too old). */
  get point(): ResumePoint | undefined {
    return this.#token === undefined ? undefined : { token: this.#token, offset: this.#offset };
  }
}
