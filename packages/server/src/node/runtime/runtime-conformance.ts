import { readdir } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError, Limits } from '@forkd/protocol';
import type { RuntimeNetwork } from '../network/network.js';
import type { FrozenCommit } from '../storage/frozen-commit.js';
import type { IdMap, Runtime, RuntimeSpec } from './runtime.js';
import type { SandboxRoot } from './sandbox-root.js';

/**
 * What the suite runs a Runtime with, made once for the whole suite (a real
 * one needs a pool, a base root and a network). Every test uses ids of its
 * own; what a failed test leaves goes with `close`.
 */
export interface RuntimeHarness {
  runtime: Runtime;
  /** The network the runtime was given, if any: its namespaces follow the runtime's instances. */
  network?: RuntimeNetwork | undefined;
  /** The host's network interfaces (with a network): where an `egress` instance's veth shows. */
  hostLinks?(): Promise<string[]>;
  /** A root for instance `key`, ready for a start: an init installed as the runtime's that keeps a value in memory (see `memory`). */
  root(key: string): Promise<SandboxRoot>;
  /** The filesystem snapshot of `key`'s root to `snapKey` a checkpoint makes while frozen; undefined: the runtime needs none (a fake). */
  frozenCommit(key: string, snapKey: string): Promise<FrozenCommit | undefined>;
  /** A root for `key` with the files committed at `snapKey`, ready for a restore (which needs the files its images name). */
  rootFrom(key: string, snapKey: string): Promise<SandboxRoot>;
  /** A fresh empty directory for images or work files (removed by close). */
  dir(): Promise<string>;
  /** A user namespace range starts use; undefined: none. */
  idmap?: IdMap | undefined;
  /** Ends `key`'s init from outside the runtime (a kill by the host, the OOM killer). */
  killInit(key: string): Promise<void>;
  /** The value the init of `key` picked at its start and keeps in memory: the same after a checkpoint and restore. */
  memory(key: string): Promise<string>;
  close(): Promise<void>;
}

export interface RuntimeConformanceOptions {
  /** Why the suite cannot run here (e.g. it needs root), or false. */
  skip?: string | false;
}

const MiB = 2 ** 20;

/**
 * The contract every Runtime passes (RuncRuntime on runc and CRIU, and the
 * FakeRuntime unit tests of the manager run on), as node:test tests under
 * `name`: what the manager relies on when it starts, checkpoints, restores,
 * thaws, resizes and destroys instances, and what recovery's orphan sweep
 * relies on in `list`. Error paths give ForkdErrors, with the codes callers
 * branch on.
 */
