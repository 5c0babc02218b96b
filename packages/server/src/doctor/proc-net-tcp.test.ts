import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { blocks, parseListeners } from './proc-net-tcp.js';

const HEAD = '  sl  local_address rem_address   st tx_queue rx_queue\n';

test('parseListeners: listening sockets only, addresses in host byte order', () => {
  const text = HEAD + '   0: 0100007F:1F90 00000000:0000 0A 0\n   1: 0100007F:C350 0100007F:1F90 01 0\n   2: 00000000:0BB8 00000000:0000 0A 0\n';
  assert.deepEqual(parseListeners(text), [
    { address: '127.0.0.1', port: 8080 },
    { address: '0.0.0.0', port: 3000 },
  ]);
  const v6 = HEAD + '   0: 00000000000000000000000000000000:C34F 00000000000000000000000000000000:0000 0A 0\n';
  assert.deepEqual(parseListeners(v6), [{ address: '::', port: 49999 }]);
});

test('blocks: a wildcard on either side or the same address', () => {
  assert.ok(blocks({ address: '0.0.0.0', port: 80 }, '127.0.0.1', 80));
  assert.ok(blocks({ address: '127.0.0.1', port: 80 }, '0.0.0.0', 80));
  assert.ok(blocks({ address: '127.0.0.1', port: 80 }, '127.0.0.1', 80));
  assert.ok(!blocks({ address: '10.0.0.1', port: 80 }, '127.0.0.1', 80));
  assert.ok(!blocks({ address: '0.0.0.0', port: 81 }, '127.0.0.1', 80));
});

test('parseListeners never throws and yields ports in range (fuzz)', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 400 }), fc.array(fc.tuple(fc.stringMatching(/^[0-9A-F]{8}$/), fc.integer({ min: 0, max: 65535 }), fc.constantFrom('0A', '01', 'zz')), { maxLength: 5 }), (junk, rows) => {
      const text = HEAD + rows.map(([a, p, st], i) => `${i}: ${a}:${p.toString(16).padStart(4, '0')} 00000000:0000 ${st}`).join('\n') + '\n' + junk;
      for (const l of parseListeners(text)) assert.ok(l.port >= 0 && l.port <= 65535);
      assert.ok(parseListeners(text).length >= rows.filter(([, , st]) => st === '0A').length);
    }),
  );
});
