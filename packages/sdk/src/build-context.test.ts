import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { readBuildContext } from './build-context.js';
import { dockerignore } from './dockerignore.js';

test('a context directory: files by sha256 (once each), modes, links as links, .dockerignore, no reads outside', async () => {
  const work = await mkdtemp(join(tmpdir(), 'forkd-ctx-'));
  try {
    const dir = join(work, 'ctx');
    await mkdir(join(dir, 'src/deep'), { recursive: true });
    await mkdir(join(dir, 'node_modules/x'), { recursive: true });
    await writeFile(join(dir, 'src/a.txt'), 'same');
    await writeFile(join(dir, 'src/deep/b.txt'), 'same');
    await writeFile(join(dir, 'run.sh'), '#!/bin/sh\n');
    await chmod(join(dir, 'run.sh'), 0o750);
    await writeFile(join(dir, 'node_modules/x/i.js'), 'ignored');
    await writeFile(join(dir, 'keep.log'), 'kept');
    await writeFile(join(dir, 'drop.log'), 'dropped');
    await writeFile(join(dir, '.dockerignore'), 'node_modules\n*.log\n!keep.log\n');
    await writeFile(join(work, 'secret'), 'outside the context');
    await symlink('../secret', join(dir, 'up'));
    await symlink('/etc/shadow', join(dir, 'abs'));
    await symlink(work, join(dir, 'workdir-link'));
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    const { context, skipped } = await readBuildContext(dir);
    const byPath = Object.fromEntries(context.entries.map((e) => [e.path, e]));
    assert.deepEqual(Object.keys(byPath).sort(), ['.dockerignore', 'abs', 'keep.log', 'run.sh', 'src', 'src/a.txt', 'src/deep', 'src/deep/b.txt', 'up', 'workdir-link']);
    assert.deepEqual(skipped, ['fifo']);
    assert.deepEqual(byPath['up'], { type: 'symlink', path: 'up', target: '../secret' });
    assert.deepEqual(byPath['workdir-link'], { type: 'symlink', path: 'workdir-link', target: work });
    assert.equal(byPath['run.sh']!.type === 'file' && byPath['run.sh']!.mode, 0o750);
    const same = createHash('sha256').update('same').digest('hex');
    assert.equal(Object.keys(context.blobs ?? {}).filter((k) => k === same).length, 1);
    const all = Object.values(context.blobs ?? {}).map((b) => Buffer.from(b, 'base64').toString());
    assert.ok(!all.includes('outside the context') && !all.includes('ignored') && !all.includes('dropped'));
    await assert.rejects(readBuildContext(join(dir, 'run.sh')), { code: 'INVALID_ARGUMENT' });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

test('.dockerignore patterns', () => {
  const ig = dockerignore('# c\n/build\n**/*.tmp\ndocs/*.md\n!docs/keep.md\n[ab].txt\n');
  for (const p of ['build', 'build/x', 'a.tmp', 'x/y/z.tmp', 'docs/a.md', 'a.txt']) assert.ok(ig(p), p);
  for (const p of ['src/build', 'docs/keep.md', 'docs/sub/a.md', 'c.txt']) assert.ok(!ig(p), p);
});
