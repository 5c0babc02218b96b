import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectTimeoutMs, envelope, FLAG_END_STREAM, FLAG_MESSAGE, keepaliveMs, parseEnvelopes, streamRequestMessage } from './connect-framing.js';

test('an envelope is a flag byte, a big-endian length and the JSON payload (the reference example)', () => {
  const e = envelope(FLAG_MESSAGE, { process: { pid: 1234 } });
  assert.equal(e.toString('hex'), '0000000018' + Buffer.from('{"process":{"pid":1234}}').toString('hex'));
  const end = envelope(FLAG_END_STREAM, {});
  assert.deepEqual([...end], [2, 0, 0, 0, 2, 0x7b, 0x7d]);
});

test('request bodies split into envelopes; the first message is the request', () => {
  const body = Buffer.concat([envelope(FLAG_MESSAGE, { path: '/x' }), envelope(FLAG_MESSAGE, { keepalive: {} })]);
  const envs = parseEnvelopes(body);
  assert.equal(envs.ok && envs.value.length, 2);
  assert.deepEqual(streamRequestMessage(body), { ok: true, value: { path: '/x' } });
  assert.deepEqual(streamRequestMessage(Buffer.alloc(0)), { ok: true, value: {} });
  assert.deepEqual(parseEnvelopes(body.subarray(0, body.length - 1)), { ok: false, error: 'truncated envelope' });
  assert.deepEqual(streamRequestMessage(Buffer.from([1, 0, 0, 0, 2, 0x7b, 0x7d])), { ok: false, error: 'compressed envelopes are not supported' });
});

test('Connect-Timeout-Ms and Keepalive-Ping-Interval', () => {
  assert.equal(connectTimeoutMs('60000'), 60000);
  assert.equal(connectTimeoutMs(undefined), undefined);
  assert.equal(connectTimeoutMs('0'), undefined);
  assert.equal(connectTimeoutMs('12345678901'), undefined);
  assert.equal(connectTimeoutMs('-5'), undefined);
  assert.equal(keepaliveMs('50'), 50_000);
  assert.equal(keepaliveMs(undefined), 90_000);
  assert.equal(keepaliveMs('soon'), 90_000);
});
