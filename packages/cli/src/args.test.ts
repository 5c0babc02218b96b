import { test } from 'node:test';
import assert from 'node:assert/strict';
import { expectPositionals, parseEnvPairs, parseOptions, parsePositiveInt, parsePositiveNumber, parseProcessArg, splitAtTerminator } from './args.js';
import { UsageError } from './usage-error.js';

test('--env K=V: repeated, values may contain =, a bare K copies from the local env', () => {
  assert.deepEqual(parseEnvPairs(['A=1', 'B=x=y', 'C=', 'A=2']), { A: '2', B: 'x=y', C: '' });
  assert.deepEqual(parseEnvPairs(['HOME'], { HOME: '/root' }), { HOME: '/root' });
  assert.equal(parseEnvPairs(undefined), undefined);
  assert.throws(() => parseEnvPairs(['NOPE'], {}), UsageError);
  assert.throws(() => parseEnvPairs(['1A=x']), UsageError);
  assert.throws(() => parseEnvPairs(['=x']), UsageError);
});

test('repeated --env through parseArgs keeps every value', () => {
  const { values } = parseOptions({ args: ['-e', 'A=1', '--env', 'B=2', '--env=C=3'], options: { env: { type: 'string', short: 'e', multiple: true } } });
  assert.deepEqual(parseEnvPairs(values.env), { A: '1', B: '2', C: '3' });
});

test('unknown flags and missing values are usage errors', () => {
  assert.throws(() => parseOptions({ args: ['--nope'], options: {} }), (e: unknown) => e instanceof UsageError && /unknown option '--nope'/.test(e.message));
  assert.throws(() => parseOptions({ args: ['--tag'], options: { tag: { type: 'string' } } }), UsageError);
  assert.throws(() => parseOptions({ args: ['extra'], options: {} }), UsageError);
});

test('splitAtTerminator keeps everything after the first -- untouched', () => {
  assert.deepEqual(splitAtTerminator(['-e', 'A=1', 'ID', '--', 'ls', '--', '-la']), { before: ['-e', 'A=1', 'ID'], after: ['ls', '--', '-la'] });
  assert.deepEqual(splitAtTerminator(['ID']), { before: ['ID'], after: undefined });
  assert.deepEqual(splitAtTerminator(['ID', '--']), { before: ['ID'], after: [] });
});

test('numbers', () => {
  assert.equal(parsePositiveInt('--memory', '256'), 256);
  assert.equal(parsePositiveInt('--memory', undefined), undefined);
  for (const bad of ['0', '-1', '1.5', 'abc', '', '08']) assert.throws(() => parsePositiveInt('--memory', bad), UsageError, bad);
  assert.equal(parsePositiveNumber('--cpus', '0.5'), 0.5);
  for (const bad of ['0', '-1', 'x', '', 'Infinity']) assert.throws(() => parsePositiveNumber('--cpus', bad), UsageError, bad);
});

test('process selectors: PID or tag:TAG', () => {
  assert.equal(parseProcessArg('42'), 42);
  assert.equal(parseProcessArg('tag:web.1'), 'tag:web.1');
  for (const bad of ['web', '0', 'tag:', '-3', 'tag:a b']) assert.throws(() => parseProcessArg(bad), UsageError, bad);
});

test('expectPositionals names what is missing or extra', () => {
  assert.deepEqual(expectPositionals(['a', 'b'], ['ID', 'PID']), ['a', 'b']);
  assert.throws(() => expectPositionals(['a'], ['ID', 'PID']), /missing PID/);
  assert.throws(() => expectPositionals(['a', 'b'], ['ID']), /unexpected argument "b"/);
});
