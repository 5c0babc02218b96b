/**
 * Tells a client-facing stream that lost its guest connection when it may
 * come back. A lifecycle operation holds the gate of its sandbox while the
 * guest is out of reach (a snapshot from its detach to its thaw; a pause,
 * resume, rewind or delete for all of it), and streams wait for it before
 * they look at the sandbox again. Holds nest (a pause takes a snapshot).
 */
export class ReattachGate {
  readonly #held = new Map<string, { count: number; open: Promise<void>; release: () => void }>();
  readonly #changes = new Map<string, { changed: Promise<void>; fire: () => void }>();

  /** Closes the gate of `id` until the returned function is called (once). */
  hold(id: string): () => void {
    let h = this.#held.get(id);
    if (!h) {
      let release!: () => void;
      const open = new Promise<void>((r) => (release = r));
      h = { count: 0, open, release };
      this.#held.set(id, h);
    }
    h.count++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const cur = this.#held.get(id);
      if (!cur || --cur.count > 0) return;
      this.#held.delete(id);
      cur.release();
      const c = this.#changes.get(id);
      this.#changes.delete(id);
      c?.fire();
    };
  }

  /** Resolves once nothing holds the gate of `id`. */
  async opened(id: string): Promise<void> {
    for (let h = this.#held.get(id); h; h = this.#held.get(id)) await h.open;
  }

  /** Resolves the next time an operation on `id` lets go of the gate (the sandbox may have changed). */
  changed(id: string): Promise<void> {
    let c = this.#changes.get(id);
    if (!c) {
      let fire!: () => void;
      const changed = new Promise<void>((r) => (fire = r));
      c = { changed, fire };
      this.#changes.set(id, c);
    }
    return c.changed;
  }
}
