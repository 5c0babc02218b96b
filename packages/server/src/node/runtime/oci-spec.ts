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
    // /dev is a fresh tmpfs at every start, never the root's own directory:
    // a template shapes its root, and runc uses what it finds in /dev (the
    // 2025 masked-path CVEs: a planted /dev/null symlink is what runc then
    // bind-mounts over /proc paths). /dev/shm is a directory of it that the
    // guest agent makes at start (POSIX shm, multiprocessing), so the host
    // never creates or chmods anything in the root for it. CRIU dumps a
    // tmpfs's content with tar and unpacks it at restore (15-20 ms each way
    // on the 2-core bench machine, inside the freeze: see cgroupMounts), so
    // it survives snapshot, fork and resume; one tmpfs, not two (/dev/shm of
    // its own would cost as much again).
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
      // No size: /dev/shm lives here, and shm pages are charged to the sandbox's memory cgroup, which bounds them.
      { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755'] },
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
        cpu: { quota: cpuQuota(spec.limits.cpus), period: CPU_PERIOD_US },
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