export function runtimeConformance(name: string, open: () => Promise<RuntimeHarness>, opts: RuntimeConformanceOptions = {}): void {
  describe(`Runtime conformance: ${name}`, { skip: opts.skip ?? false }, () => {
    let h: RuntimeHarness;
    let n = 0;
    const key = (what: string) => `rc-${what}-${++n}`;
    const spec = async (k: string, more: Partial<RuntimeSpec> = {}): Promise<RuntimeSpec> => ({ root: await h.root(k), hostname: k, limits: Limits.parse({ memoryMb: 256, cpus: 1, pids: 128 }), env: {}, idmap: h.idmap, ...more });
    /** A checkpoint of `k` with its root committed while frozen; its images, and the key of that root. */
    const checkpoint = async (k: string, leaveRunning: boolean) => {
      const imagesDir = await h.dir();
      const snapKey = `snapshots/${k}-${++n}/rootfs`;
      const whileFrozen = await h.frozenCommit(k, snapKey);
      const stats = await h.runtime.checkpoint(k, { imagesDir, workDir: await h.dir(), leaveRunning, ...(whileFrozen ? { whileFrozen } : {}) });
      return { imagesDir, snapKey, stats };
    };

    before(async () => {
      h = await open();
    });
    after(async () => {
      await h?.close();
    });

    test('start runs the init: running with its pid and range, listed, its usage within its limits', async () => {
      const k = key('start');
      const s = await spec(k);
      const st = await h.runtime.start(k, s);
      assert.equal(st.status, 'running');
      assert.ok(st.pid > 0);
      assert.deepEqual(st.idmap, h.idmap);
      assert.deepEqual(await h.runtime.state(k), { status: 'running', pid: st.pid });
      assert.ok((await h.runtime.list()).includes(k));
      if (h.network) assert.ok((await h.network.list()).includes(k), 'its network namespace is held under its id');
      const u = await h.runtime.usage(k);
      assert.equal(u.memoryLimitBytes, 256 * MiB);
      assert.ok(u.memoryBytes > 0 && u.memoryBytes <= 256 * MiB, `memory in use ${u.memoryBytes}`);
      assert.ok(u.pids >= 1 && u.pids <= 128, `pids ${u.pids}`);
      assert.equal(u.oomKills, 0);
      await h.runtime.destroy(k);
    });

    test('destroy ends it and is idempotent: gone from state, list and the network; again, and for an id never started, it resolves', async () => {
      const k = key('destroy');
      await h.runtime.start(k, await spec(k));
      await h.runtime.destroy(k);
      assert.deepEqual(await h.runtime.state(k), { status: 'missing', pid: 0 });
      assert.ok(!(await h.runtime.list()).includes(k));
      if (h.network) assert.ok(!(await h.network.list()).includes(k), 'its network namespace is released');
      await h.runtime.destroy(k);
      await h.runtime.destroy(key('never'));
    });

    test('an exit watch announces an end once where the runtime says it announces every end; a stopped watch says nothing', async () => {
      const [k, quiet] = [key('exit'), key('exit-quiet')];
      await Promise.all([h.runtime.start(k, await spec(k)), h.runtime.start(quiet, await spec(quiet))]);
      let ends = 0;
      let quietEnds = 0;
      const w = h.runtime.watchExit(k, () => ends++);
      h.runtime.watchExit(quiet, () => quietEnds++).stop();
      await Promise.all([h.killInit(k), h.killInit(quiet)]);
      if (w.everyExit) {
        for (let i = 0; i < 500 && ends === 0; i++) await new Promise((r) => setTimeout(r, 10));
        assert.equal(ends, 1);
      }
      w.stop();
      assert.ok(ends <= 1);
      assert.equal(quietEnds, 0);
      await Promise.all([h.runtime.destroy(k), h.runtime.destroy(quiet)]);
    });

    test('an unknown id: state missing (pid 0), usage all zeros, update and checkpoint reject, thaw rejects with NOT_FOUND', async () => {
      const k = key('unknown');
      assert.deepEqual(await h.runtime.state(k), { status: 'missing', pid: 0 });
      assert.deepEqual(await h.runtime.usage(k), { memoryBytes: 0, memoryLimitBytes: 0, cpuNanos: 0, pids: 0, oomKills: 0, pidsLimitHits: 0 });
      await assert.rejects(h.runtime.update(k, Limits.parse({})), ForkdError);
      await assert.rejects(h.runtime.thaw(k), (err) => err instanceof ForkdError && err.code === 'NOT_FOUND');
      await h.runtime.settleMemory(k); // nothing of it is being restored
      const imagesDir = await h.dir();
      await assert.rejects(h.runtime.checkpoint(k, { imagesDir, workDir: await h.dir(), leaveRunning: true }), ForkdError);
      assert.equal(await h.runtime.images.complete(imagesDir), false, 'no checkpoint was written');
      assert.ok(!(await h.runtime.list()).includes(k));
    });

    test('update changes a running instance\'s limits: its usage shows the new memory limit', async () => {
      const k = key('update');
      await h.runtime.start(k, await spec(k));
      await h.runtime.update(k, Limits.parse({ memoryMb: 320, cpus: 1, pids: 64 }));
      assert.equal((await h.runtime.usage(k)).memoryLimitBytes, 320 * MiB);
      assert.equal((await h.runtime.state(k)).status, 'running');
      await h.runtime.destroy(k);
    });

    test('checkpoint with leaveRunning writes whole images, with pages and the range, and the instance runs on', async () => {
      const k = key('ckpt');
      const st = await h.runtime.start(k, await spec(k));
      const { imagesDir, stats } = await checkpoint(k, true);
      assert.ok(Number.isFinite(stats.frozenMs) && stats.frozenMs >= 0, `frozenMs ${stats.frozenMs}`);
      assert.ok(Number.isFinite(stats.dumpMs) && stats.dumpMs >= 0, `dumpMs ${stats.dumpMs}`);
      assert.equal(await h.runtime.images.complete(imagesDir), true);
      assert.deepEqual(await h.runtime.images.idmap(imagesDir), h.idmap);
      assert.ok((await readdir(imagesDir)).some((f) => h.runtime.images.isPages(f)), 'some file holds the memory pages');
      assert.equal((await readdir(imagesDir)).filter((f) => h.runtime.images.isPages(f)).length < (await readdir(imagesDir)).length, true, 'not every file is pages');
      assert.deepEqual(await h.runtime.state(k), { status: 'running', pid: st.pid });
      await h.runtime.destroy(k);
    });

    test('checkpoint without leaveRunning leaves it paused until thaw; thaw of a running one changes nothing', async () => {
      const k = key('frozen');
      await h.runtime.start(k, await spec(k));
      const { imagesDir } = await checkpoint(k, false);
      assert.equal(await h.runtime.images.complete(imagesDir), true);
      assert.equal((await h.runtime.state(k)).status, 'paused');
      await h.runtime.thaw(k);
      assert.equal((await h.runtime.state(k)).status, 'running');
      await h.runtime.thaw(k);
      assert.equal((await h.runtime.state(k)).status, 'running');
      // Thawed, it is whole: another checkpoint works.
      assert.equal(await h.runtime.images.complete((await checkpoint(k, true)).imagesDir), true);
      await h.runtime.destroy(k);
    });

    test('freeze then checkpoint (a deferred dump): the frozen tree is dumped as it is, stays frozen, and restores with its memory', async () => {
      await assert.rejects(h.runtime.freeze(key('absent')), (err) => err instanceof ForkdError && err.code === 'NOT_FOUND');
      const a = key('prefrozen');
      await h.runtime.start(a, await spec(a));
      const value = await h.memory(a);
      await h.runtime.freeze(a);
      assert.equal((await h.runtime.state(a)).status, 'paused');
      const { imagesDir, snapKey } = await checkpoint(a, false);
      assert.equal(await h.runtime.images.complete(imagesDir), true);
      assert.equal((await h.runtime.state(a)).status, 'paused', 'left frozen');
      await h.runtime.destroy(a);
      const b = key('from-prefrozen');
      await h.runtime.restore(b, { ...(await spec(b)), root: await h.rootFrom(b, snapKey) }, { imagesDir });
      assert.equal(await h.memory(b), value);
      // A freeze given up (the rewind failed): thawed, it runs and dumps as before.
      await h.runtime.freeze(b);
      await h.runtime.thaw(b);
      assert.equal((await h.runtime.state(b)).status, 'running');
      assert.equal(await h.runtime.images.complete((await checkpoint(b, true)).imagesDir), true);
      await h.runtime.destroy(b);
    });

    test('restore brings the checkpointed tree back in another instance, with its memory and the images\' range whatever the spec says', async () => {
      const a = key('source');
      await h.runtime.start(a, await spec(a));
      const value = await h.memory(a);
      const { imagesDir, snapKey } = await checkpoint(a, false);
      await h.runtime.destroy(a);
      const b = key('restored');
      const asked = h.idmap ? { hostId: h.idmap.hostId + 65536, size: h.idmap.size } : undefined;
      const st = await h.runtime.restore(b, { ...(await spec(b)), root: await h.rootFrom(b, snapKey), idmap: asked }, { imagesDir });
      assert.equal(st.status, 'running');
      assert.ok(st.pid > 0);
      assert.deepEqual(st.idmap, h.idmap, 'the range of the images');
      assert.deepEqual(await h.runtime.state(b), { status: 'running', pid: st.pid });
      assert.ok((await h.runtime.list()).includes(b));
      if (h.network) assert.ok((await h.network.list()).includes(b), 'its network namespace is held under its id');
      assert.equal(await h.memory(b), value, 'the init\'s memory came back');
      await h.runtime.settleMemory(b);
      assert.equal(await h.runtime.images.complete(imagesDir), true, 'the images are left for other restores');
      await h.runtime.destroy(b);
      assert.deepEqual(await h.runtime.state(b), { status: 'missing', pid: 0 });
    });

    test('one checkpoint restores into several instances at once (a fork), each running on its own', async () => {
      const a = key('parent');
      await h.runtime.start(a, await spec(a));
      const value = await h.memory(a);
      const { imagesDir, snapKey } = await checkpoint(a, true);
      const kids = [key('fork'), key('fork')];
      const specs = await Promise.all(kids.map(async (k) => ({ ...(await spec(k)), root: await h.rootFrom(k, snapKey) })));
      const states = await Promise.all(kids.map((k, i) => h.runtime.restore(k, specs[i]!, { imagesDir })));
      assert.equal(new Set([...states.map((s) => s.pid), (await h.runtime.state(a)).pid]).size, 3, 'three trees');
      for (const k of kids) assert.equal(await h.memory(k), value);
      assert.equal((await h.runtime.state(a)).status, 'running', 'the parent runs on');
      await h.runtime.destroy(kids[0]!);
      assert.equal((await h.runtime.state(kids[1]!)).status, 'running', 'one going leaves the other');
      for (const k of [a, ...kids]) await h.runtime.destroy(k);
    });

    test('an egress instance restored elsewhere gets its veth again, with the host end the network gives the new instance', async (t) => {
      if (!h.network || !h.hostLinks) return t.skip('no network given');
      const network = { mode: 'egress' as const, allowOut: [], denyOut: [] };
      const a = key('egress');
      await h.runtime.start(a, await spec(a, { network }));
      const source = (await h.network.restoredVeth(a)).host;
      assert.ok((await h.hostLinks()).includes(source), 'started with its veth');
      const { imagesDir, snapKey } = await checkpoint(a, false);
      await h.runtime.destroy(a);
      assert.ok(!(await h.hostLinks()).includes(source), 'destroy releases the veth');
      const b = key('egress-restored');
      const before = new Set(await h.hostLinks());
      await h.runtime.restore(b, { ...(await spec(b, { network })), root: await h.rootFrom(b, snapKey) }, { imagesDir });
      const host = (await h.network.restoredVeth(b)).host;
      assert.deepEqual((await h.hostLinks()).filter((l) => !before.has(l)), [host], `the restored veth's host end ${host}, and no other link`);
      assert.equal((await h.runtime.state(b)).status, 'running');
      await h.runtime.destroy(b);
      assert.ok(!(await h.hostLinks()).includes(host));
    });

    test('a restore starts the tree only once its root is ready (made meanwhile); a root that could not be made fails it with that error, nothing left running', async () => {
      const a = key('root-source');
      await h.runtime.start(a, await spec(a));
      const value = await h.memory(a);
      const { imagesDir, snapKey } = await checkpoint(a, true);
      const [b, c] = [key('root-late'), key('root-failed')];
      let readyAt = 0;
      const rootReady = new Promise<void>((resolve) => setTimeout(() => ((readyAt = performance.now()), resolve()), 300));
      await h.runtime.restore(b, { ...(await spec(b)), root: await h.rootFrom(b, snapKey) }, { imagesDir, rootReady });
      assert.ok(readyAt > 0, 'not started before its root was ready');
      assert.equal(await h.memory(b), value);
      const failed = new Error('the root could not be made');
      // Made first: a slow host took over 50 ms for these, and the rejection then came before the restore held it.
      const cSpec = { ...(await spec(c)), root: await h.rootFrom(c, snapKey) };
      const never = new Promise<void>((_, reject) => setTimeout(() => reject(failed), 50));
      await assert.rejects(h.runtime.restore(c, cSpec, { imagesDir, rootReady: never }), (err) => err === failed);
      assert.notEqual((await h.runtime.state(c)).status, 'running');
      await Promise.all([a, b, c].map((k) => h.runtime.destroy(k)));
      assert.ok(!(await h.runtime.list()).includes(c));
    });

    test('a restore from a directory without a checkpoint rejects with a ForkdError; destroy then leaves nothing', async () => {
      const k = key('badrestore');
      const empty = await h.dir();
      await assert.rejects(h.runtime.restore(k, await spec(k), { imagesDir: empty }), ForkdError);
      assert.notEqual((await h.runtime.state(k)).status, 'running');
      await h.runtime.destroy(k);
      assert.ok(!(await h.runtime.list()).includes(k));
      if (h.network) assert.ok(!(await h.network.list()).includes(k));
    });

    test('list names an id that only holds a network namespace (a crash before the start); destroy releases it', async (t) => {
      if (!h.network) return t.skip('no network given');
      const k = key('orphan');
      await h.network.prepare(k);
      assert.ok((await h.runtime.list()).includes(k));
      await h.runtime.destroy(k);
      assert.ok(!(await h.runtime.list()).includes(k));
      assert.ok(!(await h.network.list()).includes(k));
    });
  });
}

