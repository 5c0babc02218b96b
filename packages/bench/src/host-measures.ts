import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rmdir, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { exec } from '@forkd/server';

/** Bytes the pool's filesystem has allocated, after its pending writes are committed. */
export async function poolUsed(mount: string): Promise<number> {
  await exec('btrfs', ['filesystem', 'sync', mount]);
  const st = await statfs(mount);
  return (st.blocks - st.bfree) * st.bsize;
}

/** Host memory that is not page cache: what idle sandboxes really pin. */
export async function pinnedMemory(): Promise<number> {
  const info = await readFile('/proc/meminfo', 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(info)?.[1] ?? 0);
  return (kb('AnonPages') + kb('KernelStack') + kb('PageTables') + kb('SUnreclaim') + kb('Shmem')) * 1024;
}

/**
 * Host CPU time of this process and of everything it starts (runc, criu,
 * CRIU's action script and the Btrfs snapshot it runs detached, forkd-patch),
 * but not of the sandboxes, which runc puts in cgroups of their own. The
 * bench moves itself and its resident helpers into a cgroup of its own and
 * reads its CPU accounting:
 * cgroup membership follows every fork, even of a detached process that
 * init reaps, which a process's children rusage would miss. Where that is
 * not possible it falls back to /proc/self/stat (waited-for children only,
 * 10 ms ticks). Kernel threads (the Btrfs commit) are nobody's.
 */
export async function cpuMeter(): Promise<{ nanos(): Promise<number>; source: string; close(): Promise<void> }> {
  const v2 = existsSync('/sys/fs/cgroup/cgroup.controllers');
  const dir = v2 ? `/sys/fs/cgroup/forkd-bench-${process.pid}` : `/sys/fs/cgroup/cpuacct/forkd-bench-${process.pid}`;
  const line = (await readFile('/proc/self/cgroup', 'utf8')).split('\n').find((l) => (v2 ? l.startsWith('0::') : /^\d+:([^:]*,)?cpuacct(,[^:]*)?:/.test(l)));
  const home = join(v2 ? '/sys/fs/cgroup' : '/sys/fs/cgroup/cpuacct', line?.split(':')[2] ?? '/');
  try {
    await mkdir(dir);
    // With the bench's resident helpers (forkd-spawn starts runc, CRIU and forkd-patch): started with the node,
    // before this cgroup, they would stay outside it and their work would not count.
    const helpers = await childrenIn(line);
    for (const pid of [process.pid, ...helpers]) await writeFile(join(dir, 'cgroup.procs'), String(pid)).catch(() => {});
    const read = v2
      ? async () => Number(/^usage_usec (\d+)/m.exec(await readFile(join(dir, 'cpu.stat'), 'utf8'))?.[1] ?? 0) * 1000
      : async () => Number((await readFile(join(dir, 'cpuacct.usage'), 'utf8')).trim());
    return {
      nanos: read,
      source: v2 ? 'cgroup v2 cpu.stat of the bench process' : 'cgroup v1 cpuacct.usage of the bench process',
      async close() {
        for (const pid of [process.pid, ...helpers]) await writeFile(join(home, 'cgroup.procs'), String(pid)).catch(() => {});
        // Detached helpers may outlive the bench for a moment; the cgroup goes once they are gone.
        for (let i = 0; i < 50 && (await rmdir(dir).then(() => false, () => true)); i++) await new Promise((r) => setTimeout(r, 100));
      },
    };
  } catch {
    await rmdir(dir).catch(() => {});
    const hz = 100;
    return {
      nanos: async () => {
        const f = (await readFile('/proc/self/stat', 'utf8')).split(') ')[1]?.split(' ') ?? [];
        // utime, stime, cutime, cstime: fields 14-17 of stat, 12-15 after the command name.
        return [11, 12, 13, 14].reduce((s, i) => s + Number(f[i] ?? 0), 0) * (1e9 / hz);
      },
      source: '/proc/self/stat (process and waited-for children, 10 ms ticks)',
      close: async () => {},
    };
  }
}

/** This process's children that are in its own cgroup (`line` of /proc/self/cgroup): its helpers, never a sandbox's processes. */
async function childrenIn(line: string | undefined): Promise<number[]> {
  const out: number[] = [];
  for (const name of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid !== process.pid) continue;
    const cg = await readFile(`/proc/${name}/cgroup`, 'utf8').catch(() => '');
    if (line && cg.split('\n').includes(line)) out.push(Number(name));
  }
  return out;
}
