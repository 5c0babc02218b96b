/**
 * The sandbox's seccomp filter: default deny. What is not listed answers
 * EPERM, and a syscall the kernel gains later stays closed until someone
 * decides otherwise (runc answers ENOSYS for numbers above the highest one
 * named here that its libseccomp knows, which keeps libc fallbacks working).
 * Modelled on the default profiles of Docker, Podman and containerd, minus
 * what a sandbox for untrusted code has no use for. CRIU works under it: its
 * parasite runs with the filter suspended (it ptraces from the host), and the
 * restorer installs the dumped filter into every task as its last step.
 */

import { allowedIoctls } from './seccomp-ioctl.js';

export const EPERM = 1;
export const ENOSYS = 38;

/** The namespace bits of clone(2)'s flags (CLONE_NEWTIME only exists for unshare and clone3, both closed). */
export const CLONE_NAMESPACE_FLAGS = {
  CLONE_NEWNS: 0x00020000,
  CLONE_NEWCGROUP: 0x02000000,
  CLONE_NEWUTS: 0x04000000,
  CLONE_NEWIPC: 0x08000000,
  CLONE_NEWUSER: 0x10000000,
  CLONE_NEWPID: 0x20000000,
  CLONE_NEWNET: 0x40000000,
} as const;

const CLONE_NAMESPACE_MASK = Object.values(CLONE_NAMESPACE_FLAGS).reduce((a, b) => a | b, 0);

/**
 * Socket families ordinary programs use (AF_UNIX, AF_INET, AF_INET6,
 * AF_NETLINK for `ip` and getaddrinfo). The rest (packet, vsock, alg, rds,
 * the ham-radio families, …) are autoloaded kernel modules with a history of
 * local privilege escalations, and sandboxes have only loopback anyway.
 */
const SOCKET_FAMILIES = [1, 2, 10, 16];

/**
 * personality(2) values Docker allows: PER_LINUX, PER_LINUX32, UNAME26 and
 * their combination, and the query. Not ADDR_NO_RANDOMIZE or
 * READ_IMPLIES_EXEC, which weaken the process's own exploit mitigations.
 */
const PERSONALITIES = [0x0, 0x8, 0x20000, 0x20008, 0xffffffff];

/**
 * Allowed without conditions (x86_64 names). Left out on purpose, besides
 * what needs a capability sandboxes lack: io_uring (the largest source of
 * kernel LPEs of recent years), userfaultfd and perf (exploit primitives),
 * bpf, keyrings (not namespaced), name_to_handle_at/open_by_handle_at
 * (the "shocker" escape), kcmp/pidfd_getfd, modify_ldt, NUMA policy calls,
 * and the obsolete ones (uselib, ustat, sysfs, _sysctl, nfsservctl, …).
 */
