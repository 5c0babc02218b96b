import { readFile } from 'node:fs/promises';

/**
 * One line of /proc/PID/mountinfo (proc(5)): `id parent major:minor root
 * mountpoint options [optional...] - fstype source superoptions`. Paths are
 * unescaped (the kernel writes a space, tab, newline or backslash as \ooo).
 */
export interface MountEntry {
  mountPoint: string;
  /** The mount's own flags (rw, nodev, noatime, ...). */
  options: string[];
  fstype: string;
  source: string;
  /** The filesystem's (a cgroup2 hierarchy's nsdelegate, favordynmods, ...). */
  superOptions: string[];
}

export function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** Every well-formed line, in the kernel's order (a later mount on the same point is on top); others are skipped. */
export function parseMountinfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    // Escaped paths hold no space: the lone '-' field ends the optional fields.
    const sep = f.indexOf('-', 6);
    const [point, options, fstype, source, superOptions] = [f[4], f[5], f[sep + 1], f[sep + 2], f[sep + 3]];
    if (sep < 0 || point === undefined || options === undefined || fstype === undefined || source === undefined || superOptions === undefined) continue;
    out.push({ mountPoint: unescapeMount(point), options: options.split(','), fstype, source: unescapeMount(source), superOptions: superOptions.split(',') });
  }
  return out;
}

/** The mount `path` is on: the longest mount point above it, the topmost of those stacked there (a later line). */
export function mountOf(mounts: MountEntry[], path: string): MountEntry | undefined {
  let best: MountEntry | undefined;
  for (const m of mounts) {
    const above = m.mountPoint === '/' || path === m.mountPoint || path.startsWith(`${m.mountPoint}/`);
    if (above && (!best || m.mountPoint.length >= best.mountPoint.length)) best = m;
  }
  return best;
}

/** This process's mounts. */
export async function readMounts(): Promise<MountEntry[]> {
  return parseMountinfo(await readFile('/proc/self/mountinfo', 'utf8'));
}
