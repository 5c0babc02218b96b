import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesNote, bytesRead, dirBytes, whileMeasured } from './pull-progress.js';

const MIB = 1024 * 1024;

test('a pull\'s progress note: amount (of the total), rate once a byte moved, time left while short of a known total', () => {
  assert.equal(bytesNote(0, 300 * MIB, 0), '(0.0 MiB of 300 MiB)');
  assert.equal(bytesNote(120 * MIB, 300 * MIB, 4_000), '(120 MiB of 300 MiB, 30 MiB/s, ~6s left)');
  assert.equal(bytesNote(300 * MIB, 300 * MIB, 10_000), '(300 MiB of 300 MiB, 30 MiB/s)');
  assert.equal(bytesNote(5 * MIB, undefined, 2_000), '(5.0 MiB, 2.5 MiB/s)');
});

test('whileMeasured reports the bytes in the directory while the work runs, and stops with it', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-pull-progress-'));
  try {
    const seen: number[] = [];
    const result = await whileMeasured(() => dirBytes(dir), 20, (b) => void seen.push(b), (async () => {
      await writeFile(join(dir, 'a'), Buffer.alloc(1000));
      await new Promise((r) => setTimeout(r, 80));
      await writeFile(join(dir, 'b'), Buffer.alloc(500));
      await new Promise((r) => setTimeout(r, 80));
      return 'copied';
    })());
    assert.equal(result, 'copied');
    assert.ok(seen.includes(1000) && seen.includes(1500), seen.join(' '));
    const n = seen.length;
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(seen.length, n, 'no report after the work ended');
    await assert.rejects(whileMeasured(() => dirBytes(join(dir, 'missing')), 10, () => {}, Promise.reject(new Error('pull failed'))), /pull failed/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("bytesRead: a process's reads so far from /proc (0 for one that is gone)", async () => {
  const before = await bytesRead(process.pid);
  const dir = await mkdtemp(join(tmpdir(), 'forkd-pull-read-'));
  try {
    await writeFile(join(dir, 'f'), Buffer.alloc(MIB));
    await readFile(join(dir, 'f'));
    assert.ok((await bytesRead(process.pid)) >= before + MIB);
    assert.equal(await bytesRead(2 ** 22 + 1), 0);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
