import { ForkdError, type SandboxInfo } from '@forkd/protocol';
import { silentLogger } from '../../shared/logger.js';
import { sandboxInfo } from '../../testing/sandbox-info.js';
import { ApiKeys } from '../auth/api-keys.js';
import { TenantQuotas } from '../quota/tenant-quotas.js';
import { AuthThrottle } from '../auth/auth-throttle.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import type { ControlStore } from '../../store/control-store.js';
import { createApp } from './app.js';
import { testCipher } from '../../testing/test-cipher.js';
import type { ClaimSandbox, NodeService } from '../../node-contract/index.js';
import type { Fleet } from '../../fleet/fleet.js';
import type { ControlPlane } from '../control-plane.js';

/* The API's unit tests' fixtures (app.test.ts, tenancy.test.ts): a fake node and an app over it. */

export const info: SandboxInfo = sandboxInfo('sbx-aaaaaaaaaaaa');

/**
 * `probe` is called with each new sandbox's id at the moment the node would
 * record it (after the claim): tests check the owner is already there.
 * Template builds make a build sandbox like the node does and wait for
 * `buildGate` (when set) before publishing, so a test can act mid-build.
 */
export function fakeService(): NodeService & { created: unknown[]; calls: Array<[string, unknown]>; probe: (id: string) => void | Promise<void>; buildGate: Promise<void> | undefined; buildSandboxes: string[]; failBuild: boolean } {
  const created: unknown[] = [];
  /** Lifecycle calls with the options they were given. */
  const calls: Array<[string, unknown]> = [];
  const boxes = new Map([[info.id, info]]);
  const templates = [{ name: 'base', createdAt: info.createdAt }];
  const missing = (id: string) => new ForkdError('NOT_FOUND', `sandbox ${id} not found`);
  let n = 0;
  const make = async (claim: ClaimSandbox | undefined, extra: Partial<SandboxInfo> = {}) => {
    const id = `sbx-${String(++n).padStart(12, 'b')}`;
    await claim?.(id);
    await fake.probe(id);
    const s = { ...info, id, hostname: id, createdAt: new Date(n * 1000).toISOString(), ...extra };
    boxes.set(id, s);
    return s;
  };
  const fake: ReturnType<typeof fakeService> = {
    created,
    calls,
    probe: () => {},
    buildGate: undefined,
    buildSandboxes: [],
    failBuild: false,
    async create(req, claim) {
      created.push(req);
      return make(claim, { metadata: (req as { metadata?: Record<string, string> }).metadata ?? {} });
    },
    async get(id) {
      const s = boxes.get(id);
      if (!s) throw missing(id);
      return s;
    },
    list: async () => [...boxes.values()],
    async delete(id) {
      if (!boxes.delete(id)) throw missing(id);
    },
    async spawn(id) {
      throw missing(id);
    },
    async attach(id) {
      throw missing(id);
    },
    async watch(id) {
      throw missing(id);
    },
    async connectPort(id) {
      throw missing(id);
    },
    async metrics(id) {
      throw missing(id);
    },
    listProcesses: async (id) => Promise.reject(missing(id)),
    signal: async (id) => Promise.reject(missing(id)),
    writeStdin: async (id) => Promise.reject(missing(id)),
    readFile: async (id) => Promise.reject(missing(id)),
    writeFile: async (id) => Promise.reject(missing(id)),
    listDir: async (id) => Promise.reject(missing(id)),
    stat: async (id) => Promise.reject(missing(id)),
    mkdir: async (id) => Promise.reject(missing(id)),
    move: async (id) => Promise.reject(missing(id)),
    remove: async (id) => Promise.reject(missing(id)),
    templates: async () => [...templates],
    snapshot: async (id) => Promise.reject(missing(id)),
    timeline: async (id) => Promise.reject(missing(id)),
    getSnapshot: async (id) => Promise.reject(missing(id)),
    deleteSnapshot: async (id) => Promise.reject(missing(id)),
    pinSnapshot: async (id) => Promise.reject(missing(id)),
    pause: async (id, opts) => {
      calls.push(['pause', opts]);
      const s = { ...(await fake.get(id)), state: 'paused' as const };
      boxes.set(id, s);
      return s;
    },
    setTimeout: async (id) => Promise.reject(missing(id)),
    setNetwork: async (id) => Promise.reject(missing(id)),
    async setCredentials(id, creds) {
      if (!boxes.has(id)) throw missing(id);
      calls.push(['setCredentials', { id, creds }]);
    },
    resume: async (id, opts) => {
      calls.push(['resume', opts]);
      const s = { ...(await fake.get(id)), state: 'running' as const };
      boxes.set(id, s);
      return s;
    },
    rewind: async (id) => Promise.reject(missing(id)),
    fork: async (id, count, claim, opts) => {
      const parent = boxes.get(id);
      if (!parent) throw missing(id);
      calls.push(['fork', opts]);
      const out: SandboxInfo[] = [];
      for (let i = 0; i < count; i++) out.push(await make(claim, { metadata: opts?.metadata ?? parent.metadata, env: { ...parent.env, ...opts?.env } }));
      return out;
    },
    tree: async (id) => Promise.reject(missing(id)),
    buildTemplate: async (req, _progress, claim) => {
      if (req.name === 'base') throw new ForkdError('FAILED_PRECONDITION', 'the base template cannot be replaced');
      const build = await make(claim);
      fake.buildSandboxes.push(build.id);
      try {
        await fake.buildGate;
        if (fake.failBuild) throw new ForkdError('FAILED_PRECONDITION', 'setup command failed');
        const t = { name: req.name, createdAt: new Date().toISOString() };
        templates.push(t);
        return t;
      } finally {
        boxes.delete(build.id);
      }
    },
    deleteTemplate: async (name) => {
      const i = templates.findIndex((t) => t.name === name);
      if (i < 0) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
      templates.splice(i, 1);
    },
    exportSnapshot: async (snapId) => {
      fake.calls.push(['exportSnapshot', snapId]);
      return { manifest: `snapshots/${snapId}/manifest.json`, bytesUploaded: 0 };
    },
    importSnapshot: async (manifest) => {
      fake.calls.push(['importSnapshot', manifest]);
      throw new ForkdError('NOT_FOUND', `no manifest at ${manifest}`);
    },
    exportTemplate: async (name) => {
      fake.calls.push(['exportTemplate', name]);
      return { manifest: `templates/${name}/0f0e0d0c-0b0a-0908-0706-050403020100/template.json`, bytesUploaded: 0 };
    },
    importTemplate: async (manifest) => {
      fake.calls.push(['importTemplate', manifest]);
      throw new ForkdError('NOT_FOUND', `no manifest at ${manifest}`);
    },
    stats: async () => ({ snapshots: 3, snapshotBytes: 4096, poolUsedBytes: 1 << 20, poolSizeBytes: 1 << 30, warmPoolHeld: 2, hotPaused: 1 }),
  };
  return fake;
}

/** An app over the fake service with a fresh control plane; `call` uses the admin key of tenant `default`. */
export async function testApp(svc: NodeService = fakeService(), throttle = new AuthThrottle({ burst: 10_000 }), opts: { fleet?: (control: ControlPlane) => Fleet; store?: ControlStore } = {}) {
  const store = opts.store ?? new SqliteControlStore(':memory:');
  const control = { store, keys: new ApiKeys(store, throttle), quotas: new TenantQuotas(store), cipher: testCipher(), close: () => store.close() };
  const fleet = opts.fleet?.(control);
  const app = createApp({ svc: fleet?.node ?? svc, control, logger: silentLogger, fleet });
  const admin = (await control.keys.create({ format: 'forkd', admin: true }, undefined)).key;
  const call = async (method: string, path: string, body?: string, key: string | null = admin) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) };
    const r = await app.request(path, { method, body: body ?? null, headers });
    return { status: r.status, json: (await r.json().catch(() => null)) as any };
  };
  return { app, control, admin, call, fleet };
}

/** Reads an NDJSON answer (template builds) whole. */
export async function ndjson(r: Response): Promise<any[]> {
  return (await r.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
}
