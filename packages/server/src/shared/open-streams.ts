/**
 * The process streams a server has open to its clients, so that a stopping
 * daemon ends them cleanly instead of cutting their connections: each lets
 * go of its process (which runs on in the sandbox, its unacknowledged output
 * kept by the guest) and ends its response after the output already handed
 * to it, so a client resumes where it is with nothing lost or repeated.
 */
export class OpenStreams {
  readonly #open = new Set<() => void>();
  #ended = false;

  /**
   * Registers a stream's `end`; the returned function unregisters it (call it
   * when the stream ends anyway). After endAll, a stream (a request that came
   * before the stop, its process started after) is ended at once.
   */
  add(end: () => void): () => void {
    if (this.#ended) {
      end();
      return () => {};
    }
    this.#open.add(end);
    return () => this.#open.delete(end);
  }

  /** Ends every open stream, and every one added from now on; says how many there were. */
  endAll(): number {
    this.#ended = true;
    const ends = [...this.#open];
    this.#open.clear();
    for (const end of ends) end();
    return ends.length;
  }
}