export const ALLOWED_SYSCALLS = [
  // processes, threads, scheduling
  'arch_prctl', 'brk', 'capget', 'capset', 'execve', 'execveat', 'exit', 'exit_group', 'fork', 'vfork',
  'getpid', 'getppid', 'gettid', 'getpgid', 'getpgrp', 'getsid', 'setsid', 'setpgid',
  'get_robust_list', 'set_robust_list', 'set_tid_address', 'get_thread_area', 'set_thread_area', 'rseq', 'membarrier',
  'prctl', 'prlimit64', 'getrlimit', 'setrlimit', 'getrusage', 'getpriority', 'setpriority', 'times', 'uname', 'sysinfo', 'umask',
  'kill', 'tgkill', 'tkill', 'wait4', 'waitid', 'pidfd_open', 'pidfd_send_signal', 'restart_syscall',
  'sched_getaffinity', 'sched_setaffinity', 'sched_getattr', 'sched_setattr', 'sched_getparam', 'sched_setparam',
  'sched_getscheduler', 'sched_setscheduler', 'sched_get_priority_max', 'sched_get_priority_min', 'sched_rr_get_interval',
  'sched_yield', 'getcpu', 'ioprio_get', 'ioprio_set', 'seccomp', 'landlock_create_ruleset', 'landlock_add_rule', 'landlock_restrict_self',
  // debuggers inside the sandbox (the agent, PID 1, is not dumpable: no CAP_SYS_PTRACE, no attach)
  'ptrace', 'process_vm_readv', 'process_vm_writev',
  // credentials
  'getuid', 'geteuid', 'getgid', 'getegid', 'getresuid', 'getresgid', 'getgroups',
  'setuid', 'setgid', 'setreuid', 'setregid', 'setresuid', 'setresgid', 'setgroups', 'setfsuid', 'setfsgid',
  // signals and timers
  'rt_sigaction', 'rt_sigprocmask', 'rt_sigreturn', 'rt_sigpending', 'rt_sigsuspend', 'rt_sigtimedwait',
  'rt_sigqueueinfo', 'rt_tgsigqueueinfo', 'sigaltstack', 'signalfd', 'signalfd4', 'pause', 'alarm', 'getitimer', 'setitimer',
  'nanosleep', 'clock_nanosleep', 'clock_gettime', 'clock_getres', 'gettimeofday', 'time', 'adjtimex', 'clock_adjtime',
  'timer_create', 'timer_settime', 'timer_gettime', 'timer_getoverrun', 'timer_delete',
  'timerfd_create', 'timerfd_settime', 'timerfd_gettime', 'getrandom',
  // memory
  'mmap', 'munmap', 'mprotect', 'mremap', 'madvise', 'mincore', 'msync', 'mlock', 'mlock2', 'mlockall', 'munlock', 'munlockall',
  'remap_file_pages', 'pkey_alloc', 'pkey_free', 'pkey_mprotect', 'memfd_create', 'memfd_secret', 'map_shadow_stack', 'mseal', 'cachestat',
  // files
  'read', 'write', 'readv', 'writev', 'pread64', 'pwrite64', 'preadv', 'pwritev', 'preadv2', 'pwritev2',
  'open', 'openat', 'openat2', 'creat', 'close', 'close_range', 'dup', 'dup2', 'dup3', 'fcntl', 'flock', 'lseek',
  'stat', 'fstat', 'lstat', 'newfstatat', 'statx', 'statfs', 'fstatfs', 'access', 'faccessat', 'faccessat2',
  'chmod', 'fchmod', 'fchmodat', 'fchmodat2', 'chown', 'fchown', 'lchown', 'fchownat',
  'truncate', 'ftruncate', 'fallocate', 'fadvise64', 'readahead', 'fsync', 'fdatasync', 'sync', 'syncfs', 'sync_file_range',
  'rename', 'renameat', 'renameat2', 'link', 'linkat', 'symlink', 'symlinkat', 'unlink', 'unlinkat',
  'mkdir', 'mkdirat', 'rmdir', 'mknod', 'mknodat', 'readlink', 'readlinkat', 'getdents', 'getdents64',
  'getcwd', 'chdir', 'fchdir', 'chroot', 'utime', 'utimes', 'utimensat', 'futimesat',
  'copy_file_range', 'sendfile', 'splice', 'tee', 'vmsplice',
  'getxattr', 'lgetxattr', 'fgetxattr', 'listxattr', 'llistxattr', 'flistxattr', 'setxattr', 'lsetxattr', 'fsetxattr',
  'removexattr', 'lremovexattr', 'fremovexattr', 'getxattrat', 'setxattrat', 'listxattrat', 'removexattrat', 'file_getattr', 'file_setattr',
  'inotify_init', 'inotify_init1', 'inotify_add_watch', 'inotify_rm_watch',
  // waiting, events, asynchronous I/O (the old AIO that databases use, not io_uring)
  'poll', 'ppoll', 'select', 'pselect6', 'epoll_create', 'epoll_create1', 'epoll_ctl', 'epoll_wait', 'epoll_pwait', 'epoll_pwait2',
  'eventfd', 'eventfd2', 'pipe', 'pipe2', 'futex', 'futex_waitv', 'futex_wake', 'futex_wait', 'futex_requeue',
  'io_setup', 'io_destroy', 'io_submit', 'io_cancel', 'io_getevents', 'io_pgetevents',
  // System V and POSIX IPC (the sandbox has its own IPC namespace)
  'shmget', 'shmat', 'shmdt', 'shmctl', 'semget', 'semop', 'semtimedop', 'semctl', 'msgget', 'msgsnd', 'msgrcv', 'msgctl',
  'mq_open', 'mq_unlink', 'mq_timedsend', 'mq_timedreceive', 'mq_notify', 'mq_getsetattr',
  // sockets (socket itself is filtered by family below)
  'socketpair', 'bind', 'connect', 'listen', 'accept', 'accept4', 'getsockname', 'getpeername', 'getsockopt', 'setsockopt',
  'sendto', 'recvfrom', 'sendmsg', 'recvmsg', 'sendmmsg', 'recvmmsg', 'shutdown',
];

