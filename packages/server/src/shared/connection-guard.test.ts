import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { guardListener, handlerFaults, recordFault } from './connection-guard.js';
import { CorruptStateError, installLastResortHandlers, lastResortPolicy } from './last-resort.js';
import { silentLogger } from './logger.js';

test('a throwing listener closes its connection and is counted, nothing escapes', () => {
  const before = handlerFaults.get('dns');
  const socket = new EventEmitter();
  let closed: unknown;
  socket.on('data', guardListener('dns', (err) => (closed = err), () => { throw new RangeError('out of range'); }));
  assert.doesNotThrow(() => socket.emit('data', Buffer.from([0x16])));
  assert.ok(closed instanceof RangeError);
  assert.equal(handlerFaults.get('dns'), before + 1);
});

test('a rejected async listener is caught the same way, and a throwing close is contained', async () => {
  const before = handlerFaults.get('envd');
  const h = guardListener('envd', () => { throw new Error('close failed'); }, async () => { throw new Error('bad frame'); });
  h();
  await new Promise((r) => setImmediate(r));
  assert.equal(handlerFaults.get('envd'), before + 2);
});

test('a listener that works is left alone', () => {
  let got = 0;
  const h = guardListener('guest', () => assert.fail('closed'), (n: number) => { got = n; });
  h(7);
  assert.equal(got, 7);
});

test('recordFault survives a value that cannot be printed', () => {
  const hostile = { toString() { throw new Error('no'); } };
  assert.doesNotThrow(() => recordFault('api', hostile));
});

test('last resort: an uncaught error is counted and the process keeps serving; corrupt state exits', () => {
  const exits: number[] = [];
  const policy = lastResortPolicy(silentLogger, (c) => exits.push(c));
  const before = handlerFaults.get('uncaught');
  policy(new TypeError('escaped'), 'uncaughtException');
  policy({ toString() { throw new Error('no'); } }, 'unhandledRejection');
  assert.equal(handlerFaults.get('uncaught'), before + 2);
  assert.deepEqual(exits, []);
  policy(new CorruptStateError('store'), 'uncaughtException');
  assert.deepEqual(exits, [70]);
  policy(Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT' }), 'unhandledRejection');
  assert.deepEqual(exits, [70, 70]);
  policy(Object.assign(new Error('busy'), { code: 'SQLITE_BUSY' }), 'unhandledRejection');
  assert.deepEqual(exits, [70, 70], 'a busy database is no corruption');
});

test('installed, the handlers are on the process and come off again', () => {
  const n = process.listenerCount('uncaughtException');
  const uninstall = installLastResortHandlers(silentLogger, () => {});
  assert.equal(process.listenerCount('uncaughtException'), n + 1);
  uninstall();
  assert.equal(process.listenerCount('uncaughtException'), n);
});
