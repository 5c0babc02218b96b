import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { exec } from '../../shared/exec.js';
import type { RootKind, SandboxRoot } from '../runtime/sandbox-root.js';

/**
 * The filesystem operations every directory-backed Storage shares (Btrfs,
 * and the plain-directory one of unit tests): roots are host directories,
 * memory images are plain directories moved in by rename.
 */

export function directoryRoot(path: string, kind: RootKind): SandboxRoot {
  if (kind !== 'directory') throw new Error(`this storage gives directory roots, not ${String(kind)}`);
  return { kind, path };
}

/** A rename, so the images are never copied (they are on the pool's filesystem: staging is moved in before). */
export async function adoptDirAt(dst: string, sourceDir: string): Promise<void> {
  await mkdir(dirname(dst), { recursive: true });
  await rename(sourceDir, dst);
}

export async function removeDirAt(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true });
}

/** Copies the tree under `sourceDir` into the existing directory `dst`, as `cp -a` does (reflinks where it can). */
export async function copyTreeInto(sourceDir: string, dst: string): Promise<void> {
  await exec('cp', ['-a', '--reflink=auto', `${sourceDir}/.`, `${dst}/`]);
}

/** Whether something is at a host path (a volume of a directory-backed storage). */
export function pathExists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
