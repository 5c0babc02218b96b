import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { CreateSandboxRequest } from '@forkd/protocol';
import { snakeArgs, snakeCase } from './snake-args.js';

test('camelCase names map to snake_case', () => {
  assert.equal(snakeCase('memoryMb'), 'memory_mb');
  assert.equal(snakeCase('snapshotIntervalSeconds'), 'snapshot_interval_seconds');
  assert.equal(snakeCase('cpus'), 'cpus');
});

test('the snake_case shape keeps the protocol schemas themselves, and maps back', () => {
  const a = snakeArgs(CreateSandboxRequest.shape, ['template', 'memoryMb', 'timeoutSeconds']);
  assert.deepEqual(Object.keys(a.shape), ['template', 'memory_mb', 'timeout_seconds']);
  assert.equal(a.shape.memory_mb, CreateSandboxRequest.shape.memoryMb);
  const parsed = z.object(a.shape).parse({ memory_mb: 256, timeout_seconds: 60 });
  assert.deepEqual(a.toApi(parsed), { template: 'base', memoryMb: 256, timeoutSeconds: 60 });
  // The API's own limits: what the API refuses, the tool refuses.
  assert.equal(z.object(a.shape).safeParse({ memory_mb: 16 }).success, false);
  assert.equal(CreateSandboxRequest.safeParse({ memoryMb: 16 }).success, false);
});

test('toApi leaves out unknown and absent arguments', () => {
  const a = snakeArgs(CreateSandboxRequest.shape, ['memoryMb']);
  assert.deepEqual(a.toApi({ memory_mb: undefined, sandbox_id: 'sbx-x' }), {});
});

test('a field the protocol does not have is a programming error', () => {
  assert.throws(() => snakeArgs(CreateSandboxRequest.shape as Record<string, z.ZodType>, ['nope']), /no field nope/);
});
