import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec } from '../../shared/exec.js';
import { silentLogger } from '../../shared/logger.js';
import { SqliteStore } from '../../store/sqlite-store.js';
import { FakeGuestTransport } from '../../testing/fake-guest-transport.js';
import { FakeNetwork } from '../../testing/fake-network.js';
import { FakeRuntime } from '../../testing/fake-runtime.js';
import { MemoryStorage } from '../../testing/memory-storage.js';
import { TemplateRegistry } from '../templates/template-registry.js';
import { poolLayout } from '../storage/pool-layout.js';
import type { ManagerDeps } from './manager-deps.js';
import { SandboxManager } from './sandbox-manager.js';


export interface TestManager {
  manager: SandboxManager;
  runtime: FakeRuntime;
  guests: FakeGuestTransport;
  storage: MemoryStorage;
  store: SqliteStore;
  templates: TemplateRegistry;
  /** A manager on the same store, storage and runtime (a daemon restart). */
  restart(opts?: Partial<ManagerDeps>): SandboxManager;
  close(): Promise<void>;
}

/**
 * A SandboxManager on fakes: FakeRuntime, FakeGuestTransport, MemoryStorage
 * (its commit made when asked for the command: nothing freezes here) and a
 * SQLite store in a temporary file, with an empty `base` template.
 */
export async function testManager(opts: Partial<ManagerDeps> = {}): Promise<TestManager> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-manager-test-'));
  const storage = await MemoryStorage.open(dir);
  // MemoryStorage has no command form of commit: make the snapshot right away, and let the "command" do nothing.
  storage.frozenCommit = async (key: string, source: string) => {
    await storage.commit(key, source, { keepActive: true });
    return { kind: 'host-command', argv: ['true'] };
  };
  const store = new SqliteStore(join(dir, 'forkd.db'));
  const templates = new TemplateRegistry(storage, store);
  await storage.create(poolLayout.template('base'));
  await store.upsertTemplate({ id: 'base', name: 'base', createdAt: new Date().toISOString(), volume: poolLayout.template('base') });
  const network = new FakeNetwork();
  const runtime = new FakeRuntime({ network });
  const guests = new FakeGuestTransport();
  const make = (more: Partial<ManagerDeps> = {}) =>
    new SandboxManager({
      store,
      storage,
      runtime,
      network,
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
