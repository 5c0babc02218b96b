import { ForkdError } from '@forkd/protocol';
import type { GuestTransportDeps } from './guest-transport.js';
import type { Logger } from '../../shared/logger.js';
import type { Limits } from '@forkd/protocol';
import type { CheckpointOptions, CheckpointStats, RestoreOptions, Runtime, RuntimeSpec, RuntimeState } from './runtime.js';
import { incompatibilities, type InstalledVersions } from './snapshot-compat.js';
import { readStamp, writeStamp } from './snapshot-stamp.js';
import { incompatibleCheckpoints } from './incompatible-checkpoints.js';
import { readdir, readFile } from 'node:fs/promises';

/** Why the installed tools cannot restore the checkpoint in `imagesDir` (empty: they can; an unstamped one is assumed to). */
export async function restoreRefusal(imagesDir: string, now: InstalledVersions): Promise<string[]> {
  const read = await readStamp(imagesDir);
  if (read.kind === 'unstamped') return [];
  if (read.kind === 'malformed') return [`its version stamp is malformed (${read.why})`];
  return incompatibilities(read.stamp, now);
}

/**
 * A runtime whose checkpoints say what made them (snapshot-stamp.ts) and
 * whose restores refuse, with FAILED_PRECONDITION and the reason, images the
 * installed CRIU, runc or agent cannot restore: before CRIU fails on them
 * halfway (or worse, restores them wrongly), and before anything of the
 * sandbox is changed.
 */
export class StampedRuntime implements Runtime {
  readonly #inner: Runtime;
  readonly #versions: () => Promise<InstalledVersions>;
  readonly #pool: string | undefined;

  /** `pool`: whose checkpoints the node's start looks over (prepareHost), to say which cannot be restored. */
  constructor(inner: Runtime, versions: () => Promise<InstalledVersions>, pool?: string) {
    this.#inner = inner;
    this.#versions = versions;
    this.#pool = pool;
  }

  get rootKind() {
    return this.#inner.rootKind;
  }
  get images() {
    return this.#inner.images;
  }
  /** Also says, before recovery or any call restores one, which checkpoints the installed versions cannot restore. */
  async prepareHost(log: Pick<Logger, 'info' | 'warn'>): Promise<void> {
    await this.#inner.prepareHost(log);
    if (!this.#pool) return;
    const now = await this.#versions();
    const fs = { list: (p: string) => readdir(p).catch(() => []), read: (p: string) => readFile(p, 'utf8').catch(() => undefined) };
    const bad = await incompatibleCheckpoints(this.#pool, now, fs).catch(() => []);
    for (const b of bad.slice(0, 20)) log.warn(`${b.kind} ${b.name} cannot be restored by the installed versions (forkd doctor lists them all)`, { [b.kind]: b.name, why: b.why, criu: now.criu, runc: now.runc, forkd: now.forkd });
    if (bad.length > 20) log.warn(`${bad.length - 20} more checkpoints cannot be restored by the installed versions`, { count: bad.length });
  }
  guests(deps: GuestTransportDeps) {
    return this.#inner.guests(deps);
  }
  start(id: string, spec: RuntimeSpec): Promise<RuntimeState> {
    return this.#inner.start(id, spec);
  }
  state(id: string): Promise<RuntimeState> {
    return this.#inner.state(id);
  }
  update(id: string, limits: Limits): Promise<void> {
    return this.#inner.update(id, limits);
  }
  thaw(id: string): Promise<void> {
    return this.#inner.thaw(id);
  }

  freeze(id: string): Promise<void> {
    return this.#inner.freeze(id);
  }
  settleMemory(id: string): Promise<void> {
    return this.#inner.settleMemory(id);
  }
  destroy(id: string): Promise<void> {
    return this.#inner.destroy(id);
  }
  usage(id: string) {
    return this.#inner.usage(id);
  }
  watchExit(id: string, onExit: () => void) {
    return this.#inner.watchExit(id, onExit);
  }
  list(): Promise<string[]> {
    return this.#inner.list();
  }

  async checkpoint(id: string, opts: CheckpointOptions): Promise<CheckpointStats> {
    const now = await this.#versions();
    const stats = await this.#inner.checkpoint(id, opts);
    // The agent this forkd installs speaks its newest protocol; an older agent restored from an older snapshot keeps its own.
    await writeStamp(opts.imagesDir, { format: now.format, forkd: now.forkd, guestProtocol: opts.guestProtocol ?? now.guestProtocol.max, criu: now.criu, runc: now.runc });
    return stats;
  }

  async restore(id: string, spec: RuntimeSpec, opts: RestoreOptions): Promise<RuntimeState> {
    const why = await restoreRefusal(opts.imagesDir, await this.#versions());
    if (why.length) throw new ForkdError('FAILED_PRECONDITION', `this snapshot cannot be restored by the installed versions: ${why.join('; ')}`, { incompatible: why });
    return this.#inner.restore(id, spec, opts);
  }
}
