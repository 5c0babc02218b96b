import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ForkTree, SnapshotInfo } from '@forkd/sdk';
import { sandboxInfo } from '@forkd/sdk/testing';
import { UsageError } from '../usage-error.js';
import { parseForkArgs, parseForkSource } from './fork.js';
import { parseIdArg, parseMemoryArgs, parseRewindArgs } from './lifecycle.js';
import { parseSnapshotArgs, parseSnapshotRmArgs, resolveSnapshotRef } from './snapshot.js';
import { parseTimelineArgs, timelineTable } from './timeline.js';
import { parseTreeArgs, renderTree } from './tree.js';

const SBX = 'sbx-aaaaaaaaaaaa';
const SNAP = 'snap-bbbbbbbbbbbb';

test('snapshot ID [--name N] [--json]', () => {
  assert.deepEqual(parseSnapshotArgs([SBX]), { id: SBX, name: undefined, json: false });
  assert.deepEqual(parseSnapshotArgs([SBX, '--name', 'before-install.v2', '--json']), { id: SBX, name: 'before-install.v2', json: true });
  assert.deepEqual(parseSnapshotArgs(['--name=x', SBX]).name, 'x');
  assert.throws(() => parseSnapshotArgs([]), /missing ID/);
  assert.throws(() => parseSnapshotArgs([SBX, 'extra']), UsageError);
  for (const bad of ['', 'has space', 'a/b', 'x'.repeat(65)]) assert.throws(() => parseSnapshotArgs([SBX, '--name', bad]), /invalid --name/, bad);
  assert.throws(() => parseSnapshotArgs(['rm', SNAP]), /forkd snapshot-rm/);
});

test('snapshot-rm SNAP...: snapshot ids only', () => {
  assert.deepEqual(parseSnapshotRmArgs([SNAP, 'snap-cccccccccccc']), { ids: [SNAP, 'snap-cccccccccccc'] });
  assert.throws(() => parseSnapshotRmArgs([]), /missing SNAP/);
  assert.throws(() => parseSnapshotRmArgs([SBX]), /expected a snapshot id/);
});

test('timeline ID [--json]', () => {
  assert.deepEqual(parseTimelineArgs([SBX, '--json']), { id: SBX, json: true });
  assert.deepEqual(parseTimelineArgs([SBX]), { id: SBX, json: false });
  assert.throws(() => parseTimelineArgs([]), UsageError);
  assert.throws(() => parseTimelineArgs([SBX, '--name', 'x']), /unknown option/);
});

test('fork ID|SNAPSHOT [--count N] [--json]: the prefix picks the source', () => {
  assert.deepEqual(parseForkArgs([SBX]), { source: { kind: 'sandbox', id: SBX }, count: undefined, json: false });
  assert.deepEqual(parseForkArgs([SNAP, '--count', '3', '--json']), { source: { kind: 'snapshot', id: SNAP }, count: 3, json: true });
  assert.equal(parseForkArgs(['-n', '64', SBX]).count, 64);
  assert.deepEqual(parseForkArgs([SNAP, '-e', 'A=1', '--env', 'B=2', '--metadata', 'who=fork']), { source: { kind: 'snapshot', id: SNAP }, count: undefined, env: { A: '1', B: '2' }, metadata: { who: 'fork' }, json: false });
  assert.deepEqual(parseForkSource(SNAP), { kind: 'snapshot', id: SNAP });
  for (const bad of ['abc', 'snapshot-1', 'sbx', '']) assert.throws(() => parseForkSource(bad), /expected a sandbox id \(sbx-\.\.\.\) or a snapshot id/, bad);
  for (const bad of ['0', '65', 'two', '-1']) assert.throws(() => parseForkArgs([SBX, '--count', bad]), UsageError, bad);
  assert.throws(() => parseForkArgs([]), /missing ID\|SNAPSHOT/);
  assert.throws(() => parseForkArgs([SBX, SNAP]), /unexpected argument/);
});

test('pause and resume [--no-memory] ID [--json]', () => {
  assert.deepEqual(parseMemoryArgs([SBX]), { id: SBX, memory: true, json: false });
  assert.deepEqual(parseMemoryArgs(['--no-memory', SBX, '--json']), { id: SBX, memory: false, json: true });
  assert.throws(() => parseMemoryArgs(['--no-memory']), /missing ID/);
});

