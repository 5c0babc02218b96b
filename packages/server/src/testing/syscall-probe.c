/* syscall-probe: one attack (or one ordinary operation) per invocation, run
   inside a sandbox by the adversarial suite. Prints "ok" (or "ok:DATA") when
   the kernel let it through and the errno's name when it was refused, and
   exits 0 either way, so a crash (SIGSYS) is told apart from a refusal.
   Built static on the host: it needs nothing from the sandbox's root. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/btrfs.h>
#include <linux/fs.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static int report(long r) {
  if (r < 0) {
    const char *n = strerrorname_np(errno);
    printf("%s\n", n ? n : "E?");
  } else {
    printf("ok\n");
  }
  return 0;
}

static unsigned long ns_flag(const char *name) {
  static const struct { const char *n; unsigned long f; } t[] = {
      {"none", 0},
      {"newuser", CLONE_NEWUSER},
      {"newns", CLONE_NEWNS},
      {"newnet", CLONE_NEWNET},
      {"newpid", CLONE_NEWPID},
      {"newipc", CLONE_NEWIPC},
      {"newuts", CLONE_NEWUTS},
      {"newcgroup", CLONE_NEWCGROUP},
      {"newtime", CLONE_NEWTIME},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (strcmp(t[i].n, name) == 0) return t[i].f;
  fprintf(stderr, "unknown flag %s\n", name);
  exit(2);
}

/* A child made by a raw clone runs on a copy of our stack: it leaves at once. */
static int reap(long pid) {
  if (pid == 0) syscall(SYS_exit, 0);
  if (pid > 0) waitpid((pid_t)pid, NULL, __WALL);
  return report(pid);
}

static int do_clone(const char *flag) {
  return reap(syscall(SYS_clone, ns_flag(flag) | SIGCHLD, 0, 0, 0, 0));
}

static int do_clone3(const char *flag) {
  struct clone_args a = {.flags = ns_flag(flag), .exit_signal = SIGCHLD};
  return reap(syscall(SYS_clone3, &a, sizeof a));
}

static int do_read(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return report(-1);
  char buf[256];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  if (n < 0) return report(-1);
  buf[n] = 0;
  buf[strcspn(buf, "\n")] = 0;
  printf("ok:%s\n", buf);
  return 0;
}

static int do_write(const char *path, const char *data) {
  int fd = open(path, O_WRONLY);
  if (fd < 0) return report(-1);
  return report(write(fd, data, strlen(data)));
}

static int do_ptrace(const char *how, pid_t pid) {
  long r = strcmp(how, "seize") == 0 ? ptrace(PTRACE_SEIZE, pid, 0, 0) : ptrace(PTRACE_ATTACH, pid, 0, 0);
  if (r == 0) {
    if (strcmp(how, "attach") == 0) waitpid(pid, NULL, __WALL);
    ptrace(PTRACE_DETACH, pid, 0, 0);
  }
  return report(r);
}

/* The classic chroot escape: a chroot below the cwd, then ".." past it. */
static int do_chroot_escape(const char *path) {
  mkdir("/tmp/.probe-jail", 0700);
  if (chroot("/tmp/.probe-jail") < 0) return report(-1);
  for (int i = 0; i < 64; i++)
    if (chdir("..") < 0) return report(-1);
  if (chroot(".") < 0) return report(-1);
  return do_read(path);
}

/* "shocker": a file handle made up for the host's root opened directly. */
static int do_open_by_handle(void) {
  struct { struct file_handle h; unsigned char bytes[128]; } fh = {.h.handle_bytes = 128};
  int mount_id;
  if (name_to_handle_at(AT_FDCWD, "/", &fh.h, &mount_id, 0) < 0) {
    fh.h.handle_bytes = 8;
    fh.h.handle_type = 1;
    memset(fh.h.f_handle, 0, 8);
    fh.h.f_handle[0] = 2; /* inode 2: the root of most filesystems */
  }
  int dir = open("/", O_RDONLY | O_DIRECTORY);
  return report(open_by_handle_at(dir, &fh.h, O_RDONLY));
}

