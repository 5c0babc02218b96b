/*
 * forkd-netns-adopt [--mount-ns NS] [--replace] PID PATH [--lo-up]: holds
 * PID's network namespace at PATH (a bind mount onto an existing empty file)
 * and, with --lo-up, brings its loopback up. With --mount-ns, in the mount
 * namespace at NS (the holder's: see netns-holder.ts); with --replace, a
 * namespace held at PATH before is let go of first. One static process
 * instead of `nsenter … umount`, `nsenter … mount --bind` and
 * `nsenter … ip link set lo up` at every start and restore in a user
 * namespace, where runc (or CRIU) makes the network namespace and the host
 * adopts it for the port proxy (each process costs a restore milliseconds).
 *
 * forkd-netns-adopt [--mount-ns NS] --release PATH: lets go of the namespace
 * held at PATH (nothing held there is no error). umount(8) would read the
 * whole mount table first, which in the holder's namespace has a line per
 * sandbox: at 10,000 sandboxes that was most of a delete's time.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

static int fail(const char *what) {
  fprintf(stderr, "forkd-netns-adopt: %s: %s\n", what, strerror(errno));
  return 1;
}

static int usage(void) {
  fprintf(stderr, "usage: forkd-netns-adopt [--mount-ns NS] [--replace] PID PATH [--lo-up]\n"
                  "       forkd-netns-adopt [--mount-ns NS] --release PATH\n");
  return 2;
}

static int enter_mount_ns(const char *mntns) {
  if (!mntns) return 0;
  int m = open(mntns, O_RDONLY | O_CLOEXEC);
  if (m < 0) return fail(mntns);
  if (setns(m, CLONE_NEWNS) != 0) return fail("setns mount namespace");
  close(m);
  return 0;
}

/* Not mounted (EINVAL) or no file (ENOENT): nothing was held there. */
static int release(const char *path) {
  return umount2(path, MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT ? fail("unmount") : 0;
}

int main(int argc, char **argv) {
  const char *mntns = NULL;
  int replace = 0, i = 1;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "--mount-ns") == 0 && i + 1 < argc) mntns = argv[++i];
    else if (strcmp(argv[i], "--replace") == 0) replace = 1;
    else break;
  }
  if (!replace && argc - i == 2 && strcmp(argv[i], "--release") == 0) return enter_mount_ns(mntns) ? 1 : release(argv[i + 1]);
  int rest = argc - i;
  int lo = rest == 3 && strcmp(argv[i + 2], "--lo-up") == 0;
  if (rest != 2 && !lo) return usage();
  char *end;
  long pid = strtol(argv[i], &end, 10);
  const char *path = argv[i + 1];
  if (pid <= 0 || *end) return usage();
  char ns[64];
  snprintf(ns, sizeof(ns), "/proc/%ld/ns/net", pid);
  // The namespace is opened once: the mount and the setns below are of the same one even if PID exits meanwhile.
  int nsfd = open(ns, O_RDONLY | O_CLOEXEC);
  if (nsfd < 0) return fail(ns);
  if (enter_mount_ns(mntns)) return 1;
  if (replace && release(path)) return 1;
  char src[64];
  snprintf(src, sizeof(src), "/proc/self/fd/%d", nsfd);
  if (mount(src, path, NULL, MS_BIND, NULL) != 0) return fail("bind mount");
  if (!lo) return 0;
  if (setns(nsfd, CLONE_NEWNET) != 0) return fail("setns");
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return fail("socket");
  struct ifreq ifr;
  memset(&ifr, 0, sizeof(ifr));
  strcpy(ifr.ifr_name, "lo");
  if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0) return fail("SIOCGIFFLAGS lo");
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0) return fail("SIOCSIFFLAGS lo");
  return 0;
}
