import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { NODE_ID_PATTERN } from '@forkd/protocol';
import { hostileBytes } from '../testing/fuzz-bytes.js';
import { parsePodList } from './kubernetes-nodes.js';
import { podList, nodePod } from './kubernetes-test-pods.js';

const O = { daemonSet: 'forkd-node', port: 8787, scheme: 'http' } as const;

function checkResult(json: unknown): void {
  const r = parsePodList(json, O);
  if (!r.ok) {
    assert.equal(typeof r.error, 'string');
    return;
  }
  for (const n of r.nodes) {
    assert.match(n.id, NODE_ID_PATTERN);
    const u = new URL(n.url);
    assert.equal(u.protocol, 'http:');
    assert.equal(u.port, '8787');
  }
  assert.equal(new Set(r.nodes.map((n) => n.id)).size, r.nodes.length);
}

test('fuzz parsePodList: any JSON value gives a typed result, never a throw; nodes found are valid ids and URLs', () => {
  fc.assert(fc.property(fc.jsonValue(), checkResult), { numRuns: 2000 });
  const pod = fc.record({
    node: fc.oneof(fc.constantFrom('node-a', 'node-b', 'Node_X', '', '-a'), fc.string()),
    ip: fc.oneof(fc.constantFrom('10.0.0.1', 'fd00::1', '999.1.1.1', '', 'x'), fc.string()),
    ready: fc.boolean(),
    phase: fc.constantFrom('Running', 'Pending', 'Failed'),
    owner: fc.constantFrom('forkd-node', 'other'),
  });
  fc.assert(
    fc.property(fc.array(pod, { maxLength: 20 }), (pods) => {
      checkResult(podList(pods.map((p, i) => nodePod(`p${i}`, p.node, p.ip, { ready: p.ready, phase: p.phase, owner: p.owner }))));
    }),
    { numRuns: 500 },
  );
});

test('fuzz parsePodList: hostile bytes of a real pod list, parsed as JSON when they are', () => {
  const valid = Buffer.from(JSON.stringify(podList([nodePod('forkd-node-1', 'node-a', '10.0.0.1'), nodePod('forkd-node-2', 'node-b', 'fd00::2')])));
  fc.assert(
    fc.property(hostileBytes([valid]), (bytes) => {
      let json: unknown;
      try {
        json = JSON.parse(bytes.toString('utf8'));
      } catch {
        return;
      }
      checkResult(json);
    }),
    { numRuns: 2000 },
  );
});
