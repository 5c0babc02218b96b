import { cgroupV1Source } from '../cgroups/v1-layout.js';
import type { IdMap, RuntimeSpec } from './runtime.js';
import { seccompProfile } from './seccomp-profile.js';
import type { Rlimit } from './rlimits.js';

/** Docker's default capability set: enough for package managers and user switching, nothing that reaches the host. */
export const DEFAULT_CAPS = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FSETID',
  'CAP_FOWNER',
  'CAP_MKNOD',
  'CAP_NET_RAW',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETFCAP',
  'CAP_SETPCAP',
  'CAP_NET_BIND_SERVICE',
  'CAP_SYS_CHROOT',
  'CAP_KILL',
  'CAP_AUDIT_WRITE',
];

/** The CFS period quotas are per: the kernel's default, which a new cgroup has (see buildOciSpec). */
export const CPU_PERIOD_US = 100_000;

/** CFS quota for a CPU count (at least 1 ms per period, the kernel's floor). */
export function cpuQuota(cpus: number): number {
  return Math.max(1000, Math.round(cpus * CPU_PERIOD_US));
}

export interface OciOptions {
  cgroupsPath: string;
  /** cgroup v1 hosts without swap accounting reject a swap limit. */
  swapLimit: boolean;
  /** Path of a network namespace made by the host (see Network); a new empty one without. */
  netns?: string | undefined;
  /** An empty host directory, bound read-only over host information (/sys/firmware). */
  emptyDir: string;
  /** Resource limits of the sandbox's processes (see sandboxRlimits); none: the daemon's own. */
  rlimits?: Rlimit[] | undefined;
  /** A cgroup v1 host: its hierarchies' names, and the host directory of their mount points (see cgroupMounts). */
  cgroupV1?: { skeleton: string; hierarchies: readonly string[] } | undefined;
  /** /dev is the root's own directory bound over itself, not a tmpfs (see devMounts); default off. */
  devInRoot?: boolean | undefined;
  /**
   * A restore into a network namespace CRIU makes (a sandbox in a user
   * namespace): forkd-criu-action, which runc runs as a createRuntime hook at
   * CRIU's setup-namespaces step to bring the loopback up before sockets are
   * restored. A hook, not CRIU's action script: CRIU would run that at each
   * of a restore's seven steps, a process each.
   */
  loopbackHook?: string | undefined;
}

const SYS_MOUNT_OPTIONS = ['ro', 'nosuid', 'noexec', 'nodev'];

/**
 * Tools size themselves from their limits in /sys/fs/cgroup (JVM, Go,
 * Node's heap). On v2 it is one cgroup mount. On v1 runc would make it a
 * tmpfs holding a mount per hierarchy, and CRIU dumps a tmpfs's content with
 * tar and gzip (three processes) inside every freeze and unpacks it at every
 * restore, ~15-20 ms each here. So on v1 it is binds, which runc names to
 * CRIU as external mounts (neither dumped nor unpacked): a read-only host
 * directory of mount points, and over each the sandbox's own cgroup of that
 * hierarchy, read-only (what a cgroup namespace shows at its root).
 */
function cgroupMounts(opts: OciOptions): object[] {
  if (!opts.cgroupV1) return [{ destination: '/sys/fs/cgroup', type: 'cgroup', source: 'cgroup', options: [...SYS_MOUNT_OPTIONS, 'relatime'] }];
  return [
    { destination: '/sys/fs/cgroup', type: 'bind', source: opts.cgroupV1.skeleton, options: ['bind', ...SYS_MOUNT_OPTIONS] },
    ...opts.cgroupV1.hierarchies.map((h) => ({ destination: `/sys/fs/cgroup/${h}`, type: 'bind', source: cgroupV1Source(h, opts.cgroupsPath), options: ['bind', ...SYS_MOUNT_OPTIONS] })),
  ];
}

/** runc's default devices: each a bind of the host's node (in a user namespace runc binds them too). */
const DEVICES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'];

/**
 * CRIU dumps a tmpfs's content with tar and gzip inside every freeze and
 * unpacks it at every restore (15-20 ms each way on the 2-core bench
 * machine). /dev was such a tmpfs; by default it is now the root's own
 * directory bound over itself, so what the sandbox keeps there (/dev/shm,
 * which the guest agent makes at start: POSIX shm, multiprocessing) is in
 * the root's Btrfs snapshot, taken inside the freeze like every other file,
 * and CRIU is told the bind is external (runc names every bind): nothing is
 * dumped for it. A bind, not just the directory: a mount point cannot be
 * renamed or removed (a sandbox that moved its /dev would move the device
 * binds with it, and CRIU refuses to dump those). With a bind at /dev runc
 * makes no devices, so the device binds are here and the root's /dev gets
 * runc's symlinks from forkd at a cold start (DEV_LINKS).
 *
 * A template shapes its root, and runc uses what it finds in /dev (the 2025
 * masked-path CVEs: a planted /dev/null symlink is what runc then
 * bind-mounts over /proc paths), so a cold start empties the root's /dev
 * first, as a fresh tmpfs would be, and a restore first makes the mount
 * points below true files and directories (DEV_MOUNT_POINTS). The price:
 * /dev/shm is disk-backed (charged to the disk quota, its dirty pages
 * written back at a snapshot) rather than memory. Only in a user namespace
 * (the pool is nodev; the idmapped view is where the bind's source lives).
 */
