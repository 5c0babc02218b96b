import { chmod, mkdir, readdir, readFile, readlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { parseMountinfo } from '../../shared/mountinfo.js';
import { CGROUP_ROOT } from './cgroups.js';

/** A cgroup v1 host's /sys/fs/cgroup: a directory per mounted hierarchy, and the links of co-mounted names (cpu -> cpu,cpuacct). */
export interface CgroupV1Layout {
  hierarchies: string[];
  links: Array<[name: string, target: string]>;
}

/**
 * The v1 hierarchies mounted directly under `root`, from mountinfo's text.
 * cgroup2 (a hybrid host's `unified`) is not one: sandboxes get v1's.
 */
export function parseV1Hierarchies(mountinfo: string, root = CGROUP_ROOT): string[] {
  const out: string[] = [];
  for (const m of parseMountinfo(mountinfo)) {
    if (m.fstype !== 'cgroup' || dirname(m.mountPoint) !== root) continue;
    const name = basename(m.mountPoint);
    // No hierarchy's name holds a space or a backslash: such a mount is someone else's.
    if (!/[\s\\]/.test(name) && !out.includes(name)) out.push(name);
  }
  return out;
}

/** This host's v1 layout, or undefined on a unified (v2) host. */
export async function readCgroupV1Layout(): Promise<CgroupV1Layout | undefined> {
  const hierarchies = parseV1Hierarchies(await readFile('/proc/self/mountinfo', 'utf8'));
  if (!hierarchies.length) return undefined;
  const links: Array<[string, string]> = [];
  for (const e of await readdir(CGROUP_ROOT, { withFileTypes: true })) {
    if (!e.isSymbolicLink()) continue;
    const target = await readlink(join(CGROUP_ROOT, e.name)).catch(() => '');
    if (hierarchies.includes(target)) links.push([e.name, target]);
  }
  return { hierarchies, links };
}

/**
 * The sandbox's cgroup in every hierarchy, before runc runs: `runc restore`
 * binds each into the root (the sandbox's /sys/fs/cgroup/NAME) before it
 * makes the cgroups itself (`runc run` makes them first).
 */
export async function makeCgroupV1Dirs(cgroupPath: string, hierarchies: readonly string[], root = CGROUP_ROOT): Promise<void> {
  for (const h of hierarchies) {
    const dir = cgroupV1Source(h, cgroupPath, root);
    const first = await mkdir(dir, { recursive: true });
    // As runc makes them (umask 022): the sandbox's root, in its user namespace, passes through to its own.
    if (first) for (let d = dir; d.length >= first.length; d = dirname(d)) await chmod(d, 0o755);
  }
}

/** The host directory a sandbox's /sys/fs/cgroup/NAME is bound from. */
export function cgroupV1Source(hierarchy: string, cgroupPath: string, root = CGROUP_ROOT): string {
  return join(root, hierarchy, cgroupPath);
}
