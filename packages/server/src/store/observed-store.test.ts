import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ObservedStore } from './observed-store.js';
import { SqliteStore } from './sqlite-store.js';
import { storeConformance } from './store-conformance.js';
import type { SandboxRecord } from './store.js';

let dir: string;
let files = 0;
let last = '';

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'forkd-observed-store-'));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

storeConformance('ObservedStore over SqliteStore', async (opts) => {
  if (!opts?.reopen) last = join(dir, `store-${files++}.db`);
  const s = new ObservedStore(new SqliteStore(last));
  await s.summaries();
  return s;
});

function rec(id: string, over: Partial<SandboxRecord> = {}): SandboxRecord {
  return { id, template: 'base', templateId: 'base', state: 'creating', limits: { memoryMb: 64, cpus: 1, pids: 64, diskMb: 64 }, env: {}, metadata: {}, createdAt: new Date().toISOString(), ...over };
}

test('every write about a sandbox is announced with its id, after it committed; reads are not', async () => {
  const s = new ObservedStore(new SqliteStore(join(dir, `store-${files++}.db`)));
  const seen: string[] = [];
  s.onSandboxChange((id) => seen.push(id));
  await s.insertSandbox(rec('a'));
  assert.ok(await s.transition('a', 'creating', 'running'));
  await s.setPolicy('a', { expiresAt: new Date().toISOString() });
  await s.insertSnapshot({ id: 'snap', sandboxId: 'a', createdAt: new Date().toISOString(), frozenMs: 1, sizeBytes: 1, pinned: false, reason: 'manual' });
  await s.setPinned('snap', true);
  await s.deleteSnapshot('snap');
  await s.getSandbox('a');
  await s.listSandboxes();
  await s.deleteSandbox('a');
  assert.deepEqual(seen, ['a', 'a', 'a', 'a', 'a', 'a', 'a']);
  await s.close();
});

test('summaries follow every write that changes state, limits or id range, before the write resolves', async () => {
  const file = join(dir, `store-${files++}.db`);
  const inner = new SqliteStore(file);
  await inner.insertSandbox(rec('old', { state: 'running', idmap: 65536 }));
  const s = new ObservedStore(inner);
  assert.deepEqual(await s.summaries(), [{ id: 'old', state: 'running', limits: rec('x').limits, idmap: 65536 }]);
  await s.insertSandbox(rec('new'));
  await s.setIdmap('new', 131072);
  assert.ok(await s.transition('new', 'creating', 'running'));
  assert.equal(await s.transition('new', 'creating', 'failed'), false);
  await s.deleteSandbox('old');
  assert.deepEqual(await s.summaries(), [{ id: 'new', state: 'running', limits: rec('x').limits, idmap: 131072 }]);
  const fresh = new ObservedStore(new SqliteStore(file));
  assert.deepEqual(await fresh.summaries(), await s.summaries(), 'what a fresh listing says');
  await s.close();
});
