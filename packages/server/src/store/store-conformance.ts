import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { SandboxRecord, SnapshotRecord, Store, TemplateRecord } from './store.js';

/**
 * Makes the store one test uses: a fresh, empty one; with `reopen`, the
 * database the previous call made (already closed by then), to show what
 * survives a restart of the daemon.
 */
export type OpenStore = (opts?: { reopen?: boolean }) => Promise<Store>;

/**
 * The contract every Store implementation passes (SQLite today, PostgreSQL
 * next), as node:test tests under `name`. It states what the manager relies
 * on, unknown ids and absent fields included, so a second implementation
 * cannot drift from the first in ways only a crash would show.
 */
export function storeConformance(name: string, open: OpenStore): void {
  describe(`Store conformance: ${name}`, () => {
    const withStore = (title: string, fn: (store: Store) => Promise<void>) =>
      test(title, async () => {
        const store = await open();
        try {
          await fn(store);
        } finally {
          await store.close();
        }
      });

    withStore('a sandbox with only its required fields reads back without optional ones', async (store) => {
      const rec = sandbox('sbx-a');
      await store.insertSandbox(rec);
      assert.deepEqual(await store.getSandbox('sbx-a'), rec);
      assert.deepEqual(await store.listSandboxes(), [rec]);
    });

    withStore('every optional field of a sandbox round-trips through insert', async (store) => {
      const rec = fullSandbox('sbx-full');
      await store.insertSandbox(rec);
      assert.deepEqual(await store.getSandbox('sbx-full'), rec);
      assert.deepEqual(await store.listSandboxes(), [rec]);
    });

    withStore('listSandboxes orders by creation time, then id; deleteSandbox removes only its record', async (store) => {
      await store.insertSandbox(sandbox('sbx-c', { createdAt: '2026-01-01T00:00:02.000Z' }));
      await store.insertSandbox(sandbox('sbx-b', { createdAt: '2026-01-01T00:00:01.000Z' }));
      await store.insertSandbox(sandbox('sbx-a', { createdAt: '2026-01-01T00:00:02.000Z' }));
      assert.deepEqual(ids(await store.listSandboxes()), ['sbx-b', 'sbx-a', 'sbx-c']);
      await store.deleteSandbox('sbx-a');
      assert.equal(await store.getSandbox('sbx-a'), undefined);
      assert.deepEqual(ids(await store.listSandboxes()), ['sbx-b', 'sbx-c']);
    });

    withStore('inserting a sandbox or snapshot id that exists fails and keeps the first record', async (store) => {
      await store.insertSandbox(sandbox('sbx-a', { template: 'first' }));
      await assert.rejects(store.insertSandbox(sandbox('sbx-a', { template: 'second' })));
      assert.equal((await store.getSandbox('sbx-a'))?.template, 'first');
      await store.insertSnapshot(snapshot('snap-a', 'sbx-a', { frozenMs: 1 }));
      await assert.rejects(store.insertSnapshot(snapshot('snap-a', 'sbx-a', { frozenMs: 2 })));
      assert.equal((await store.getSnapshot('snap-a'))?.frozenMs, 1);
    });

    withStore('transition is a compare-and-set on state that records or clears the error', async (store) => {
      await store.insertSandbox(sandbox('sbx-a', { state: 'creating', error: 'old' }));
      assert.equal(await store.transition('sbx-a', 'running', 'paused'), false);
      assert.deepEqual(await store.getSandbox('sbx-a'), sandbox('sbx-a', { state: 'creating', error: 'old' }), 'a failed compare changes nothing');
      assert.equal(await store.transition('sbx-a', 'creating', 'running'), true);
      assert.deepEqual(await store.getSandbox('sbx-a'), sandbox('sbx-a', { state: 'running' }), 'a transition without an error clears the old one');
      assert.equal(await store.transition('sbx-a', 'creating', 'failed', 'too late'), false);
      assert.equal(await store.transition('sbx-a', 'running', 'failed', 'boom'), true);
      assert.deepEqual(await store.getSandbox('sbx-a'), sandbox('sbx-a', { state: 'failed', error: 'boom' }));
      assert.equal(await store.transition('sbx-a', 'failed', 'failed'), true, 'from and to may be the same state');
      assert.equal((await store.getSandbox('sbx-a'))?.error, undefined);
    });

    withStore('transition of an unknown sandbox is false', async (store) => {
      assert.equal(await store.transition('sbx-nope', 'creating', 'running'), false);
      assert.deepEqual(await store.listSandboxes(), []);
    });

    withStore('setResumeFrom, setPolicy, setIdmap, setLost, setRecovered, setOrigin and setNetwork set a field and clear it with undefined', async (store) => {
      const base = sandbox('sbx-a');
      const other = sandbox('sbx-b');
      await store.insertSandbox(base);
      await store.insertSandbox(other);
      const full = fullSandbox('sbx-a');
      await store.setResumeFrom('sbx-a', full.resumeFrom);
      await store.setPolicy('sbx-a', full.policy);
      await store.setIdmap('sbx-a', full.idmap);
      await store.setLost('sbx-a', full.lost);
      await store.setRecovered('sbx-a', full.recovered);
      await store.setOrigin('sbx-a', full.origin);
      await store.setNetwork('sbx-a', full.network);
      const set = { ...base, resumeFrom: full.resumeFrom, policy: full.policy, idmap: full.idmap, lost: full.lost, recovered: full.recovered, origin: full.origin, network: full.network };
      assert.deepEqual(await store.getSandbox('sbx-a'), set);
      assert.deepEqual(await store.getSandbox('sbx-b'), other, 'only the named sandbox changes');
      await store.setResumeFrom('sbx-a', undefined);
      await store.setPolicy('sbx-a', undefined);
      await store.setIdmap('sbx-a', undefined);
      await store.setLost('sbx-a', undefined);
      await store.setRecovered('sbx-a', undefined);
      await store.setOrigin('sbx-a', undefined);
      await store.setNetwork('sbx-a', undefined);
      assert.deepEqual(await store.getSandbox('sbx-a'), base);
    });

    withStore('setIdmap keeps a host id of 0', async (store) => {
      await store.insertSandbox(sandbox('sbx-a'));
      await store.setIdmap('sbx-a', 0);
      assert.equal((await store.getSandbox('sbx-a'))?.idmap, 0);
    });

    withStore('setInstance points at another instance, with or without a new origin; its own id clears it', async (store) => {
      const origin = { at: '2026-01-01T00:00:05.000Z', snapshot: 'snap-1' };
      await store.insertSandbox(sandbox('sbx-a', { origin }));
      await store.setInstance('sbx-a', 'sbx-a-r1');
      assert.deepEqual(await store.getSandbox('sbx-a'), sandbox('sbx-a', { instance: 'sbx-a-r1', origin }), 'without an origin the old one stays');
      const cold = { at: '2026-01-01T00:00:06.000Z' };
      await store.setInstance('sbx-a', 'sbx-a-r2', cold);
      assert.deepEqual(await store.getSandbox('sbx-a'), sandbox('sbx-a', { instance: 'sbx-a-r2', origin: cold }));
      await store.setInstance('sbx-a', 'sbx-a');
      assert.deepEqual(await store.getSandbox('sbx-a'), sandbox('sbx-a', { origin: cold }), 'the sandbox id as instance reads back as none');
    });

    withStore('setters and deletes on an unknown sandbox do nothing and do not fail', async (store) => {
      await store.insertSandbox(sandbox('sbx-a'));
      const full = fullSandbox('sbx-nope');
      await store.setResumeFrom('sbx-nope', 'snap-x');
      await store.setInstance('sbx-nope', 'sbx-nope-r1', full.origin);
      await store.setOrigin('sbx-nope', full.origin);
      await store.setIdmap('sbx-nope', 1);
      await store.setLost('sbx-nope', full.lost);
      await store.setRecovered('sbx-nope', full.recovered);
      await store.setPolicy('sbx-nope', full.policy);
      await store.deleteSandbox('sbx-nope');
      assert.equal(await store.getSandbox('sbx-nope'), undefined);
      assert.deepEqual(await store.listSandboxes(), [sandbox('sbx-a')]);
    });

    withStore('snapshots: insert, get with and without optional fields, list oldest first per sandbox', async (store) => {
      const plain = snapshot('snap-b', 'sbx-a', { createdAt: '2026-01-01T00:00:02.000Z' });
      const named = snapshot('snap-a', 'sbx-a', { createdAt: '2026-01-01T00:00:01.000Z', name: 'before', parentId: 'snap-0', pinned: true, reason: 'manual', frozenMs: 12.5 });
      const same = snapshot('snap-0', 'sbx-a', { createdAt: '2026-01-01T00:00:02.000Z' });
      const elsewhere = snapshot('snap-c', 'sbx-b', { createdAt: '2026-01-01T00:00:00.000Z' });
      for (const s of [plain, named, same, elsewhere]) await store.insertSnapshot(s);
      assert.deepEqual(await store.getSnapshot('snap-a'), named);
      assert.deepEqual(await store.getSnapshot('snap-b'), plain);
      assert.deepEqual(await store.listSnapshots('sbx-a'), [named, plain, same], 'equal times keep insertion order');
      assert.deepEqual(await store.listSnapshots('sbx-b'), [elsewhere]);
      assert.deepEqual(await store.listSnapshots('sbx-nope'), []);
      assert.deepEqual(await store.lastSnapshot('sbx-a'), same, 'the last listed, equal times by insertion');
      assert.deepEqual(await store.lastSnapshot('sbx-b'), elsewhere);
      assert.equal(await store.lastSnapshot('sbx-nope'), undefined);
      assert.equal(await store.getSnapshot('snap-nope'), undefined);
    });

    withStore('snapshotTotals counts every snapshot and sums their sizes; setSnapshotSize and deleteSnapshot change it', async (store) => {
      assert.deepEqual(await store.snapshotTotals(), { count: 0, bytes: 0 });
      await store.insertSnapshot(snapshot('snap-a', 'sbx-a', { sizeBytes: 1000 }));
      await store.insertSnapshot(snapshot('snap-b', 'sbx-b', { sizeBytes: 234 }));
      assert.deepEqual(await store.snapshotTotals(), { count: 2, bytes: 1234 });
      await store.setSnapshotSize('snap-b', 5_000_000_000);
      assert.equal((await store.getSnapshot('snap-b'))?.sizeBytes, 5_000_000_000);
      assert.deepEqual(await store.snapshotTotals(), { count: 2, bytes: 5_000_001_000 });
      await store.deleteSnapshot('snap-a');
      assert.equal(await store.getSnapshot('snap-a'), undefined);
      assert.deepEqual(await store.snapshotTotals(), { count: 1, bytes: 5_000_000_000 });
      assert.deepEqual(ids(await store.listSnapshots('sbx-a')), []);
    });

    withStore('setPinned pins and unpins one snapshot', async (store) => {
      await store.insertSnapshot(snapshot('snap-a', 'sbx-a'));
      await store.insertSnapshot(snapshot('snap-b', 'sbx-a'));
      await store.setPinned('snap-a', true);
      assert.equal((await store.getSnapshot('snap-a'))?.pinned, true);
      assert.equal((await store.getSnapshot('snap-b'))?.pinned, false);
      await store.setPinned('snap-a', false);
      assert.equal((await store.getSnapshot('snap-a'))?.pinned, false);
    });

    withStore('snapshot writes on an unknown id do nothing and do not fail', async (store) => {
      await store.insertSnapshot(snapshot('snap-a', 'sbx-a', { sizeBytes: 7 }));
      await store.setPinned('snap-nope', true);
      await store.setSnapshotSize('snap-nope', 99);
      await store.deleteSnapshot('snap-nope');
      assert.equal(await store.getSnapshot('snap-nope'), undefined);
      assert.deepEqual(await store.snapshotTotals(), { count: 1, bytes: 7 });
    });

    withStore('deleting a sandbox leaves its snapshot records (the manager removes them with their files)', async (store) => {
      await store.insertSandbox(sandbox('sbx-a'));
      await store.insertSnapshot(snapshot('snap-a', 'sbx-a'));
      await store.deleteSandbox('sbx-a');
      assert.deepEqual(ids(await store.listSnapshots('sbx-a')), ['snap-a']);
    });

    withStore('listForks gives the sandboxes forked from a snapshot, by creation time then id', async (store) => {
      await store.insertSandbox(sandbox('sbx-c', { forkedFrom: 'snap-a', createdAt: '2026-01-01T00:00:01.000Z' }));
      await store.insertSandbox(sandbox('sbx-b', { forkedFrom: 'snap-a', createdAt: '2026-01-01T00:00:01.000Z' }));
      await store.insertSandbox(sandbox('sbx-a', { forkedFrom: 'snap-a', createdAt: '2026-01-01T00:00:02.000Z' }));
      await store.insertSandbox(sandbox('sbx-d', { forkedFrom: 'snap-b' }));
      await store.insertSandbox(sandbox('sbx-e'));
      assert.deepEqual(ids(await store.listForks('snap-a')), ['sbx-b', 'sbx-c', 'sbx-a']);
      assert.deepEqual(await store.listForks('snap-b'), [sandbox('sbx-d', { forkedFrom: 'snap-b' })]);
      assert.deepEqual(await store.listForks('snap-nope'), []);
    });

    withStore('templates: upsert inserts and replaces every field, get, list by name, delete', async (store) => {
      const warm: TemplateRecord = { id: 'tpl_warm1', name: 'warm', createdAt: '2026-01-01T00:00:01.000Z', volume: 'templates/warm', images: 'template-images/warm', from: 'base', idmap: 0 };
      const base: TemplateRecord = { id: 'base', name: 'base', createdAt: '2026-01-01T00:00:00.000Z', volume: 'templates/base' };
      await store.upsertTemplate(warm);
      await store.upsertTemplate(base);
      assert.deepEqual(await store.getTemplate('warm'), warm);
      assert.deepEqual(await store.getTemplate('base'), base);
      assert.deepEqual(await store.listTemplates(), [base, warm]);
      const rebuilt: TemplateRecord = { id: 'tpl_warm1', name: 'warm', createdAt: '2026-01-01T00:00:09.000Z', volume: 'templates/warm2' };
      await store.upsertTemplate(rebuilt);
      assert.deepEqual(await store.getTemplate('warm'), rebuilt, 'fields absent from the new record are cleared');
      await store.deleteTemplate('warm');
      assert.equal(await store.getTemplate('warm'), undefined);
      await store.deleteTemplate('nope');
      assert.equal(await store.getTemplate('nope'), undefined);
      assert.deepEqual(await store.listTemplates(), [base]);
      const again: TemplateRecord = { id: 'tpl_warm2', name: 'warm', createdAt: '2026-01-01T00:00:10.000Z', volume: 'templates/warm' };
      await store.upsertTemplate(again);
      assert.equal((await store.getTemplate('warm'))?.id, 'tpl_warm2', 'a template made again under a deleted name has its own id');
    });

    withStore("sandboxes keep their template's id, whatever is later published under the name", async (store) => {
      await store.upsertTemplate({ id: 'tpl_a', name: 'py', createdAt: '2026-01-01T00:00:00.000Z', volume: 'templates/py' });
      await store.insertSandbox(sandbox('sbx-a', { template: 'py', templateId: 'tpl_a' }));
      await store.deleteTemplate('py');
      await store.upsertTemplate({ id: 'tpl_b', name: 'py', createdAt: '2026-01-01T00:00:01.000Z', volume: 'templates/py' });
      assert.deepEqual(await store.getSandbox('sbx-a'), sandbox('sbx-a', { template: 'py', templateId: 'tpl_a' }));
    });

    withStore("an image template's defaults, and a sandbox's from it, read back as written", async (store) => {
      const image = { ref: 'docker.io/library/alpine:3', env: { PATH: '/usr/bin:/bin', A: 'b c' }, cwd: '/app', user: 'nobody', shell: ['/bin/sh', '-c'] };
      const t: TemplateRecord = { id: 'tpl_img', name: 'alp', createdAt: '2026-01-01T00:00:00.000Z', volume: 'templates/alp', from: 'docker.io/library/alpine:3', image };
      await store.upsertTemplate(t);
      assert.deepEqual(await store.getTemplate('alp'), t);
      const s = sandbox('sbx-img', { template: 'alp', templateId: 'tpl_img', defaults: { cwd: '/app', shell: ['/bin/sh', '-c'] } });
      await store.insertSandbox(s);
      assert.deepEqual(await store.getSandbox('sbx-img'), s);
    });

    test('records survive closing the store and opening the same database again', async () => {
      const first = await open();
      const full = fullSandbox('sbx-full');
      const snap = snapshot('snap-a', 'sbx-full', { name: 'kept', pinned: true, sizeBytes: 42 });
      const tpl: TemplateRecord = { id: 'tpl_warm1', name: 'warm', createdAt: '2026-01-01T00:00:01.000Z', volume: 'templates/warm', images: 'template-images/warm', from: 'base', idmap: 65536 };
      try {
        await first.insertSandbox(sandbox('sbx-a'));
        await first.insertSandbox(full);
        assert.equal(await first.transition('sbx-a', 'creating', 'running'), true);
        await first.setInstance('sbx-a', 'sbx-a-r1', { at: '2026-01-01T00:00:05.000Z' });
        await first.insertSnapshot(snap);
        await first.upsertTemplate(tpl);
      } finally {
        await first.close();
      }
      const again = await open({ reopen: true });
      try {
        assert.deepEqual(await again.listSandboxes(), [sandbox('sbx-a', { state: 'running', instance: 'sbx-a-r1', origin: { at: '2026-01-01T00:00:05.000Z' } }), full]);
        assert.deepEqual(await again.listSnapshots('sbx-full'), [snap]);
        assert.deepEqual(await again.snapshotTotals(), { count: 1, bytes: 42 });
        assert.deepEqual(await again.listTemplates(), [tpl]);
      } finally {
        await again.close();
      }
    });
  });
}

