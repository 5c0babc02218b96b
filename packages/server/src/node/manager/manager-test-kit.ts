import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import { silentLogger } from '../../shared/logger.js';
import { SqliteStore } from '../../store/sqlite-store.js';
import { FakeRuntime } from '../../testing/fake-runtime.js';
import { MemoryStorage } from '../../testing/memory-storage.js';
import type { GuestClient } from '../guest/guest-client.js';
import type { Network } from '../network/network.js';
import type { RuntimeStatus } from '../runtime/runtime.js';
import { TemplateRegistry } from '../templates/template-registry.js';
import type { GuestInstall } from './guest-install.js';
import type { ManagerDeps } from './manager-deps.js';
import { SandboxManager } from './sandbox-manager.js';

/**
 * A guest side without an agent (unit tests): every instance's link answers
 * at once, unless told otherwise. Records what was asked of it.
 */
export class FakeGuestInstall implements GuestInstall {
  readonly prepared: Array<{ key: string; install: boolean }> = [];
  readonly dropped: string[] = [];
  /** Instances whose agent does not answer (info and waitAgent fail). */
  readonly silent = new Set<string>();
  readonly #links = new Map<string, GuestClient>();

  at(key: string): GuestClient {
    let g = this.#links.get(key);
    if (!g) {
      const silent = () => this.silent.has(key);
      const fake = {
        openConnections: 0,
        info: async () => {
          if (silent()) throw new ForkdError('TIMEOUT', `fake agent of ${key} does not answer`);
          return {};
        },
        setDumpable: async () => {},
        quiesce: async () => () => {},
        unsealing: () => {},
        sealed: () => {},
        sealFailed: () => {},
        detachAll: () => {},
      };
      g = fake as unknown as GuestClient;
      this.#links.set(key, g);
    }
    return g;
  }

  drop(key: string): void {
    this.dropped.push(key);
    this.#links.delete(key);
  }

  openConnections(): number {
    return 0;
  }

  async prepareRoot(key: string, opts: { install: boolean }): Promise<void> {
    this.prepared.push({ key, install: opts.install });
  }

  async waitAgent(key: string, status: () => Promise<RuntimeStatus>): Promise<void> {
    if (this.silent.has(key)) throw new ForkdError('TIMEOUT', `guest agent of ${key} did not become ready`);
    const st = await status();
    if (st === 'stopped' || st === 'missing') throw new ForkdError('INTERNAL', `sandbox ${key} exited during start`);
  }
}

const noNetwork: Network = {
  prepare: async (id) => id,
  adopt: async (id) => id,
  release: async () => {},
  list: async () => [],
  connect: () => {
    throw new ForkdError('UNAVAILABLE', 'no network in unit tests');
  },
};

export interface TestManager {
  manager: SandboxManager;
  runtime: FakeRuntime;
  guests: FakeGuestInstall;
  storage: MemoryStorage;
  store: SqliteStore;
  templates: TemplateRegistry;
  /** A manager on the same store, storage and runtime (a daemon restart). */
  restart(opts?: Partial<ManagerDeps>): SandboxManager;
  close(): Promise<void>;
}

/**
 * A SandboxManager on fakes: FakeRuntime, FakeGuestInstall, MemoryStorage
 * (its commit made when asked for the command: nothing freezes here) and a
 * SQLite store in a temporary file, with an empty `base` template.
 */
export async function testManager(opts: Partial<ManagerDeps> = {}): Promise<TestManager> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-manager-test-'));
  const storage = await MemoryStorage.open(dir);
  // MemoryStorage has no command form of commit: make the snapshot right away, and let the "command" do nothing.
  storage.commitCommand = async (key: string, source: string) => {
    await storage.commit(key, source, { keepActive: true });
    return ['true'];
  };
  const store = new SqliteStore(join(dir, 'forkd.db'));
  const templates = new TemplateRegistry(storage, store);
  await storage.create('templates/base');
  await store.upsertTemplate({ name: 'base', createdAt: new Date().toISOString(), volume: 'templates/base' });
  const runtime = new FakeRuntime();
  const guests = new FakeGuestInstall();
  const make = (more: Partial<ManagerDeps> = {}) =>
    new SandboxManager({
      store,
      storage,
      runtime,
      network: noNetwork,
      templates,
      guestBinary: '/nonexistent/forkd-guest',
      logger: silentLogger,
      guests,
      admission: { host: { memoryMb: 16384, cpus: 8 } },
      ...opts,
      ...more,
    });
  const manager = make();
  return {
    manager,
    runtime,
    guests,
    storage,
    store,
    templates,
    restart: make,
    async close() {
      await manager.close();
      await store.close();
      // As root, MemoryStorage seals read-only volumes immutable.
      await exec('chattr', ['-R', '-f', '-i', dir]).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
