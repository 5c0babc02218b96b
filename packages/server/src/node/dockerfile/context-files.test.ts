import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BuildContext, ContextEntry } from '@forkd/protocol';
import { ContextFiles, globPart, selectionDigest } from './context-files.js';
import { copyIntoRoot } from './context-copy.js';
import { stepKey } from './step-cache.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
function ctx(files: Record<string, string>, more: ContextEntry[] = []): BuildContext {
  const blobs: Record<string, string> = {};
  const entries: ContextEntry[] = Object.entries(files).map(([path, data]) => {
    blobs[sha(data)] = Buffer.from(data).toString('base64');
    return { type: 'file', path, mode: 0o644, sha256: sha(data) };
  });
  return { entries: [...entries, ...more], blobs };
}
const rels = (s: { items: { rel: string }[] }) => s.items.map((i) => i.rel);

test('sources: a file, a directory as its contents, wildcards, the whole context', () => {
  const c = new ContextFiles(ctx({ 'a.txt': 'a', 'src/x.ts': 'x', 'src/y.js': 'y', 'src/in/z.ts': 'z' }));
  assert.deepEqual(c.select('a.txt'), { file: true, items: [{ rel: 'a.txt', entry: { type: 'file', path: 'a.txt', mode: 0o644, sha256: sha('a') } }] });
  assert.deepEqual(rels(c.select('src')), ['in', 'in/z.ts', 'x.ts', 'y.js']);
  assert.deepEqual(rels(c.select('src/*.ts')), ['x.ts']);
  assert.deepEqual(rels(c.select('./src/../a.txt')), ['a.txt']);
  assert.deepEqual(rels(c.select('.')), ['a.txt', 'src', 'src/in', 'src/in/z.ts', 'src/x.ts', 'src/y.js']);
  assert.throws(() => c.select('missing'), { code: 'NOT_FOUND' });
  assert.throws(() => c.select('*.md'), { code: 'NOT_FOUND' });
});

test('links out of the context resolve inside it (or not at all); `..` cannot climb out', () => {
  const links: ContextEntry[] = [
    { type: 'symlink', path: 'up', target: '../../../etc' },
    { type: 'symlink', path: 'abs', target: '/etc' },
    { type: 'symlink', path: 'inside', target: 'real' },
    { type: 'symlink', path: 'loop', target: 'loop' },
  ];
  const c = new ContextFiles(ctx({ 'real/f': 'in context', 'etc/passwd': 'the context one' }, links));
  assert.equal(c.select('up/passwd').items[0]!.entry.path, 'etc/passwd', '../../../etc from the root stops at the root');
  assert.equal(c.select('abs/passwd').items[0]!.entry.path, 'etc/passwd', '/etc is the context\'s');
  assert.deepEqual(rels(c.select('inside')), ['f']);
  assert.throws(() => c.select('loop'), /too many links/);
  assert.throws(() => c.select('../../../../etc/shadow'), { code: 'NOT_FOUND' });
  // Inside a copied directory, links are copied as links (not followed).
  const c2 = new ContextFiles(ctx({ 'd/f': 'x' }, [{ type: 'symlink', path: 'd/l', target: '/etc/shadow' }]));
  assert.deepEqual(c2.select('d').items.map((i) => i.entry.type), ['file', 'symlink']);
});

test('a context is refused when its blobs do not match, are missing, or paths collide', () => {
  const good = ctx({ a: 'a' });
  assert.throws(() => new ContextFiles({ ...good, blobs: { [sha('a')]: Buffer.from('b').toString('base64') } }), /does not match/);
  assert.throws(() => new ContextFiles({ ...good, blobs: {} }), /were not sent/);
  assert.throws(() => new ContextFiles({ entries: [...good.entries, ...good.entries], blobs: good.blobs }), /twice/);
  assert.throws(() => new ContextFiles({ entries: [{ type: 'file', path: '../a', mode: 0o644, sha256: sha('a') }], blobs: good.blobs }), { code: 'INVALID_ARGUMENT' });
  assert.throws(() => new ContextFiles(ctx({ 'a/b': 'x' }, [{ type: 'symlink', path: 'a', target: 'x' }])), /under a symlink/);
});

