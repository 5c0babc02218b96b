import type { SandboxInfo } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import type { Logger } from '../../shared/logger.js';
import type { FleetStore } from '../../fleet/fleet-store.js';

/** Control-plane replicas sharing a store: a sandbox's timeout is acted on by the one that takes its lease. */
export interface LifetimeLeases {
  leases: Pick<FleetStore, 'tryLease' | 'releaseLease'>;
  holder: string;
}

/** Longer than a pause takes; released as soon as it is done. */
const LIFETIME_LEASE_MS = 5 * 60 * 1000;

/**
 * E2B expects a sandbox to be killed (or paused) within a second of its
 * `endAt`; forkd's reconciler acts on `expiresAt` only every policy tick. So
 * the E2B layer keeps a precise timer per sandbox it knows and does the
 * same thing the reconciler would, through the node contract; the
 * reconciler stays the backstop (a restart, a missed timer).
 */
export class Lifetimes {
  readonly #svc: NodeService;
  readonly #logger: Logger;
  readonly #gone: (id: string) => void;
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #once: LifetimeLeases | undefined;

  /**
   * `gone` is told when a sandbox stopped answering (killed or paused), to
   * cut its open streams. `once`: the replicas' leases (absent: this process
   * is the only one acting).
   */
  constructor(svc: NodeService, logger: Logger, gone: (id: string) => void, once?: LifetimeLeases) {
    this.#svc = svc;
    this.#logger = logger;
    this.#gone = gone;
    this.#once = once;
  }

  /** (Re)arms the timer of a sandbox from its current `expiresAt`; none when it has no lifetime or is not running. */
  schedule(s: SandboxInfo): void {
    this.cancel(s.id);
    if (!s.expiresAt || (s.state !== 'running' && s.state !== 'creating')) return;
    const delay = Math.max(0, Date.parse(s.expiresAt) - Date.now());
    // setTimeout's limit is 2^31-1 ms (~24.8 days): longer lifetimes are re-armed on the way.
    const t = setTimeout(() => void this.#fire(s.id), Math.min(delay, 2 ** 31 - 1));
    t.unref();
    this.#timers.set(s.id, t);
  }

  cancel(id: string): void {
    const t = this.#timers.get(id);
    if (t) clearTimeout(t);
    this.#timers.delete(id);
  }

  close(): void {
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
  }

  async #fire(id: string): Promise<void> {
    this.#timers.delete(id);
    // Taken before the sandbox is read: a replica whose timer fires while another acts finds it paused afterwards, or skips.
    const lease = `e2b-lifetime:${id}`;
    if (this.#once && !(await this.#once.leases.tryLease(lease, this.#once.holder, LIFETIME_LEASE_MS).catch(() => false))) return;
    try {
      await this.#act(id);
    } finally {
      await this.#once?.leases.releaseLease(lease, this.#once.holder).catch(() => undefined);
    }
  }

  async #act(id: string): Promise<void> {
    let s: SandboxInfo;
    try {
      s = await this.#svc.get(id);
    } catch {
      return;
    }
    if (!s.expiresAt || (s.state !== 'running' && s.state !== 'creating')) return;
    if (Date.parse(s.expiresAt) > Date.now() + 50) {
      this.schedule(s);
      return;
    }
    // forkd's default, as its reconciler would: pause unless the policy says kill (E2B creates always say).
    const action = s.onTimeout === 'kill' ? 'kill' : 'pause';
    try {
      this.#gone(id);
      // autoPauseMemory: false (timeoutPauseMemory) asked for a filesystem-only pause.
      if (action === 'pause') await this.#svc.pause(id, { memory: s.timeoutPauseMemory !== false });
      else await this.#svc.delete(id);
      this.#logger.info('e2b sandbox timed out', { sandboxId: id, action });
    } catch (err) {
      this.#logger.warn('e2b sandbox timeout failed (the reconciler will retry)', { sandboxId: id, error: String(err) });
    }
  }
}
