import { toForkdError, type SandboxRecovery, type SandboxState } from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';
import type { SandboxRecord, SnapshotRecord, Store } from '../../store/store.js';
import type { Runtime } from '../runtime/runtime.js';
import type { NodeEvent, NodeEventSink } from '../node-event.js';

/** Why a sandbox found without its processes when the daemon starts lost them. */
export const LOST_AT_START = 'gone when the daemon started (host reboot or crash)';

/**
 * A sandbox that dies again this soon after being brought back by the
 * reconciler is left failed: bringing it back in a loop (a program that
 * runs out of memory every time) would only burn the host.
 */
const RELAPSE_MS = 10 * 60_000;

export interface RecoveryDeps {
  store: Store;
  runtime: Runtime;
  logger: Logger;
  onEvent?: NodeEventSink | undefined;
  key(id: string): Promise<string>;
  /** Drops the dead processes' leftovers of an instance (runc state, cgroup, namespace, guest link); its root volume stays. */
  dropProcesses(key: string): Promise<void>;
  /** Whether a snapshot's memory images are whole (stored into the pool, not lost with staging). */
  restorable(snapId: string): Promise<boolean>;
  restoreInto(key: string, r: SandboxRecord, snap: SnapshotRecord): Promise<void>;
  /** Starts the agent afresh on the instance's existing root volume (no memory). */
  startCold(key: string, r: SandboxRecord): Promise<void>;
  waitReady(key: string): Promise<void>;
  transition(r: SandboxRecord, to: SandboxState, error?: string): Promise<void>;
}

export type RecoveryTrigger = 'start' | 'resume' | 'rewind' | 'reconciler';

/**
 * Sandboxes whose processes are gone (host reboot or crash, init killed by
 * the OOM killer) come back under their own id: restored from the latest
 * snapshot of their current line whose images are intact, or started cold
 * from their files when there is none. Until then they are `failed` with a
 * `lost` marker, which is what tells them from sandboxes failed for good.
 */
export class Recovery {
  readonly #d: RecoveryDeps;

  constructor(deps: RecoveryDeps) {
    this.#d = deps;
  }

  isLost(r: SandboxRecord): boolean {
    return r.state === 'failed' && !!r.lost;
  }

  /** A running sandbox's processes are gone: failed, marked so it can come back (`note`: said in its error only). */
  async markLost(r: SandboxRecord, reason: string, note = ''): Promise<void> {
    const lost = { at: new Date().toISOString(), reason };
    // Marker first: a crash before the transition leaves it running, and the next start looks again.
    await this.#d.store.setLost(r.id, lost);
    r.lost = lost;
    await this.#d.transition(r, 'failed', `the sandbox processes were lost (${reason}${note}); its files are kept: resume brings it back from its latest snapshot, rewind from a chosen one`);
    this.#d.logger.warn('sandbox lost its processes', { sandbox: r.id, reason });
    this.#emit({ sandboxId: r.id, operation: 'lost', detail: `${reason}${note}`, code: 'UNAVAILABLE', durationMs: 0 });
  }

