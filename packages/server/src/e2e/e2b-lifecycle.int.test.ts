import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { describeE2b, sleep, type E2bRun, type SandboxClass } from '../testing/e2b-suite.js';

/**
 * The lifecycle through the official `e2b` SDK (2.51.0 and 2.35.0) against a
 * real `forkd serve`: list, timeouts and metrics, pause and connect (with and
 * without memory), snapshots, fork, auto-pause, and forkd's extras.
 */
describeE2b('the official e2b SDK against forkd serve: lifecycle', (run: E2bRun, versionName: string) => {
  const version = { name: versionName };
  // Filled in before the tests run (see describeE2b).
  let Sandbox: E2bRun['Sandbox'];
  let sbx: E2bRun['sbx'];
  let daemon: E2bRun['daemon'] | undefined;
  const tag = run.tag;
  before(() => {
    ({ Sandbox, sbx, daemon } = run);
  });

    test('Sandbox.list: metadata filter and paging', async () => {
      const other = await Sandbox.create('base', { metadata: { suite: tag }, timeoutMs: 120_000 });
      try {
        const all = await Sandbox.list({ query: { metadata: { suite: tag } } }).nextItems();
        assert.deepEqual(all.map((s) => s.sandboxId).sort(), [sbx.sandboxId, other.sandboxId].sort());
        assert.deepEqual(all[0]!.metadata, { suite: tag });
        const pager = Sandbox.list({ query: { metadata: { suite: tag } }, limit: 1 });
        const p1 = await pager.nextItems();
        assert.equal(p1.length, 1);
        assert.equal(pager.hasNext, true);
        const p2 = await pager.nextItems();
        assert.equal(p2.length, 1);
        assert.equal(pager.hasNext, false);
        assert.notEqual(p1[0]!.sandboxId, p2[0]!.sandboxId);
        const none = await Sandbox.list({ query: { metadata: { suite: 'nope' } } }).nextItems();
        assert.deepEqual(none, []);
      } finally {
        assert.equal(await other.kill(), true);
      }
    });

    test('setTimeout, getInfo, getMetrics; expiry kills within a second', async () => {
      const before = await sbx.getInfo();
      assert.equal(before.state, 'running');
      await sbx.setTimeout(900_000);
      const after = await sbx.getInfo();
      assert.ok(after.endAt.getTime() > before.endAt.getTime());
      // connect never shortens the lifetime.
      await Sandbox.connect(sbx.sandboxId, { timeoutMs: 10_000 });
      assert.equal((await sbx.getInfo()).endAt.getTime(), after.endAt.getTime());
      const metrics = await sbx.getMetrics();
      assert.ok(metrics.length >= 1);
      const m = metrics[0]!;
      assert.ok(m.cpuCount >= 1 && m.memUsed > 0 && m.memTotal > 0 && m.diskTotal > 0 && typeof m.cpuUsedPct === 'number');
      assert.deepEqual(await sbx.getMetrics({ start: new Date(Date.now() - 3600_000), end: new Date(Date.now() - 1800_000) }), []);

      const short = await Sandbox.create('base', { timeoutMs: 120_000 });
      await short.setTimeout(2000);
      await sleep(3000);
      assert.equal(await short.isRunning(), false);
    });

    test('pause, then connect with a background process still running', async () => {
      const s = await Sandbox.create('base', { timeoutMs: 120_000 });
      try {
        const bg = await s.commands.run('sleep 3600', { background: true });
        await s.commands.run('(sleep 2 && echo done > /home/user/later.txt) > /dev/null 2>&1 &');
        await s.files.write('kept.txt', 'kept');
        assert.equal(await s.pause(), true);
        assert.equal(await s.isRunning(), false);
        assert.equal((await Sandbox.getInfo(s.sandboxId)).state, 'paused');
        assert.equal(await Sandbox.pause(s.sandboxId), false);
        const paused = await Sandbox.list({ query: { state: ['paused'] } }).nextItems();
        assert.ok(paused.some((x) => x.sandboxId === s.sandboxId));
        const again = await Sandbox.connect(s.sandboxId);
        assert.equal(await again.isRunning(), true);
        assert.ok((await again.commands.list()).some((p) => p.pid === bg.pid));
        assert.equal(await again.files.read('kept.txt'), 'kept');
        await sleep(2500);
        assert.equal((await again.files.read('later.txt')).trim(), 'done');
        assert.equal(await again.commands.kill(bg.pid), true);
      } finally {
        await s.kill();
      }
    });

    // A container gets no new kernel: /proc/sys/kernel/random/boot_id stays the same (E2B's own test of it fails here).

    test('pause with keepMemory false, then connect: files and envs kept, processes started afresh', async () => {
      const s = await Sandbox.create('base', { envs: { FOO: 'kept' }, timeoutMs: 120_000 });
      try {
        const bg = await s.commands.run('sleep 3600', { background: true });
        await s.files.write('kept.txt', 'kept');
        assert.equal(await s.pause({ keepMemory: false }), true);
        assert.equal(await s.isRunning(), false);
        assert.equal((await Sandbox.getInfo(s.sandboxId)).state, 'paused');
        const again = await Sandbox.connect(s.sandboxId);
        assert.equal(await again.isRunning(), true);
        assert.equal(await again.files.read('kept.txt'), 'kept');
        assert.ok(!(await again.commands.list()).some((p) => p.pid === bg.pid && p.cmd === 'sleep'), 'the sleep of before is gone');
        assert.equal((await again.commands.run('cat /proc/[0-9]*/comm 2>/dev/null | grep -cx sleep || true')).stdout, '0\n');
        assert.equal((await again.commands.run('echo $FOO')).stdout, 'kept\n');
      } finally {
        await s.kill();
      }
    });

    test('connect with onResume reboot after a pause that kept memory; auto-pause at timeout without memory', { skip: version.name !== 'e2b 2.51.0' && 'onResume and lifecycle keepMemory are 2.51' }, async () => {
      const s = await Sandbox.create('base', { timeoutMs: 120_000 });
      try {
        await s.commands.run('sleep 3600', { background: true });
        await s.files.write('kept.txt', 'kept');
        assert.equal(await s.pause(), true);
        const again = await Sandbox.connect(s.sandboxId, { onResume: 'reboot' });
        assert.equal(await again.files.read('kept.txt'), 'kept');
        assert.equal((await again.commands.run('cat /proc/[0-9]*/comm 2>/dev/null | grep -cx sleep || true')).stdout, '0\n', 'rebooted: no process of before');
      } finally {
        await s.kill();
      }
      const t = await Sandbox.create('base', { timeoutMs: 3000, lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } });
      try {
        await t.commands.run('sleep 3600', { background: true });
        await t.files.write('before.txt', 'x');
        await sleep(4500);
        assert.equal((await t.getInfo()).state, 'paused');
        await t.connect({ timeoutMs: 60_000 });
        assert.equal((await t.getInfo()).state, 'running');
        assert.equal(await t.files.read('before.txt'), 'x');
        assert.equal((await t.commands.run('cat /proc/[0-9]*/comm 2>/dev/null | grep -cx sleep || true')).stdout, '0\n', 'started cold');
      } finally {
        await t.kill();
      }
    });

    test('create from a snapshot with its own envs and metadata: listed by that metadata, new commands see the envs', async () => {
      const snap = await sbx.createSnapshot();
      const own = `own-${tag}`;
      const f = await Sandbox.create(snap.snapshotId, { envs: { FROM_SNAPSHOT: 'yes' }, metadata: { own }, timeoutMs: 120_000 });
      try {
        const listed = await Sandbox.list({ query: { metadata: { own } } }).nextItems();
        assert.deepEqual(listed.map((x) => x.sandboxId), [f.sandboxId]);
        assert.deepEqual(listed[0]!.metadata, { own });
        assert.deepEqual((await f.getInfo()).metadata, { own });
        assert.ok(!(await Sandbox.list({ query: { metadata: { suite: tag } } }).nextItems()).some((x) => x.sandboxId === f.sandboxId), 'not the snapshot\'s metadata');
        assert.equal((await f.commands.run('echo $FROM_SNAPSHOT $FOO')).stdout, 'yes bar\n', 'its envs over the snapshot\'s');
      } finally {
        await f.kill();
        await Sandbox.deleteSnapshot(snap.snapshotId);
      }
    });

    test('createSnapshot, create from it, deleteSnapshot', async () => {
      await sbx.files.write('app/config.json', '{"v":1}');
      const snap = await sbx.createSnapshot({ name: `snap-${tag}` });
      assert.ok(snap.snapshotId);
      assert.ok(snap.names.some((n) => n.includes(`snap-${tag}`)));
      const listed = await Sandbox.listSnapshots({ sandboxId: sbx.sandboxId }).nextItems();
      assert.ok(listed.some((x) => x.snapshotId === snap.snapshotId));
      const a = await Sandbox.create(snap.snapshotId, { timeoutMs: 120_000 });
      const b = await Sandbox.create(snap.snapshotId, { timeoutMs: 120_000 });
      try {
        assert.equal(await a.files.read('app/config.json'), '{"v":1}');
        await a.files.write('app/config.json', '{"v":2}');
        assert.equal(await b.files.read('app/config.json'), '{"v":1}');
        assert.equal(await sbx.isRunning(), true);
      } finally {
        await a.kill();
        await b.kill();
      }
      assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true);
      assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false);
    });

    test('fork with count 3', async () => {
      await sbx.files.write('state.txt', 'parent');
      const forks = await sbx.fork({ count: 3 });
      assert.equal(forks.length, 3);
      const ids = new Set<string>();
      try {
        for (const f of forks) {
          assert.ok(!(f instanceof Error), String(f));
          const fs = f as InstanceType<SandboxClass>;
          ids.add(fs.sandboxId);
          assert.notEqual(fs.sandboxId, sbx.sandboxId);
          assert.equal(await fs.isRunning(), true);
          assert.equal(await fs.files.read('state.txt'), 'parent');
        }
        assert.equal(ids.size, 3);
        await (forks[0] as InstanceType<SandboxClass>).files.write('state.txt', 'child');
        assert.equal(await sbx.files.read('state.txt'), 'parent');
      } finally {
        for (const f of forks) if (!(f instanceof Error)) await (f as InstanceType<SandboxClass>).kill();
      }
    });

    test('lifecycle: auto-pause at timeout, then connect resumes; autoResume wakes a paused sandbox on traffic', { skip: version.name !== 'e2b 2.51.0' && 'lifecycle options are 2.42+' }, async () => {
      const s = await Sandbox.create('base', { timeoutMs: 3000, lifecycle: { onTimeout: 'pause', autoResume: false } });
      try {
        await s.files.write('before.txt', 'x');
        await sleep(4500);
        assert.equal((await s.getInfo()).state, 'paused');
        assert.equal(await s.isRunning(), false);
        await s.connect({ timeoutMs: 60_000 });
        assert.equal((await s.getInfo()).state, 'running');
        assert.equal(await s.files.read('before.txt'), 'x');
      } finally {
        await s.kill();
      }
      const w = await Sandbox.create('base', { timeoutMs: 60_000, lifecycle: { onTimeout: 'pause', autoResume: true } });
      try {
        assert.equal((await w.getInfo()).lifecycle?.autoResume, true);
        await w.pause();
        assert.equal((await w.getInfo()).state, 'paused');
        // Traffic that would be refused wakes nothing: without the sandbox's token it stays paused (502).
        const stranger = await fetch(`${process.env.E2B_SANDBOX_URL!}/process.Process/List`, { method: 'POST', headers: { 'e2b-sandbox-id': w.sandboxId, 'x-access-token': 'not-its-token', 'content-type': 'application/json' }, body: '{}' });
        assert.equal(stranger.status, 502);
        assert.equal((await w.getInfo()).state, 'paused');
        assert.equal((await w.commands.run('echo awake')).stdout, 'awake\n');
        assert.equal((await w.getInfo()).state, 'running');
      } finally {
        await w.kill();
      }
    });

    test("forkd's extras on an E2B sandbox: its timeline and a rewind, with a forkd key of the same tenant", async () => {
      const r = await fetch(`${daemon!.url}/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${daemon!.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ tenant: 'e2b-test' }) });
      const forkdKey = ((await r.json()) as { key: string }).key;
      const h = { authorization: `Bearer ${forkdKey}`, 'content-type': 'application/json' };
      await sbx.files.write('rewind.txt', 'before');
      const snap = await sbx.createSnapshot();
      await sbx.files.write('rewind.txt', 'after');
      const tl = await fetch(`${daemon!.url}/v1/sandboxes/${sbx.sandboxId}/snapshots`, { headers: h });
      assert.equal(tl.status, 200);
      assert.ok(((await tl.json()) as { snapshots: { id: string }[] }).snapshots.some((x) => x.id === snap.snapshotId));
      const rw = await fetch(`${daemon!.url}/v1/sandboxes/${sbx.sandboxId}/rewind`, { method: 'POST', headers: h, body: JSON.stringify({ snapshot: snap.snapshotId }) });
      assert.equal(rw.status, 200, await rw.clone().text());
      assert.equal(await sbx.files.read('rewind.txt'), 'before');
      await Sandbox.deleteSnapshot(snap.snapshotId);
    });
});
