import { lstat, mkdir, open as openFile, readdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import assert from 'node:assert/strict';

/** What the storage conformance suites (storage-conformance.ts, storage-pool-conformance.ts) build and compare volumes with. */

/** A small root: nested directories, an executable, a symlink. */
export async function fill(root: string): Promise<void> {
  await mkdir(join(root, 'etc'));
  await mkdir(join(root, 'bin'));
  await writeFile(join(root, 'etc/hostname'), 'base');
  await writeFile(join(root, 'etc/motd'), 'welcome');
  await writeFile(join(root, 'bin/run'), '#!/bin/sh\n', { mode: 0o755 });
  await writeFile(join(root, 'bin/tool'), 'tool');
  await symlink('../etc/hostname', join(root, 'bin/link'));
}

/** Every entry under root with its content (files) or target (symlinks), for comparing two volumes. */
export async function tree(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const rel of (await readdir(root, { recursive: true })).sort()) {
    const p = join(root, rel);
    const st = await lstat(p);
    out[rel] = st.isSymbolicLink() ? `-> ${await readlink(p)}` : st.isDirectory() ? 'dir' : await readFile(p, 'utf8');
  }
  return out;
}

/** Nothing in a committed volume can be created, changed or deleted through its path. */
export async function assertReadOnly(root: string): Promise<void> {
  await assert.rejects(writeFile(join(root, 'new'), 'x'), Error, 'a new file at the top');
  await assert.rejects(writeFile(join(root, 'etc/new'), 'x'), Error, 'a new file below');
  await assert.rejects(writeFile(join(root, 'etc/hostname'), 'changed'), Error, 'an existing file');
  await assert.rejects(mkdir(join(root, 'etc/dir')), Error, 'a directory');
  await assert.rejects(rm(join(root, 'bin/tool')), Error, 'a deletion');
}

export async function writeSynced(file: string, data: Buffer): Promise<void> {
  // Synced so the filesystem has placed the data: delayed allocations are not counted yet.
  const fh = await openFile(file, 'w');
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}
