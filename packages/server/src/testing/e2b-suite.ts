import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { after, before, describe } from 'node:test';
import { disposeNodeDir, isRoot, testConfig } from './test-node.js';
import { stopDaemonProcess, type DaemonProcess } from './daemon-process.js';
import { startE2bDaemon } from './e2b-daemon.js';

export type SandboxClass = typeof import('e2b').Sandbox;
export type E2bSandbox = InstanceType<SandboxClass>;

/** The official SDK's versions the suites run: the newest, and an older plain-HTTP one (v1 create and connect paths, fork since 2.35). */
const VERSIONS: { name: string; load: () => Promise<SandboxClass> }[] = [
  { name: 'e2b 2.51.0', load: async () => (await import('e2b')).Sandbox },
  { name: 'e2b 2.35.0', load: async () => (await import('e2b-2-35')).Sandbox as unknown as SandboxClass },
];

/** What each version's tests share: the SDK, one sandbox made with envs and metadata, the tag in that metadata, the daemon. */
export interface E2bRun {
  Sandbox: SandboxClass;
  sbx: E2bSandbox;
  tag: string;
  daemon: DaemonProcess;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The official `e2b` SDK, unchanged, against a real `forkd serve`: only the
 * environment points it here (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY of
 * an e2b-format key of its own tenant). `body` declares the tests once per
 * SDK version; `run` is filled in before they start.
 */
export function describeE2b(title: string, body: (run: E2bRun, version: string) => void): void {
  describe(title, { skip: !isRoot && 'needs root' }, () => {
    let dir = '';
    let cfg: ReturnType<typeof testConfig>;
    let daemon: DaemonProcess | undefined;

    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'forkd-e2b-'));
      cfg = testConfig(dir);
      const e = await startE2bDaemon(cfg.env);
      daemon = e.daemon;
      assert.match(e.key, /^e2b_[0-9a-f]{40}$/);
      process.env.E2B_API_KEY = e.key;
      process.env.E2B_API_URL = e.apiUrl;
      process.env.E2B_SANDBOX_URL = e.envdUrl;
      delete process.env.E2B_DEBUG;
    });
    after(async () => {
      await stopDaemonProcess(daemon);
      if (dir) await disposeNodeDir(undefined, dir, cfg.config);
    });

    for (const version of VERSIONS) {
      describe(version.name, () => {
        const run = { tag: `run-${randomBytes(4).toString('hex')}` } as E2bRun;
        before(async () => {
          run.daemon = daemon!;
          run.Sandbox = await version.load();
          run.sbx = await run.Sandbox.create('base', { envs: { FOO: 'bar' }, metadata: { suite: run.tag }, timeoutMs: 600_000 });
        });
        after(async () => {
          await run.sbx?.kill().catch(() => {});
        });
        body(run, version.name);
      });
    }
  });
}
