import type { NetworkRules } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import type { Logger } from '../../shared/logger.js';

interface Cut {
  holders: number;
  saved: NetworkRules | undefined;
  /** The cut being made: later holders wait for it. */
  ready: Promise<void>;
}

/**
 * `network: "off"` calls: the sandbox's egress is cut (mode `none`) while at
 * least one such call runs, and its rules as they were before the first are
 * put back after the last. Sandbox-wide (every process of the sandbox loses
 * egress meanwhile), counted across concurrent calls. One instance per
 * control plane: the count is shared by every caller.
 */
export class NetworkCuts {
  readonly #cuts = new Map<string, Cut>();
  readonly #logger: Logger | undefined;

  constructor(logger?: Logger) {
    this.#logger = logger;
  }

  /** Cuts egress (or joins the cut in place); resolves with the release, to be called once. */
  async acquire(svc: NodeService, id: string): Promise<() => Promise<void>> {
    let cut = this.#cuts.get(id);
    if (cut) cut.holders++;
    else {
      const made: Cut = { holders: 1, saved: undefined, ready: Promise.resolve() };
      made.ready = (async () => {
        made.saved = (await svc.get(id)).network;
        if (made.saved && made.saved.mode !== 'none') await svc.setNetwork(id, { mode: 'none', allowOut: made.saved.allowOut, denyOut: made.saved.denyOut });
      })();
      this.#cuts.set(id, made);
      cut = made;
    }
    const mine = cut;
    try {
      await mine.ready;
    } catch (err) {
      await this.#drop(svc, id, mine);
      throw err;
    }
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      await this.#drop(svc, id, mine);
    };
  }

  /** Whether egress of `id` is cut by a call now (for tests and metrics). */
  active(id: string): boolean {
    return this.#cuts.has(id);
  }

  async #drop(svc: NodeService, id: string, cut: Cut): Promise<void> {
    if (--cut.holders > 0) return;
    this.#cuts.delete(id);
    if (!cut.saved || cut.saved.mode === 'none') return;
    try {
      await svc.setNetwork(id, cut.saved);
    } catch (err) {
      // Deleted meanwhile, most likely; anything else leaves it cut (fail closed) and is the operator's to see.
      this.#logger?.warn('could not restore a sandbox network after a network-off call', { sandbox: id, error: err instanceof Error ? err.message : String(err) });
    }
  }
}