function devMounts(opts: OciOptions, spec: OciSandbox): object[] {
  if (opts.devInRoot && spec.idmap) {
    return [
      { destination: '/dev', type: 'bind', source: `${spec.rootfs}/dev`, options: ['bind', 'nosuid'] },
      ...DEVICES.map((d) => ({ destination: `/dev/${d}`, type: 'bind', source: `/dev/${d}`, options: ['bind'] })),
    ];
  }
  // No size: /dev/shm lives here, and shm pages are charged to the sandbox's memory cgroup, which bounds them.
  return [{ destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755'] }];
}

/** The symlinks runc makes in a /dev of its own, made by forkd in the root's (see devMounts). */
export const DEV_LINKS: readonly (readonly [string, string])[] = [
  ['/proc/self/fd', 'dev/fd'],
  ['/proc/self/fd/0', 'dev/stdin'],
  ['/proc/self/fd/1', 'dev/stdout'],
  ['/proc/self/fd/2', 'dev/stderr'],
  ['pts/ptmx', 'dev/ptmx'],
];

/**
 * What runc and CRIU mount onto in /dev at a restore, by path inside the
 * root: the mount points of devpts and mqueue, and runc's default device
 * nodes (bound from the host's in a user namespace, and /dev/null the
 * source of masked paths). Made true entries before a restore, whatever the
 * sandbox left there.
 */
export const DEV_MOUNT_POINTS: readonly (readonly [string, 'dir' | 'file'])[] = [
  ['dev', 'dir'],
  ['dev/pts', 'dir'],
  ['dev/mqueue', 'dir'],
  ...DEVICES.map((d) => [`dev/${d}`, 'file'] as const),
];

function idMapping(m: IdMap) {
  return { containerID: 0, hostID: m.hostId, size: m.size };
}

/** A sandbox as runc sees it: its root as the host directory runc is given (maybe an idmapped view), its init a path in it. */
export interface OciSandbox extends Omit<RuntimeSpec, 'root'> {
  rootfs: string;
  init: string;
}

/** Builds the OCI runtime config.json of a sandbox (pure; tested without root). */
export function buildOciSpec(spec: OciSandbox, opts: OciOptions): Record<string, unknown> {
  const memBytes = spec.limits.memoryMb * 1024 * 1024;
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: 0, gid: 0 },
      args: [spec.init],
      env: Object.entries({ PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', ...spec.env }).map(([k, v]) => `${k}=${v}`),
      cwd: '/',
      capabilities: { bounding: DEFAULT_CAPS, effective: DEFAULT_CAPS, permitted: DEFAULT_CAPS },
      noNewPrivileges: false,
      ...(opts.rlimits ? { rlimits: opts.rlimits } : {}),
    },
    root: { path: spec.rootfs, readonly: false },
    hostname: spec.hostname,
    ...(opts.loopbackHook ? { hooks: { createRuntime: [{ path: opts.loopbackHook, env: ['CRTOOLS_SCRIPT_ACTION=setup-namespaces'], timeout: 30 }] } } : {}),
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
      ...devMounts(opts, spec),
      { destination: '/dev/pts', type: 'devpts', source: 'devpts', options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', 'gid=5'] },
      { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
      { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
      // Masks firmware tables like runc's maskedPaths would, without a tmpfs.
      { destination: '/sys/firmware', type: 'bind', source: opts.emptyDir, options: ['rbind', ...SYS_MOUNT_OPTIONS] },
      ...cgroupMounts(opts),
    ],
    linux: {
      namespaces: [{ type: 'pid' }, { type: 'network', ...(opts.netns ? { path: opts.netns } : {}) }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }, { type: 'cgroup' }, ...(spec.idmap ? [{ type: 'user' }] : [])],
      // Root in the sandbox is an unprivileged range on the host (see RuntimeSpec.idmap).
      ...(spec.idmap ? { uidMappings: [idMapping(spec.idmap)], gidMappings: [idMapping(spec.idmap)] } : {}),
      cgroupsPath: opts.cgroupsPath,
      resources: {
        memory: { limit: memBytes, ...(opts.swapLimit ? { swap: memBytes } : {}) },
        // No period: CPU_PERIOD_US is the kernel's default, and on cgroup v1 each write runc makes of a CFS
        // setting walks every cgroup on the host (the kernel's bandwidth check): one walk per create, not two.
        cpu: { quota: cpuQuota(spec.limits.cpus) },
        pids: { limit: spec.limits.pids },
        devices: [{ allow: false, access: 'rwm' }],
      },
      seccomp: seccompProfile(),
      // Masking a directory mounts a tmpfs (see mounts): /proc/acpi is only
      // made read-only, which already blocks its one risk (writes to wakeup
      // sources); /sys/firmware gets the empty bind above.
      maskedPaths: [
        '/proc/asound',
        '/proc/kcore',
        '/proc/keys',
        '/proc/latency_stats',
        '/proc/timer_list',
        '/proc/timer_stats',
        '/proc/sched_debug',
        '/proc/scsi',
        '/sys/devices/virtual/powercap',
      ],
      readonlyPaths: ['/proc/acpi', '/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'],
    },
  };
}