function ids(recs: { id: string }[]): string[] {
  return recs.map((r) => r.id);
}

function sandbox(id: string, over: Partial<SandboxRecord> = {}): SandboxRecord {
  return {
    id,
    template: 'base',
    templateId: 'base',
    state: 'creating',
    limits: { memoryMb: 512, cpus: 1, pids: 1024 },
    env: {},
    metadata: {},
    createdAt: '2026-01-01T00:00:00.000Z',
    ...over,
  };
}

/** A record with every optional field set, nested ones with all of theirs. */
function fullSandbox(id: string): SandboxRecord {
  return sandbox(id, {
    template: 'warm',
    templateId: 'tpl_warm1',
    state: 'failed',
    limits: { memoryMb: 2048, cpus: 1.5, pids: 64, diskMb: 4096 },
    env: { PATH: '/usr/bin', EMPTY: '', QUOTE: 'a "b" \\ c\n' },
    metadata: { owner: 'agent-7', 'ünïcode': '✓' },
    createdAt: '2026-01-01T00:00:01.000Z',
    error: 'its processes were lost',
    forkedFrom: 'snap-parent',
    resumeFrom: 'snap-resume',
    policy: { snapshotIntervalSeconds: 30, idleTimeoutSeconds: 600, timeoutSeconds: 3600, onTimeout: 'pause', expiresAt: '2026-01-01T01:00:01.000Z' },
    instance: `${id}-r3`,
    lost: { at: '2026-01-01T00:10:00.000Z', reason: 'host rebooted' },
    recovered: { at: '2026-01-01T00:09:00.000Z', reason: 'init killed', fromSnapshot: 'snap-resume', lostSeconds: 12.5 },
    origin: { at: '2026-01-01T00:09:00.000Z', snapshot: 'snap-resume' },
    idmap: 231072,
    network: { mode: 'egress', allowOut: ['203.0.113.7'], denyOut: ['0.0.0.0/0'] },
    base: 'template-parents/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/base',
  });
}

function snapshot(id: string, sandboxId: string, over: Partial<SnapshotRecord> = {}): SnapshotRecord {
  return { id, sandboxId, createdAt: '2026-01-01T00:00:00.000Z', frozenMs: 3, sizeBytes: 0, pinned: false, reason: 'policy', ...over };
}
