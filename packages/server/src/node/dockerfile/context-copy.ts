import { constants } from 'node:fs';
import { chmod, chown, lchown, lstat, mkdir, open, readFile, rm, symlink } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { layerPathParts, resolveDirInScope, ScopeError } from '../images/scoped-path.js';
import type { ContextFiles, Selected } from './context-files.js';

export interface Owner {
  uid: number;
  gid: number;
}

/**
 * Writes a COPY's selections into `root` (a writable snapshot of the step
 * before): the image's own links on the destination's way are resolved
 * inside `root` (scoped-path.ts), the last part is never followed (what was
 * there is removed, files are made O_EXCL|O_NOFOLLOW). Owners are root's
 * unless --chown (ids as the sandbox sees them: user namespaces map them).
 */
export async function copyIntoRoot(root: string, files: ContextFiles, sel: { file: boolean; items: readonly Selected[] }, dest: string, destIsDir: boolean, owner: Owner, chmodTo: number | undefined): Promise<void> {
  // A single file goes to the destination itself unless it names a directory (written so, or there already).
  const intoDir = destIsDir || !sel.file || (await isDirInScope(root, dest));
  if (intoDir && (owner.uid !== 0 || owner.gid !== 0)) await ownedDirs(root, dest, owner);
  for (const { rel, entry } of sel.items) {
    const target = intoDir ? posix.join(dest, rel) : dest;
    const parts = layerPathParts(target);
    if (!parts || parts.length === 0) {
      if (entry.type === 'dir') continue; // the root itself stays as it is
      throw new ForkdError('INVALID_ARGUMENT', `cannot copy ${JSON.stringify(entry.path)} onto /`);
    }
    try {
      const dir = await resolveDirInScope(root, parts.slice(0, -1), true);
      await place(join(dir, parts.at(-1)!), entry, files, owner, chmodTo);
    } catch (err) {
      if (err instanceof ScopeError) throw new ForkdError('INVALID_ARGUMENT', `cannot copy to ${target}: ${err.message}`);
      throw err;
    }
  }
}

async function place(target: string, entry: Selected['entry'], files: ContextFiles, owner: Owner, chmodTo: number | undefined): Promise<void> {
  const existing = await lstat(target).catch(() => undefined);
  if (existing && !(entry.type === 'dir' && existing.isDirectory())) await rm(target, { recursive: true, force: true });
  switch (entry.type) {
    case 'dir':
      if (!existing?.isDirectory()) await mkdir(target);
      await chown(target, owner.uid, owner.gid);
      await chmod(target, chmodTo ?? entry.mode);
      return;
    case 'symlink':
      await symlink(entry.target, target);
      await lchown(target, owner.uid, owner.gid);
      return;
    case 'file': {
      const out = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      try {
        await out.write(files.blob(entry.sha256));
        // Owner before mode: chown clears setuid and setgid bits.
        await out.chown(owner.uid, owner.gid);
        await out.chmod(chmodTo ?? entry.mode);
      } finally {
        await out.close();
      }
    }
  }
}

/** The directories of `path` a copy makes, owned as its files are (Docker: "new files and directories" get --chown's ids). */
async function ownedDirs(root: string, path: string, owner: Owner): Promise<void> {
  const parts = layerPathParts(path) ?? [];
  let i = 0;
  while (i < parts.length && (await isDirInScope(root, `/${parts.slice(0, i + 1).join('/')}`))) i++;
  for (; i < parts.length; i++) {
    try {
      const dir = await resolveDirInScope(root, parts.slice(0, i + 1), true);
      await lchown(dir, owner.uid, owner.gid);
    } catch (err) {
      if (err instanceof ScopeError) throw new ForkdError('INVALID_ARGUMENT', `cannot copy to ${path}: ${err.message}`);
      throw err;
    }
  }
}

async function isDirInScope(root: string, path: string): Promise<boolean> {
  const parts = layerPathParts(path);
  if (!parts) return false;
  return resolveDirInScope(root, parts, false).then(
    () => true,
    () => false,
  );
}

/**
 * `--chown=USER[:GROUP]`: numeric ids, or names looked up in the root's
 * /etc/passwd and /etc/group (read in scope, never through a link out).
 * A user alone takes its primary group, as Docker does.
 */
export async function ownerFor(root: string, spec: string | undefined): Promise<Owner> {
  if (!spec) return { uid: 0, gid: 0 };
  const [u, g] = spec.split(':') as [string, string | undefined];
  const passwd = /^\d+$/.test(u) && (g === undefined || /^\d+$/.test(g)) ? [] : await dbLines(root, 'passwd');
  const user = /^\d+$/.test(u) ? { id: Number(u), gid: Number(passwd.find((l) => l[2] === u)?.[3] ?? u) } : findUser(passwd, u);
  if (!user) throw new ForkdError('INVALID_ARGUMENT', `--chown: no user ${JSON.stringify(u)} in the image's /etc/passwd`);
  if (g === undefined || g === '') return { uid: user.id, gid: user.gid };
  if (/^\d+$/.test(g)) return { uid: user.id, gid: Number(g) };
  const group = (await dbLines(root, 'group')).find((l) => l[0] === g);
  if (!group || !/^\d+$/.test(group[2] ?? '')) throw new ForkdError('INVALID_ARGUMENT', `--chown: no group ${JSON.stringify(g)} in the image's /etc/group`);
  return { uid: user.id, gid: Number(group[2]) };
}

function findUser(passwd: string[][], name: string): { id: number; gid: number } | undefined {
  const l = passwd.find((x) => x[0] === name);
  return l && /^\d+$/.test(l[2] ?? '') && /^\d+$/.test(l[3] ?? '') ? { id: Number(l[2]), gid: Number(l[3]) } : undefined;
}

async function dbLines(root: string, name: string): Promise<string[][]> {
  try {
    const etc = await resolveDirInScope(root, ['etc'], false);
    const fh = await open(join(etc, name), constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const text = (await readFile(fh, 'utf8')).slice(0, 4 * 1024 * 1024);
      return text.split('\n').map((l) => l.split(':'));
    } finally {
      await fh.close();
    }
  } catch {
    return [];
  }
}
