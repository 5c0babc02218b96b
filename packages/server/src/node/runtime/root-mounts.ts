import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, rmdir, stat, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { exec } from '../../shared/exec.js';
import { readCgroupV1Layout } from '../cgroups/v1-layout.js';
import type { RuntimeSpec } from './runtime.js';
import { rootDirectory } from './sandbox-root.js';

/**
 * Where and how runc sees a sandbox's root: `rootfs` is the path its config
 * names; `runIn`, when not empty, is the command (forkd-idmap) that makes the
 * idmapped view there in a private mount namespace of its own and then runs
 * the program that follows it, so the host's mount table never holds a
 * sandbox's root (see forkd-idmap for why that matters at scale).
 */
export interface RootView {
  rootfs: string;
  runIn: string[];
}

/** Host directories every sandbox's config names (see RootMounts.sharedDirs). */
export interface SharedDirs {
  emptyDir: string;
  /** On a cgroup v1 host: the mount points of /sys/fs/cgroup, and the host's hierarchies. */
  cgroupV1: { skeleton: string; hierarchies: string[] } | undefined;
}

/**
 * The roots the container runtime gives runc: one directory per key under
 * `mountRoot` (a tmpfs), where the idmapped view of a sandbox's root (and,
 * for a restore, its images bound beside it) is mounted in runc's own mount
 * namespace (RootView.runIn), never in the host's. Made with forkd-idmap.
 */
export class RootMounts {
  readonly #mountRoot: string;
  readonly #idmapTool: string;

  constructor(mountRoot: string, idmapTool: string) {
    this.#mountRoot = mountRoot;
    this.#idmapTool = idmapTool;
  }

  /**
   * The root runc is given: the volume itself, or (with a user namespace) an
   * idmapped view of it, in which the files' ids on disk (the template's,
   * shared by every sandbox) read as the sandbox's range. No tree walk, no
   * copy: the mount is made in ~1 ms whatever the size of the root. With
   * `images`, the same process also binds that directory next to the root
   * (see imagesInReach).
   */
  async view(id: string, spec: RuntimeSpec, images?: string): Promise<RootView> {
    const dir = rootDirectory(spec.root);
    if (!spec.idmap) return { rootfs: dir, runIn: [] };
    await this.unmount(id);
    // runc resolves the root from inside the user namespace: the path must be
    // traversable by the sandbox's root (host id hostId) and by nobody else.
    // The shared directory only lets others pass (0711, no listing); each
    // sandbox's own is its root's alone (0700).
    await this.sharedDirs();
    const own = join(this.#mountRoot, id);
    await mkdir(own, { mode: 0o700 });
    await chown(own, spec.idmap.hostId, spec.idmap.hostId);
    const target = join(own, 'root');
    await mkdir(target);
    const bind = images ? ['--bind', images, join(own, 'images')] : [];
    if (images) await mkdir(join(own, 'images'));
    return { rootfs: target, runIn: [this.#idmapTool, dir, target, String(spec.idmap.hostId), String(spec.idmap.size), ...bind, '--'] };
  }

  /**
   * CRIU re-opens the images by path from inside the restored user
   * namespace: they are bound into the sandbox's own directory next to its
   * root (reachable by its root only), instead of opening the pool to it.
   */
  imagesInReach(id: string): string {
    return join(this.#mountRoot, id, 'images');
  }

  #shared: Promise<SharedDirs> | undefined;

  /**
   * The roots' directory (passable by every sandbox's root), and beside it
   * the empty directory that masks /sys/firmware and, on a cgroup v1 host,
   * the mount points of /sys/fs/cgroup (see oci-spec.ts cgroupMounts): made
   * once per runtime, not at every start. Only ever added to: a directory
   * there is a mount point in running sandboxes, and removing one would
   * unmount it from under them.
   */
  sharedDirs(): Promise<SharedDirs> {
    this.#shared ??= (async () => {
      const emptyDir = join(this.#mountRoot, '.empty');
      await mkdir(emptyDir, { recursive: true });
      await chmod(emptyDir, 0o555);
      const cgroupV1 = await this.#cgroupSkeleton();
      await traversable(this.#mountRoot);
      return { emptyDir, cgroupV1 };
    })().catch((err: unknown) => {
      this.#shared = undefined;
      throw err;
    });
    return this.#shared;
  }

  async #cgroupSkeleton(): Promise<SharedDirs['cgroupV1']> {
    const layout = await readCgroupV1Layout();
    if (!layout) return undefined;
    const skeleton = join(this.#mountRoot, '.cgroup-v1');
    await mkdir(skeleton, { recursive: true });
    for (const h of layout.hierarchies) await mkdir(join(skeleton, h), { recursive: true });
    for (const [name, target] of layout.links) {
      await symlink(target, join(skeleton, name)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
    }
    for (const h of layout.hierarchies) await chmod(join(skeleton, h), 0o555);
    await chmod(skeleton, 0o555);
    return { skeleton, hierarchies: layout.hierarchies };
  }

  /**
   * Only ever unmounted and rmdir'ed, never removed recursively: through a
   * mount that would delete the volume's files. The views are runc's own
   * (RootView.runIn): a mount here is one a daemon before them made.
   */
  async unmount(id: string): Promise<void> {
    const own = join(this.#mountRoot, id);
    if (!existsSync(own)) return;
    for (const sub of ['images', 'root']) {
      const p = join(own, sub);
      if (await isMountPoint(p, own)) await exec('umount', ['--lazy', p], { allowFailure: true });
      await rmdir(p).catch(() => {});
    }
    await rmdir(own).catch(() => {});
  }
}

/** A mount point at `p` (a directory in `parent`): another filesystem, or the same one idmapped (a bind: another mount id). */
async function isMountPoint(p: string, parent: string): Promise<boolean> {
  const [a, b] = await Promise.all([stat(p).catch(() => undefined), stat(parent).catch(() => undefined)]);
  return a !== undefined && b !== undefined && a.dev !== b.dev;
}

/**
 * Makes `dir` and every directory above it passable (x) by others, as a
 * user namespace's root must be able to reach its sandbox's root through
 * it. Only the search bit: nothing becomes listable or readable. A
 * directory that already has it (/, /run, /tmp) is left alone.
 */
async function traversable(dir: string): Promise<void> {
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    const st = await stat(d);
    if ((st.mode & 0o001) === 0) await chmod(d, (st.mode & 0o7777) | 0o011);
  }
}
