import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseServerMessage } from './stream-messages.js';

test('the server messages decode to their types; data frames keep their stream byte', () => {
  assert.deepEqual(parseServerMessage('{"type":"started","pid":3,"pty":true}'), { type: 'started', pid: 3, pty: true });
  assert.deepEqual(parseServerMessage('{"type":"exit","exitCode":1,"signal":0}'), { type: 'exit', exitCode: 1, signal: 0, oomKilled: false });
  assert.deepEqual(parseServerMessage('{"type":"rewound"}'), { type: 'rewound' });
  const e = parseServerMessage('{"type":"error","error":{"code":"REWOUND","message":"m","requestId":"r"}}');
  assert.ok(e.type === 'error' && e.error.code === 'REWOUND' && e.error.requestId === 'r');
  const bad = parseServerMessage('{"type":"error","error":{"code":"NOPE"}}');
  assert.ok(bad.type === 'error' && bad.error.code === 'INTERNAL');
  const d = parseServerMessage(new Uint8Array([2, 104, 105]).buffer);
  assert.ok(d.type === 'data' && d.stream === 2 && new TextDecoder().decode(d.bytes) === 'hi');
  assert.deepEqual(parseServerMessage('{"type":"waiting","approvalId":"apr-1","rule":"r","expiresAt":"x"}'), { type: 'waiting', approvalId: 'apr-1', rule: 'r' });
  assert.deepEqual(parseServerMessage('{"type":"limit","limit":"cpuSeconds","rule":"r"}'), { type: 'limit', limit: 'cpuSeconds', rule: 'r' });
  for (const x of ['', 'null', '[]', '{"type":"nope"}', '{"type":"started","pid":"x"}', new ArrayBuffer(0), 5, undefined]) {
    assert.ok(['ignored', 'started'].includes(parseServerMessage(x).type));
  }
});

test('fuzz: any text or bytes decode to a message or ignored, never a throw', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.json(), fc.uint8Array().map((b) => b.buffer as ArrayBuffer), fc.anything()), (x) => {
      const m = parseServerMessage(x);
      assert.ok(['data', 'started', 'exit', 'rewound', 'dropped', 'error', 'waiting', 'limit', 'ignored'].includes(m.type));
    }),
    { numRuns: 2000 },
  );
});