/* A 32-bit syscall from a 64-bit process: getpid through int 0x80. */
static int do_int80(void) {
  long r;
  __asm__ volatile("int $0x80" : "=a"(r) : "a"(20) : "memory");
  if (r < 0) errno = (int)-r;
  return report(r);
}

static void *thread_main(void *arg) { return arg; }

static int do_threads(int n) {
  for (int i = 0; i < n; i++) {
    pthread_t t;
    int e = pthread_create(&t, NULL, thread_main, NULL);
    if (e) { errno = e; return report(-1); }
    pthread_join(t, NULL);
  }
  return report(0);
}

static int do_mknod_block(unsigned maj, unsigned min) {
  const char *p = "/tmp/.probe-blk";
  unlink(p);
  long r = mknod(p, S_IFBLK | 0600, makedev(maj, min));
  const char *made = r < 0 ? strerrorname_np(errno) : "ok";
  long fd = r < 0 ? -1 : open(p, O_RDONLY);
  const char *opened = r < 0 ? "-" : fd < 0 ? strerrorname_np(errno) : "ok";
  unlink(p);
  printf("mknod=%s open=%s\n", made, opened);
  return 0;
}

/* ioctl's cmd with HIGH in its upper 32 bits: the kernel reads only the low
   32, so a filter that compared all 64 would let the same call through. */
static unsigned long ioctl_cmd(unsigned long cmd, const char *high) {
  return *high ? cmd | (strtoul(high, NULL, 0) << 32) : cmd;
}

/* A Btrfs subvolume (or, with a source, a snapshot of it) at PATH, by the raw ioctl. */
static int do_subvol(const char *path, const char *snap_of, const char *high) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash || !slash[1]) { errno = EINVAL; return report(-1); }
  *slash = 0;
  struct btrfs_ioctl_vol_args a = {0};
  snprintf(a.name, sizeof a.name, "%s", slash + 1);
  int dfd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY);
  if (dfd < 0) return report(-1);
  unsigned long cmd = BTRFS_IOC_SUBVOL_CREATE;
  if (*snap_of) {
    a.fd = open(snap_of, O_RDONLY | O_DIRECTORY);
    if (a.fd < 0) return report(-1);
    cmd = BTRFS_IOC_SNAP_CREATE;
  }
  return report(syscall(SYS_ioctl, dfd, ioctl_cmd(cmd, high), &a));
}

/* Any ioctl on PATH ("pipe": the read end of a new pipe) with a zeroed buffer as its argument. */
static int do_ioctl(const char *path, const char *cmd, const char *high) {
  static unsigned char buf[65536];
  int fd, p[2];
  if (!strcmp(path, "pipe")) {
    if (pipe(p) < 0) return report(-1);
    fd = p[0];
  } else {
    fd = open(path, O_RDONLY | O_NONBLOCK);
  }
  if (fd < 0) return report(-1);
  return report(syscall(SYS_ioctl, fd, ioctl_cmd(strtoul(cmd, NULL, 0), high), buf));
}