/**
 * Named only to document that they are refused on purpose (a test checks each
 * is absent from the allowed set): everything else not in ALLOWED_SYSCALLS is refused
 * the same way.
 */
export const DENIED_ON_PURPOSE = [
  'unshare', 'setns', 'clone3', 'io_uring_setup', 'io_uring_enter', 'io_uring_register', 'bpf', 'perf_event_open',
  'keyctl', 'add_key', 'request_key', 'userfaultfd', 'mount', 'umount2', 'pivot_root', 'fsopen', 'fsconfig', 'fsmount',
  'fspick', 'move_mount', 'open_tree', 'mount_setattr', 'init_module', 'finit_module', 'delete_module', 'kexec_load',
  'kexec_file_load', 'reboot', 'swapon', 'swapoff', 'acct', 'quotactl', 'quotactl_fd', 'lookup_dcookie', 'uselib', 'ustat',
  'sysfs', '_sysctl', 'nfsservctl', 'name_to_handle_at', 'open_by_handle_at', 'syslog', 'vhangup', 'sethostname',
  'setdomainname', 'settimeofday', 'clock_settime', 'iopl', 'ioperm', 'modify_ldt', 'kcmp', 'pidfd_getfd', 'process_madvise',
  'fanotify_init', 'mbind', 'set_mempolicy', 'get_mempolicy', 'migrate_pages', 'move_pages', 'listmount', 'statmount',
];

interface SeccompArg {
  index: number;
  value: number;
  valueTwo?: number;
  op: 'SCMP_CMP_EQ' | 'SCMP_CMP_NE' | 'SCMP_CMP_MASKED_EQ';
}

interface SeccompRule {
  names: string[];
  action: 'SCMP_ACT_ALLOW' | 'SCMP_ACT_ERRNO';
  errnoRet?: number;
  args?: SeccompArg[];
}

export interface SeccompProfile {
  defaultAction: 'SCMP_ACT_ERRNO';
  defaultErrnoRet: number;
  architectures: string[];
  syscalls: SeccompRule[];
}

/**
 * Only the native ABI: syscalls through the 32-bit entry points (int 0x80,
 * x32) kill the calling thread. The compat paths have carried their own
 * exploitable bugs (CVE-2021-22555 went through compat setsockopt), and
 * nothing in a 64-bit sandbox needs them.
 */
function nativeArchitectures(arch: string): string[] {
  switch (arch) {
    case 'x64':
      return ['SCMP_ARCH_X86_64'];
    case 'arm64':
      return ['SCMP_ARCH_AARCH64'];
    default:
      throw new Error(`no seccomp architecture for ${arch}`);
  }
}

/** The OCI `linux.seccomp` of every sandbox. */
export function seccompProfile(arch: string = process.arch): SeccompProfile {
  return {
    defaultAction: 'SCMP_ACT_ERRNO',
    defaultErrnoRet: EPERM,
    architectures: nativeArchitectures(arch),
    syscalls: [
      { names: ALLOWED_SYSCALLS, action: 'SCMP_ACT_ALLOW' },
      // fork, vfork, threads and posix_spawn pass; any namespace bit is refused.
      { names: ['clone'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: CLONE_NAMESPACE_MASK, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }] },
      // Its flags are in memory a filter cannot read: "not implemented" makes
      // glibc (pthread_create, posix_spawn) fall back to clone, filtered above.
      { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS },
      ...SOCKET_FAMILIES.map((family): SeccompRule => ({ names: ['socket'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: family, op: 'SCMP_CMP_EQ' }] })),
      // Every request but filesystem administration (see seccomp-ioctl.ts); the rest meets the default.
      ...allowedIoctls().map((m): SeccompRule => ({ names: ['ioctl'], action: 'SCMP_ACT_ALLOW', args: [{ index: 1, value: m.mask, valueTwo: m.value, op: 'SCMP_CMP_MASKED_EQ' }] })),
      ...PERSONALITIES.map((p): SeccompRule => ({ names: ['personality'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: p, op: 'SCMP_CMP_EQ' }] })),
    ],
  };
}
