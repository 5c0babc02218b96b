import { constants as osConstants } from 'node:os';
import { withSpawnDefaults } from './spawn-defaults.js';
import { ForkdError, type WatchEvent } from '@forkd/protocol';
import type { ExecExit, OutputHandlers, ProcessExit, ProcessSelector, ProcessStream, ResumePoint, SpawnOptions, WatchHandle } from '../../node-contract/node-types.js';
import type { Logger } from '../../shared/logger.js';
import type { SandboxRecord, Store } from '../../store/store.js';
import type { GuestClient, GuestProcess } from '../guest/guest-client.js';
import type { ResourceUsage, Runtime } from '../runtime/runtime.js';
import type { GuestTransport } from '../runtime/guest-transport.js';
import { ProcessSession, type SessionHost } from './process-session.js';
import type { ReattachGate } from './reattach-gate.js';
import { watchSession } from './watch-session.js';

export interface StreamsDeps {
  store: Store;
  runtime: Runtime;
  guests: GuestTransport;
  reattach: ReattachGate;
  logger: Logger;
  /** The guest link for a call: resumes a hibernated sandbox, counts as activity (SandboxManager.guest). */
  guest(id: string): Promise<GuestClient>;
  key(id: string): Promise<string>;
  record(id: string): Promise<SandboxRecord>;
}

/**
 * Client-facing process streams and directory watches: they survive
 * snapshots, pauses and rewinds (see ProcessSession, watchSession), and a
 * process's exit says whether the OOM killer ended it.
 */
export class SandboxStreams {
  readonly #d: StreamsDeps;
  readonly #host: SessionHost;

  constructor(deps: StreamsDeps) {
    this.#d = deps;
    this.#host = {
      reattachPoint: (id, signal) => this.#reattachPoint(id, signal),
      wake: async (id) => {
        await deps.guest(id);
      },
      warn: (message, fields) => deps.logger.warn(message, fields),
    };
  }

  /**
   * Starts a process and reports its exit with OOM attribution: the kernel
   * says only SIGKILL, the sandbox's cgroup says whether the OOM killer did it.
   */
  async spawn(id: string, opts: SpawnOptions, handlers: OutputHandlers = {}): Promise<ProcessStream> {
    const guest = await this.#d.guest(id);
    const key = await this.#d.key(id);
    const before = await this.#d.runtime.usage(key).catch(() => undefined);
    const rec = await this.#d.record(id);
    const gp = await guest.spawn(withSpawnDefaults({ ...opts, env: { ...rec.env, ...opts.env } }, rec.defaults), handlers);
    return this.#session(id, key, gp, handlers, before);
  }

  /** With `resume`: only the process of that spawn, from that offset (a client's stream resumed after a daemon restart). */
  async attach(id: string, sel: ProcessSelector, handlers: OutputHandlers = {}, resume?: ResumePoint): Promise<ProcessStream> {
    const guest = await this.#d.guest(id);
    const key = await this.#d.key(id);
    const before = await this.#d.runtime.usage(key).catch(() => undefined);
    const gp = await guest.attach(sel, handlers, resume);
    return this.#session(id, key, gp, handlers, before);
  }

  /** A directory watch that is re-opened after every snapshot, pause or rewind. */
  async watch(id: string, path: string, recursive: boolean, onEvent: (e: WatchEvent) => void | Promise<void>): Promise<WatchHandle> {
    const guest = await this.#d.guest(id);
    return watchSession(this.#host, id, await guest.watch(path, recursive, onEvent), (g) => g.watch(path, recursive, onEvent));
  }

  /** A stream that survives snapshots, pauses and rewinds (see ProcessSession). */
  #session(id: string, key: string, gp: GuestProcess, handlers: OutputHandlers, before: ResourceUsage | undefined): ProcessStream {
    const session = new ProcessSession(this.#host, id, key, gp, handlers);
    return { process: session, exit: this.#withOom(id, session, before) };
  }

  async #reattachPoint(id: string, signal: AbortSignal): Promise<{ guest: GuestClient; key: string }> {
    const aborted = new Promise<never>((_, reject) => {
      const fail = () => reject(new ForkdError('CANCELLED', 'the stream was closed'));
      if (signal.aborted) fail();
      else signal.addEventListener('abort', fail, { once: true });
    });
    aborted.catch(() => {});
    for (;;) {
      await Promise.race([this.#d.reattach.opened(id), aborted]);
      const r = await this.#d.store.getSandbox(id);
      if (!r || r.state === 'stopping') throw new ForkdError('NOT_FOUND', `sandbox ${id} was deleted`);
      if (r.state === 'running') {
        const key = r.instance ?? r.id;
        return { guest: this.#d.guests.at(key), key };
      }
      if (r.state !== 'paused' && r.state !== 'creating') throw new ForkdError('UNAVAILABLE', `sandbox ${id} is ${r.state}`);
      // Paused: the stream stays open and goes on when something resumes it (its own input does).
      await Promise.race([this.#d.reattach.changed(id), aborted]);
    }
  }

  async #withOom(id: string, p: { done: Promise<ProcessExit | null> }, before: ResourceUsage | undefined): Promise<ExecExit | null> {
    const exit = await p.done;
    if (!exit) return null;
    let oomKilled = false;
    if (exit.signal === osConstants.signals.SIGKILL && before) {
      const after = await this.#d.runtime.usage(await this.#d.key(id)).catch(() => undefined);
      oomKilled = !!after && after.oomKills > before.oomKills;
    }
    return { ...exit, oomKilled };
  }
}