/* FIDEDUPERANGE of LEN bytes of SRC onto DST (what dedupe tools and forkd's own snapshots use). */
static int do_dedupe(const char *src, const char *dst, const char *len) {
  int s = open(src, O_RDONLY), d = open(dst, O_RDWR);
  if (s < 0 || d < 0) return report(-1);
  struct { struct file_dedupe_range r; struct file_dedupe_range_info i; } a = {0};
  a.r.src_length = strtoull(len, NULL, 0);
  a.r.dest_count = 1;
  a.i.dest_fd = d;
  if (ioctl(s, FIDEDUPERANGE, &a) < 0) return report(-1);
  if (a.i.status != FILE_DEDUPE_RANGE_SAME) { errno = a.i.status < 0 ? -a.i.status : EIO; return report(-1); }
  return report(0);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc < 2) return 2;
  const char *c = argv[1];
  const char *a = argc > 2 ? argv[2] : "";
  const char *b = argc > 3 ? argv[3] : "";
  if (!strcmp(c, "clone")) return do_clone(a);
  if (!strcmp(c, "clone3")) return do_clone3(a);
  if (!strcmp(c, "unshare")) return report(unshare((int)ns_flag(a)));
  if (!strcmp(c, "setns")) {
    int fd = open(a, O_RDONLY);
    return fd < 0 ? report(-1) : report(setns(fd, 0));
  }
  if (!strcmp(c, "fork")) return reap(fork());
  if (!strcmp(c, "threads")) return do_threads(atoi(a));
  if (!strcmp(c, "io_uring_setup")) {
    unsigned char params[120] = {0};
    return report(syscall(SYS_io_uring_setup, 4, params));
  }
  if (!strcmp(c, "bpf")) {
    union bpf_attr at = {.map_type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 4, .max_entries = 1};
    return report(syscall(SYS_bpf, BPF_MAP_CREATE, &at, sizeof at));
  }
  if (!strcmp(c, "keyctl")) return report(syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "forkd-probe"));
  if (!strcmp(c, "add_key")) return report(syscall(SYS_add_key, "user", "forkd-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING));
  if (!strcmp(c, "userfaultfd")) return report(syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY));
  if (!strcmp(c, "perf_event_open")) {
    struct perf_event_attr pa = {.type = PERF_TYPE_SOFTWARE, .size = sizeof pa, .config = PERF_COUNT_SW_CPU_CLOCK, .exclude_kernel = 1, .exclude_hv = 1};
    return report(syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0));
  }
  if (!strcmp(c, "mount")) return report(mount("none", "/mnt", "tmpfs", 0, NULL));
  if (!strcmp(c, "umount")) return report(umount2(a, MNT_DETACH));
  if (!strcmp(c, "fsopen")) return report(syscall(SYS_fsopen, "tmpfs", 0));
  if (!strcmp(c, "open_tree")) return report(syscall(SYS_open_tree, AT_FDCWD, "/", 1 /* OPEN_TREE_CLONE */));
  if (!strcmp(c, "pivot_root")) return report(syscall(SYS_pivot_root, "/tmp", "/tmp"));
  /* The next ones are harmless if a regression let them through: a module
     that does not exist, invalid kexec flags, a wrong reboot magic. */
  if (!strcmp(c, "init_module")) return report(syscall(SYS_init_module, NULL, 0, ""));
  if (!strcmp(c, "delete_module")) return report(syscall(SYS_delete_module, "forkd_probe_none", O_NONBLOCK));
  if (!strcmp(c, "kexec_load")) return report(syscall(SYS_kexec_load, 0, 0, NULL, 0xdead0000UL));
  if (!strcmp(c, "reboot")) return report(syscall(SYS_reboot, 0, 0, 0, NULL));
  if (!strcmp(c, "swapon")) return report(syscall(SYS_swapon, "/nonexistent", 0));
  if (!strcmp(c, "personality")) return report(personality(strtoul(a, NULL, 0)));
  if (!strcmp(c, "socket")) return report(socket(atoi(a), atoi(b), 0));
  if (!strcmp(c, "mknod-block")) return do_mknod_block((unsigned)atoi(a), (unsigned)atoi(b));
  if (!strcmp(c, "read")) return do_read(a);
  if (!strcmp(c, "write")) return do_write(a, b);
  if (!strcmp(c, "ptrace")) return do_ptrace(a, (pid_t)atoi(b));
  if (!strcmp(c, "chroot-escape")) return do_chroot_escape(a);
  if (!strcmp(c, "open_by_handle_at")) return do_open_by_handle();
  if (!strcmp(c, "int80")) return do_int80();
  if (!strcmp(c, "subvol-create")) return do_subvol(a, "", b);
  if (!strcmp(c, "snapshot-create")) return do_subvol(b, a, argc > 4 ? argv[4] : "");
  if (!strcmp(c, "ioctl")) return do_ioctl(a, b, argc > 4 ? argv[4] : "");
  if (!strcmp(c, "dedupe")) return do_dedupe(a, b, argc > 4 ? argv[4] : "0");
  fprintf(stderr, "unknown probe %s\n", c);
  return 2;
}
