import type { RuntimeSpec } from './runtime.js';

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

/** Syscalls that reach kernel-global state; denied with EPERM (allow-by-default keeps CRIU's parasite and ordinary tools working). */
const DENIED_SYSCALLS = [
  'acct',
  'add_key',
  'bpf',
  'delete_module',
  'finit_module',
  'fsconfig',
  'fsmount',
  'fsopen',
  'fspick',
  'init_module',
  'kexec_file_load',
  'kexec_load',
  'keyctl',
  'lookup_dcookie',
  'mount',
  'mount_setattr',
  'move_mount',
  'name_to_handle_at',
  'nfsservctl',
  'open_by_handle_at',
  'open_tree',
  'perf_event_open',
  'pivot_root',
  'quotactl',
  'reboot',
  'request_key',
  'setns',
  'swapoff',
  'swapon',
  'syslog',
  'umount2',
  'unshare',
  'userfaultfd',
  'vhangup',
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
}

/** Builds the OCI runtime config.json of a sandbox (pure; tested without root). */
export function buildOciSpec(spec: RuntimeSpec, opts: OciOptions): Record<string, unknown> {
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
    },
    root: { path: spec.rootfs, readonly: false },
    hostname: spec.hostname,
    // No tmpfs anywhere: CRIU archives every tmpfs with tar at each dump and
    // unpacks it at each restore (~3.5 ms each way per mount). /dev and
    // /dev/shm are directories of the sandbox's own root (runc makes the
    // device nodes there; the devices cgroup still decides what opens), so
    // the Btrfs snapshot takes them along with everything else.
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
      { destination: '/dev/pts', type: 'devpts', source: 'devpts', options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', 'gid=5'] },
      { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
      { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
      // Masks firmware tables like runc's maskedPaths would, without a tmpfs.
      { destination: '/sys/firmware', type: 'bind', source: opts.emptyDir, options: ['rbind', 'ro', 'nosuid', 'noexec', 'nodev'] },
      // Tools size themselves from their limits here (JVM, Go, Node's heap).
      { destination: '/sys/fs/cgroup', type: 'cgroup', source: 'cgroup', options: ['nosuid', 'noexec', 'nodev', 'relatime', 'ro'] },
    ],
    linux: {
      namespaces: [{ type: 'pid' }, { type: 'network', ...(opts.netns ? { path: opts.netns } : {}) }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }, { type: 'cgroup' }],
      cgroupsPath: opts.cgroupsPath,
      resources: {
        memory: { limit: memBytes, ...(opts.swapLimit ? { swap: memBytes } : {}) },
        cpu: { quota: cpuQuota(spec.limits.cpus), period: CPU_PERIOD_US },
        pids: { limit: spec.limits.pids },
        devices: [{ allow: false, access: 'rwm' }],
      },
      seccomp: {
        defaultAction: 'SCMP_ACT_ALLOW',
        architectures: ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32'],
        syscalls: [{ names: DENIED_SYSCALLS, action: 'SCMP_ACT_ERRNO', errnoRet: 1 }],
      },
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
