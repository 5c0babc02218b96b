import { mkdir, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { exec } from './exec.js';
import { privateDir, privateFile, tightenTree, usePrivateUmask } from './private-state.js';

let dir = '';
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'forkd-private-state-'));
});
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const mode = async (p: string) => (await stat(p)).mode & 0o7777;

test('the private umask reaches children; exec can give a root-filesystem builder 022 back', async () => {
  const old = process.umask();
  try {
    usePrivateUmask();
    assert.equal((await exec('sh', ['-c', 'umask'])).stdout.trim(), '0077');
    const r = await exec('sh', ['-c', 'umask; echo "$0|$1"', 'a b', 'c'], { umask: 0o022 });
    assert.equal(r.stdout, '0022\na b|c\n', 'argv passes through untouched');
  } finally {
    process.umask(old);
  }
});

test('privateDir and privateFile make and close; tightenTree keeps owner bits and follows no symlink', async () => {
  const d = join(dir, 'd');
  await mkdir(d, { mode: 0o755 });
  await privateDir(d);
  assert.equal(await mode(d), 0o700);
  const f = join(dir, 'f');
  await writeFile(f, '', { mode: 0o644 });
  await privateFile(f);
  assert.equal(await mode(f), 0o600);
  await privateFile(join(dir, 'new'));
  assert.equal(await mode(join(dir, 'new')), 0o600);
  const tree = join(dir, 'tree');
  await mkdir(join(tree, 'sub'), { recursive: true, mode: 0o755 });
  await writeFile(join(tree, 'sub', 'x'), '', { mode: 0o755 });
  const outside = join(dir, 'outside');
  await writeFile(outside, '', { mode: 0o644 });
  await symlink(outside, join(tree, 'link'));
  await tightenTree(tree);
  assert.deepEqual([await mode(tree), await mode(join(tree, 'sub')), await mode(join(tree, 'sub', 'x')), await mode(outside)], [0o700, 0o700, 0o700, 0o644]);
});
