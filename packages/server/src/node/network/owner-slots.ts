/**
 * Counted slots with a bound per owner (a sandbox) and in all: the egress
 * proxy's connections, and of those the ones in forkd-splice processes; the
 * resolver's upstream queries and TCP connections.
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

  /**
   * A slot for `owner`, or undefined; the function returned gives it back
   * (once). No owner (forkd's own work, not a sandbox's): bounded only in all.
   */
  take(owner: string | undefined): (() => void) | undefined {
    const n = owner === undefined ? 0 : (this.#byOwner.get(owner) ?? 0);
    if (n >= this.#perOwner || this.#inUse >= this.#total) {
      this.declined++;
      return undefined;
    }
    if (owner !== undefined) this.#byOwner.set(owner, n + 1);
    this.#inUse++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#inUse--;
      if (owner === undefined) return;
      const m = (this.#byOwner.get(owner) ?? 1) - 1;
      if (m > 0) this.#byOwner.set(owner, m);
      else this.#byOwner.delete(owner);
    };
  }
}