test('cache keys: the parent, the step and the files each change them; modes count, names of blobs do not', () => {
  const c = new ContextFiles(ctx({ 'a.txt': 'a' }));
  const d1 = selectionDigest([c.select('a.txt')]);
  const c2 = new ContextFiles({ ...ctx({ 'a.txt': 'a' }), entries: [{ type: 'file', path: 'a.txt', mode: 0o755, sha256: sha('a') }] });
  assert.notEqual(selectionDigest([c2.select('a.txt')]), d1);
  assert.notEqual(selectionDigest([new ContextFiles(ctx({ 'a.txt': 'b' })).select('a.txt')]), d1);
  assert.equal(selectionDigest([new ContextFiles(ctx({ 'a.txt': 'a', 'other': 'o' })).select('a.txt')]), d1, 'files not copied do not count');
  const k = stepKey('p', 'COPY x', d1);
  assert.match(k, /^[a-f0-9]{64}$/);
  assert.notEqual(stepKey('q', 'COPY x', d1), k);
  assert.notEqual(stepKey('p', 'COPY y', d1), k);
  assert.equal(stepKey('p', 'COPY x', d1), k);
});

test("copying into a root: the image's links on the way stay inside it, what was at the target is replaced, not followed", async () => {
  const root = await mkdtemp(join(tmpdir(), 'forkd-copy-'));
  const outside = await mkdtemp(join(tmpdir(), 'forkd-outside-'));
  try {
    await symlink(outside, join(root, 'etc'));
    await mkdir(join(root, 'app'));
    await symlink(join(outside, 'victim'), join(root, 'app', 'a.txt'));
    const c = new ContextFiles(ctx({ 'a.txt': 'A', 'cfg/x': 'X' }, [{ type: 'symlink', path: 'cfg/l', target: '/etc/passwd' }]));
    await copyIntoRoot(root, c, c.select('a.txt'), '/app/a.txt', false, { uid: 0, gid: 0 }, undefined);
    await copyIntoRoot(root, c, c.select('cfg'), '/etc/cfg', false, { uid: 0, gid: 0 }, 0o600);
    assert.equal(await readFile(join(root, 'app/a.txt'), 'utf8'), 'A');
    assert.equal((await lstat(join(root, 'app/a.txt'))).isSymbolicLink(), false);
    await assert.rejects(lstat(join(outside, 'victim')), { code: 'ENOENT' });
    // /etc → a host path: resolved as the root's /etc instead.
    assert.equal(await readFile(join(root, `${outside}/cfg/x`), 'utf8'), 'X');
    assert.equal(((await lstat(join(root, `${outside}/cfg/x`))).mode & 0o777), 0o600);
    assert.equal(await readlink(join(root, `${outside}/cfg/l`)), '/etc/passwd');
    await assert.rejects(lstat(join(outside, 'cfg')), { code: 'ENOENT' });
  } finally {
    await rm(root, { recursive: true, force: true });
    await rm(outside, { recursive: true, force: true });
  }
});

test('glob parts as Go filepath.Match', () => {
  assert.ok(globPart('*.ts').test('a.ts') && !globPart('*.ts').test('a.tsx'));
  assert.ok(globPart('[!a]?').test('bc') && !globPart('[!a]?').test('ac'));
  assert.ok(globPart('a\\*').test('a*') && !globPart('a\\*').test('ab'));
  assert.ok(globPart('x[').test('x['));
});

test('a hostile context (deep, wide, many wildcards) is refused or selected quickly', () => {
  const deep = Array.from({ length: 120 }, (_, i) => `d${i}`).join('/');
  const t0 = performance.now();
  const c = new ContextFiles(ctx(Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`w${i}/${deep}/f`, 'x']))));
  assert.throws(() => new ContextFiles(ctx(Object.fromEntries(Array.from({ length: 20000 }, (_, i) => [`w${i}/${deep}/f`, 'x'])))), /imply more than/);
  for (let i = 0; i < 50; i++) assert.equal(c.select(`w${i}`).items.length, 121);
  assert.equal(c.select('*/d0/d1').items.length, 300 * 119);
  assert.ok(performance.now() - t0 < 20_000, `${performance.now() - t0} ms`);
});
