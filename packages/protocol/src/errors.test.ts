import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError, fromErrorBody, toForkdError } from './errors.js';

test('a ForkdError from another copy of this module is a ForkdError here (the CLI bundle and the server in one process)', async () => {
  const other = (await import(`./errors.js?copy=${process.pid}`)) as typeof import('./errors.js');
  assert.notEqual(other.ForkdError, ForkdError);
  const theirs = new other.ForkdError('NOT_FOUND', 'no such sandbox');
  assert.ok(theirs instanceof ForkdError);
  assert.equal(toForkdError(theirs), theirs, 'kept, not wrapped as INTERNAL');
  assert.ok(new ForkdError('CONFLICT', 'x') instanceof other.ForkdError);
});

test('only a ForkdError is one: look-alikes, plain errors and non-objects are not', () => {
  const lookAlike = Object.assign(new Error('x'), { name: 'ForkdError', code: 'NOT_FOUND' });
  for (const v of [lookAlike, new Error('x'), { code: 'NOT_FOUND' }, null, undefined, 'ForkdError', 3]) assert.equal(v instanceof ForkdError, false, String(v));
  assert.equal(toForkdError(lookAlike).code, 'INTERNAL');
  assert.ok(fromErrorBody({ error: { code: 'TIMEOUT', message: 'm' } }, 504) instanceof ForkdError);
});

test('the mark is invisible: not in JSON, keys or the wire body', () => {
  const e = new ForkdError('INVALID_ARGUMENT', 'bad', { field: 'x' });
  assert.deepEqual(JSON.parse(JSON.stringify(e)), { error: { code: 'INVALID_ARGUMENT', message: 'bad', details: { field: 'x' } } });
  assert.deepEqual(Object.keys(e).sort(), ['code', 'details', 'name', 'requestId']);
});
