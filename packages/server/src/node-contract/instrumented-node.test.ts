import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import type { FinishedSpan } from '../shared/otlp-exporter.js';
import { SpanTracer } from '../shared/tracer.js';
import { instrumentNode, type LifecycleOperation } from './instrumented-node.js';
import type { NodeService } from './node-service.js';

/** A node whose lifecycle calls answer at once (a class: private state, as LocalNode has). */
class StubNode {
  #deleted: string[] = [];
  async delete(id: string): Promise<void> {
    if (id === 'missing') throw new ForkdError('NOT_FOUND', 'no such sandbox');
    this.#deleted.push(id);
  }
  async fork(source: string, count: number): Promise<string[]> {
    return Array.from({ length: count }, (_, i) => `${source}-${i}`);
  }
  async get(id: string): Promise<string> {
    return `got ${id} after ${this.#deleted.length} deletes`;
  }
}

test('lifecycle calls are timed by operation and result and traced; other calls pass through untouched', async () => {
  const seen: Array<[LifecycleOperation, string]> = [];
  const spans: FinishedSpan[] = [];
  const svc = instrumentNode(new StubNode() as unknown as NodeService, { lifecycle: (op, result, s) => (assert.ok(s >= 0), seen.push([op, result])) }, new SpanTracer((s) => spans.push(s)));
  await svc.delete('sb-1');
  await assert.rejects(svc.delete('missing'), { code: 'NOT_FOUND' });
  assert.deepEqual(await svc.fork('sb-1', 2), ['sb-1-0', 'sb-1-1']);
  assert.equal(await svc.get('sb-1'), 'got sb-1 after 1 deletes');
  assert.deepEqual(seen, [
    ['delete', 'ok'],
    ['delete', 'NOT_FOUND'],
    ['fork', 'ok'],
  ]);
  assert.deepEqual(
    spans.map((s) => [s.name, s.error, s.attributes]),
    [
      ['forkd.delete', undefined, { 'forkd.sandbox_id': 'sb-1' }],
      ['forkd.delete', 'NOT_FOUND', { 'forkd.sandbox_id': 'missing' }],
      ['forkd.fork', undefined, { 'forkd.source': 'sb-1', 'forkd.count': 2 }],
    ],
  );
});
