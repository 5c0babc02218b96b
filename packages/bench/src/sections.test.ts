import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DurationMemory } from '@forkd/cli';
import { Sections } from './sections.js';

test('sections: announced with their place; the next run has the time left', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-bench-sections-'));
  try {
    const memory = new DurationMemory(join(dir, 'd.json'));
    let text = '';
    const write = (s: string) => void (text += s);
    const first = new Sections('bench', ['core', 'cli'], { memory, write });
    assert.deepEqual(await first.run('core', async () => ['a', 'b']), ['a', 'b']);
    await first.run('cli', async () => 1);
    first.finish();
    assert.match(text, /^step 1\/2 · core \.\.\.\ncore: done \(\d+ms\)\nstep 2\/2 · cli \.\.\.\ncli: done \(\d+ms\)\n$/);
    assert.doesNotMatch(text, /\r|\x1b/);
    text = '';
    const second = new Sections('bench', ['core', 'cli'], { memory, write });
    await second.run('core', async () => []);
    assert.match(text, /^step 1\/2 · core \.\.\. \(~1s left\)\n/);
    text = '';
    await assert.rejects(second.run('cli', async () => Promise.reject(new Error('boom'))), /boom/);
    assert.match(text, /cli: failed\n$/);
    assert.equal(memory.last('bench')?.length, 2, 'a run cut short is not remembered');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
