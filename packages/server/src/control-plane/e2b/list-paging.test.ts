import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SandboxInfo } from '@forkd/protocol';
import { decodeMetadataFilter, pageSandboxes, parseListQuery } from './list-paging.js';
import { attributesMetadata, listedBody, sandboxBody } from './sandbox-mapping.js';

function sbx(id: string, at: number, state: SandboxInfo['state'] = 'running', metadata: Record<string, string> = {}): SandboxInfo {
  return { id, template: 'base', state, limits: { memoryMb: 512, cpus: 1, pids: 1024, diskMb: 100 }, env: {}, metadata, createdAt: new Date(at).toISOString(), hostname: 'sandbox' };
}

test("metadata arrives encoded three times; the router's decoding leaves two", () => {
  // {user: 'a b', k: 'v'} → metadata=user%3Da%252520b%26k%3Dv; after one decoding: user=a%2520b&k=v
  assert.deepEqual(decodeMetadataFilter('user=a%2520b&k=v'), { user: 'a b', k: 'v' });
  assert.deepEqual(decodeMetadataFilter(undefined), {});
});

test('filters, newest first by default, and X-Next-Token absent on the last page even when it is full', () => {
  const all = [sbx('sbx-a', 1000, 'running', { k: 'v' }), sbx('sbx-b', 2000, 'paused', { k: 'v' }), sbx('sbx-c', 3000, 'running', { k: 'w' }), sbx('sbx-d', 4000, 'stopping', { k: 'v' })];
  const q = (s: string) => parseListQuery(new URLSearchParams(s));
  assert.deepEqual(pageSandboxes(all, q('metadata=k%3Dv')).items.map((s) => s.id), ['sbx-b', 'sbx-a']);
  assert.deepEqual(pageSandboxes(all, q('order=asc')).items.map((s) => s.id), ['sbx-a', 'sbx-b', 'sbx-c']);
  assert.deepEqual(pageSandboxes(all, q('state=paused')).items.map((s) => s.id), ['sbx-b']);
  assert.deepEqual(pageSandboxes(all, q(`startedAfter=${new Date(2000).toISOString()}`)).items.map((s) => s.id), ['sbx-c', 'sbx-b']);
  assert.deepEqual(pageSandboxes(all, q('template=nope')).items, []);
  const p1 = pageSandboxes(all, q('limit=2'));
  assert.deepEqual(p1.items.map((s) => s.id), ['sbx-c', 'sbx-b']);
  assert.ok(p1.nextToken);
  const p2 = pageSandboxes(all, q(`limit=2&nextToken=${p1.nextToken}`));
  assert.deepEqual(p2.items.map((s) => s.id), ['sbx-a']);
  assert.equal(p2.nextToken, undefined);
  const full = pageSandboxes(all, q('limit=3'));
  assert.equal(full.items.length, 3);
  assert.equal(full.nextToken, undefined);
  assert.equal(full.totalRunning, 2);
  assert.throws(() => q('limit=0'));
  assert.throws(() => q('state=dead'));
  assert.throws(() => pageSandboxes(all, q('nextToken=garbage')));
});

test("E2B's shapes hide forkd's reserved metadata key", () => {
  const s = sbx('sbx-a', 1000, 'running', { user: 'x', ...attributesMetadata({ autoResume: true }) });
  assert.deepEqual(listedBody(s).metadata, { user: 'x' });
  const b = sandboxBody(s, { envdAccessToken: 'tok', trafficAccessToken: 'traffic', domain: null });
  assert.equal(b.sandboxID, 'sbx-a');
  assert.equal(b.envdAccessToken, 'tok');
  assert.equal(b.clientID, '6532622b');
  assert.match(String(b.envdVersion), /^\d+\.\d+\.\d+$/);
});
