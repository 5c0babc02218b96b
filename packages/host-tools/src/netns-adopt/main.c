/*
 * forkd-netns-adopt PID PATH [--lo-up]: holds PID's network namespace at PATH
 * (a bind mount onto an existing empty file) and, with --lo-up, brings its
 * loopback up. One static process instead of `mount --bind` plus
 * `nsenter … ip link set lo up` at every start and restore in a user
 * namespace, where runc (or CRIU) makes the network namespace and the host
 * adopts it for the port proxy.
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

int main(int argc, char **argv) {
  int lo = argc == 4 && strcmp(argv[3], "--lo-up") == 0;
  char *end;
  long pid = argc >= 3 ? strtol(argv[1], &end, 10) : 0;
  if ((argc != 3 && !lo) || pid <= 0 || *end) {
    fprintf(stderr, "usage: forkd-netns-adopt PID PATH [--lo-up]\n");
    return 2;
  }
  char ns[64];
  snprintf(ns, sizeof(ns), "/proc/%ld/ns/net", pid);
  // The namespace is opened once: the mount and the setns below are of the same one even if PID exits meanwhile.
  int nsfd = open(ns, O_RDONLY | O_CLOEXEC);
  if (nsfd < 0) return fail(ns);
  char src[64];
  snprintf(src, sizeof(src), "/proc/self/fd/%d", nsfd);
  if (mount(src, argv[2], NULL, MS_BIND, NULL) != 0) return fail("bind mount");
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
