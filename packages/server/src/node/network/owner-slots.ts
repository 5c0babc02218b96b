/**
 * Counted slots with a bound per owner (a sandbox) and in all: the egress
 * proxy's connections, and of those the ones in forkd-splice processes.
 * Whoever finds no slot is refused or served another way by its caller.
 */
export class OwnerSlots {
  readonly #total: number;
  readonly #perOwner: number;
  readonly #byOwner = new Map<string, number>();
  #inUse = 0;
  /** Takes that found no slot (tests and the node's stats). */
  declined = 0;

  constructor(o: { total: number; perOwner: number }) {
    this.#total = o.total;
    this.#perOwner = o.perOwner;
  }

  get inUse(): number {
    return this.#inUse;
  }

  /** A slot for `owner`, or undefined; the function returned gives it back (once). */
  take(owner: string): (() => void) | undefined {
    const n = this.#byOwner.get(owner) ?? 0;
    if (n >= this.#perOwner || this.#inUse >= this.#total) {
      this.declined++;
      return undefined;
    }
    this.#byOwner.set(owner, n + 1);
    this.#inUse++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#inUse--;
      const m = (this.#byOwner.get(owner) ?? 1) - 1;
      if (m > 0) this.#byOwner.set(owner, m);
      else this.#byOwner.delete(owner);
    };
  }
}
