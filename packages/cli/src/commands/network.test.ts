import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError } from '../usage-error.js';
import { parseCreateArgs } from './create.js';
import { formatRules, parseNetworkArgs } from './network.js';

test('create --network egress with --allow-out and --deny-out (repeatable)', () => {
  assert.deepEqual(parseCreateArgs(['--network', 'egress', '--allow-out', '203.0.113.2', '--deny-out', '0.0.0.0/0', '--deny-out', '198.51.100.0/24']).request, {
    network: { mode: 'egress', allowOut: ['203.0.113.2'], denyOut: ['0.0.0.0/0', '198.51.100.0/24'] },
  });
  assert.deepEqual(parseCreateArgs(['--network', 'none']).request, { network: { mode: 'none', allowOut: [], denyOut: [] } });
  assert.throws(() => parseCreateArgs(['--network', 'bridge']), UsageError);
  assert.throws(() => parseCreateArgs(['--allow-out', '1.2.3.4']), UsageError);
});

test('network ID shows; any option replaces the rules; the mode stays unless given', () => {
  assert.deepEqual(parseNetworkArgs(['sbx-a']), { id: 'sbx-a', change: undefined, json: false });
  assert.deepEqual(parseNetworkArgs(['sbx-a', '--deny-out', '10.1.0.0/16', '--json']), { id: 'sbx-a', change: { mode: undefined, allowOut: [], denyOut: ['10.1.0.0/16'] }, json: true });
  assert.deepEqual(parseNetworkArgs(['sbx-a', '--mode', 'none']), { id: 'sbx-a', change: { mode: 'none', allowOut: [], denyOut: [] }, json: false });
  assert.throws(() => parseNetworkArgs(['--mode', 'egress']), UsageError);
  assert.equal(formatRules({ mode: 'egress', allowOut: ['1.2.3.4'], denyOut: ['0.0.0.0/0'] }), 'mode egress\nallow-out 1.2.3.4\ndeny-out 0.0.0.0/0\n');
});