  /**
   * The reconciler's check of a running sandbox whose cgroup has no task
   * left: confirmed with the runtime, it is marked lost and brought back
   * (unless it relapsed soon after its last recovery). Call under the
   * sandbox's lock. Returns whether it was found dead.
   */
  async noticeDeath(r: SandboxRecord, now = Date.now()): Promise<boolean> {
    const key = await this.#d.key(r.id);
    const st = await this.#d.runtime.state(key);
    if (st.status !== 'stopped' && st.status !== 'missing') return false;
    const oomKills = (await this.#d.runtime.usage(key).catch(() => undefined))?.oomKills ?? 0;
    const reason = st.cause ?? `its init process died while the daemon ran (${oomKills ? `the OOM killer killed ${oomKills} of its processes` : 'no OOM kill recorded: killed from outside, or it crashed'})`;
    const relapsed = !!r.recovered && now - Date.parse(r.recovered.at) < RELAPSE_MS;
    await this.markLost(r, reason, relapsed ? `, less than ${RELAPSE_MS / 60_000} minutes after its last recovery: not brought back automatically` : '');
    await this.#d.dropProcesses(key);
    if (!relapsed) await this.revive(r, { trigger: 'reconciler' }).catch(() => {});
    return true;
  }

  /**
   * Snapshots to come back from, best first: those taken since the current
   * state began (newest first), then the one it began from (a rewind's
   * target, a resume's snapshot, a fork's source). Older ones and a rewind's
   * state left are another line of its history: only an explicit rewind
   * goes there.
   */
  async candidates(r: SandboxRecord): Promise<SnapshotRecord[]> {
    const since = r.origin ? Date.parse(r.origin.at) : Number.NEGATIVE_INFINITY;
    const later = (await this.#d.store.listSnapshots(r.id)).filter((s) => Date.parse(s.createdAt) > since).reverse();
    const originId = r.origin ? r.origin.snapshot : r.forkedFrom;
    const origin = originId ? await this.#d.store.getSnapshot(originId) : undefined;
    return origin && !later.some((s) => s.id === origin.id) ? [...later, origin] : later;
  }

  /**
   * Brings a lost sandbox back under its own id and instance key: from
   * `snapshot` (a rewind), else the best candidate whose images are intact
   * (a failed restore tries the next), else cold from its files. Recorded
   * (state, origin, `recovered`) only once its agent answers; on failure it
   * stays failed and lost, for another try.
   */
  async revive(r: SandboxRecord, opts: { trigger: RecoveryTrigger; snapshot?: SnapshotRecord | undefined }): Promise<void> {
    const t0 = performance.now();
    const key = await this.#d.key(r.id);
    const reason = r.lost?.reason ?? 'its processes were lost';
    try {
      await this.#d.dropProcesses(key);
      let from: SnapshotRecord | undefined;
      if (opts.snapshot) {
        await this.#d.restoreInto(key, r, opts.snapshot);
        await this.#d.waitReady(key);
        from = opts.snapshot;
      } else {
        for (const s of await this.candidates(r)) {
          if (!(await this.#d.restorable(s.id))) {
            this.#d.logger.warn('recovery skips a snapshot whose memory images are not intact', { sandbox: r.id, snapshot: s.id });
            continue;
          }
          try {
            await this.#d.restoreInto(key, r, s);
            await this.#d.waitReady(key);
            from = s;
            break;
          } catch (err) {
            this.#d.logger.warn('recovery from a snapshot failed; trying an older one', { sandbox: r.id, snapshot: s.id, error: String(err) });
            await this.#d.dropProcesses(key).catch(() => {});
          }
        }
        if (!from) {
          await this.#d.startCold(key, r);
          await this.#d.waitReady(key);
        }
      }
      const at = new Date();
      const recovered: SandboxRecovery = {
        at: at.toISOString(),
        reason,
        ...(from ? { fromSnapshot: from.id, lostSeconds: Math.round((at.getTime() - Date.parse(from.createdAt)) / 100) / 10 } : {}),
      };
      await this.#d.store.setOrigin(r.id, { at: recovered.at, ...(from ? { snapshot: from.id } : {}) });
      await this.#d.store.setRecovered(r.id, recovered);
      await this.#d.transition(r, 'running');
      await this.#d.store.setLost(r.id, undefined);
      r.lost = undefined;
      const detail = from
        ? `brought back (${opts.trigger}) from snapshot ${from.id} of ${from.createdAt}: ${recovered.lostSeconds} s of work lost (${reason})`
        : `started cold (${opts.trigger}) from its files, no usable snapshot: the memory of its processes is lost (${reason})`;
      this.#d.logger.info('sandbox recovered', { sandbox: r.id, trigger: opts.trigger, snapshot: from?.id, lostSeconds: recovered.lostSeconds, ms: Math.round(performance.now() - t0) });
      this.#emit({ sandboxId: r.id, operation: 'recover', detail, code: 'OK', durationMs: performance.now() - t0 });
    } catch (err) {
      const fe = toForkdError(err);
      this.#d.logger.error('sandbox recovery failed', { sandbox: r.id, trigger: opts.trigger, error: fe.message, details: fe.details });
      await this.#d.dropProcesses(key).catch(() => {});
      // The event log is the tenant's: the code only, the reasons are in the server log.
      this.#emit({ sandboxId: r.id, operation: 'recover', detail: `could not be brought back (${opts.trigger}); it stays failed`, code: fe.code, durationMs: performance.now() - t0 });
      throw fe;
    }
  }

  #emit(e: Omit<NodeEvent, 'at'>): void {
    try {
      this.#d.onEvent?.({ at: new Date().toISOString(), ...e, durationMs: Math.round(e.durationMs * 10) / 10 });
    } catch (err) {
      this.#d.logger.warn('event hook failed', { sandbox: e.sandboxId, error: String(err) });
    }
  }
}