test('rewind ID SNAPSHOT, pause ID, resume ID', () => {
  assert.deepEqual(parseRewindArgs([SBX, SNAP]), { id: SBX, snapshot: { id: SNAP }, json: false });
  assert.deepEqual(parseRewindArgs([SBX, 'before-upgrade']), { id: SBX, snapshot: { name: 'before-upgrade' }, json: false });
  assert.throws(() => parseRewindArgs([SBX]), /missing SNAPSHOT/);
  assert.throws(() => parseRewindArgs([SNAP, SBX]), /expected a snapshot id \(snap-\.\.\.\) or name/, 'swapped: a sandbox id is no name');
  assert.throws(() => parseRewindArgs([SBX, 'a b']), /expected a snapshot id/);
  const tl = [{ id: 'snap-aaaaaaaaaaa1', name: 'x' }, { id: 'snap-aaaaaaaaaaa2' }, { id: 'snap-aaaaaaaaaaa3', name: 'x' }];
  assert.equal(resolveSnapshotRef({ name: 'x' }, tl, SBX), 'snap-aaaaaaaaaaa3', 'the newest of the name');
  assert.equal(resolveSnapshotRef({ id: SNAP }, [], SBX), SNAP);
  assert.throws(() => resolveSnapshotRef({ name: 'y' }, tl, SBX), (e: { code?: string; message?: string }) => e.code === 'NOT_FOUND' && /no snapshot named "y"/.test(e.message ?? ''));
  assert.deepEqual(parseIdArg([SBX]), { id: SBX, json: false });
  assert.deepEqual(parseIdArg([SBX, '--json']), { id: SBX, json: true });
  assert.throws(() => parseIdArg([]), /missing ID/);
  assert.throws(() => parseIdArg([SBX, SBX]), /unexpected argument/);
  assert.throws(() => parseIdArg([SBX, '--yaml']), /unknown option/);
});

test('tree ID [--json]', () => {
  assert.deepEqual(parseTreeArgs([SBX, '--json']), { id: SBX, json: true });
  assert.throws(() => parseTreeArgs([]), UsageError);
});

const snap = (id: string, extra: Partial<SnapshotInfo> = {}): SnapshotInfo => ({
  id,
  sandboxId: SBX,
  createdAt: '2025-01-01T00:00:00.000Z',
  frozenMs: 41.26,
  sizeBytes: 3 * 1024 * 1024,
  pinned: false,
  reason: 'manual',
  ...extra,
});

test('timeline table: the issue columns, oldest first as given', () => {
  const now = Date.parse('2025-01-01T00:05:00.000Z');
  const out = timelineTable([snap(SNAP, { name: 'clean' }), snap('snap-cccccccccccc', { pinned: true, reason: 'pause', frozenMs: 7 })], now);
  const lines = out.trimEnd().split('\n');
  assert.match(lines[0]!, /^ID +NAME +CREATED +SIZE +FREEZE ms +PINNED +REASON$/);
  assert.match(lines[1]!, /^snap-bbbbbbbbbbbb +clean +5m ago +3\.0 MiB +41\.3 +no +manual$/);
  assert.match(lines[2]!, /^snap-cccccccccccc +- +5m ago +3\.0 MiB +7 +yes +pause$/);
});


test('tree rendering: forks indented under the sandbox whose snapshot they came from', () => {
  const tree: ForkTree = {
    sandbox: sandboxInfo(SBX, { state: 'paused' }),
    children: [
      { sandbox: sandboxInfo('sbx-child0000001', { forkedFrom: SNAP }), children: [{ sandbox: sandboxInfo('sbx-grandchild01', { forkedFrom: 'snap-dddddddddddd' }), children: [] }] },
      { sandbox: sandboxInfo('sbx-child0000002', { forkedFrom: SNAP, state: 'failed', error: 'restore failed' }), children: [] },
    ],
  };
  assert.equal(
    renderTree(tree),
    [
      'sbx-aaaaaaaaaaaa  paused',
      `├── sbx-child0000001  running  from ${SNAP}`,
      '│   └── sbx-grandchild01  running  from snap-dddddddddddd',
      `└── sbx-child0000002  failed (restore failed)  from ${SNAP}`,
      '',
    ].join('\n'),
  );
  assert.equal(renderTree({ sandbox: sandboxInfo(SBX), children: [] }), 'sbx-aaaaaaaaaaaa  running\n');
});
