/*
 * forkd-uffd-broker SOCK UID: hands an fd of /dev/userfaultfd to the tasks of
 * one lazy restore into a user namespace.
 *
 * A lazy restore has every restored task open its own userfaultfd after it
 * has entered the sandbox's user namespace. The userfaultfd(2) syscall allows
 * that there only with vm.unprivileged_userfaultfd=1, which would hand the
 * primitive to every host user. /dev/userfaultfd (Linux ≥ 6.1) checks only
 * who opened it, and its USERFAULTFD_IOC_NEW makes a userfaultfd for the
 * caller's own memory, so the task must make it itself, with a device fd that
 * root opened: this broker's. It cannot live in CRIU's process: runc moves
 * CRIU into the sandbox's cgroup, whose device rules refuse the open.
 *
 * The socket lies in the images directory, outside the sandbox's root, so
 * only CRIU's tasks reach it (through CRIU's descriptor of that directory, see
 * uffd-preload); it is owned by UID, the root of the sandbox's id range, and
 * only that uid is answered. The runtime kills the broker when the restore
 * returns; it also dies with its parent and after BROKER_DEADLINE_S.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define BROKER_DEADLINE_S 300

static void answer(int c, uid_t uid) {
  struct ucred cred;
  socklen_t len = sizeof(cred);
  int dev = -1;
  if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == uid) dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
  char byte = dev < 0 ? 'E' : 'K';
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof(u));
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
  if (dev >= 0) {
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof(u.buf);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &dev, sizeof(int));
  }
  (void)sendmsg(c, &msg, MSG_NOSIGNAL);
  if (dev >= 0) close(dev);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: forkd-uffd-broker SOCK UID\n");
    return 2;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  alarm(BROKER_DEADLINE_S);
  const char *path = argv[1];
  const char *slash = strrchr(path, '/');
  char *end;
  errno = 0;
  unsigned long uid = strtoul(argv[2], &end, 10);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  char dir[4096], tmp[sizeof(sa.sun_path)], name[sizeof(sa.sun_path)];
  if (errno || *end || uid > 0xfffffffeUL || !slash || slash == path || (size_t)(slash - path) >= sizeof(dir) ||
      snprintf(tmp, sizeof(tmp), "%s.tmp", slash + 1) >= (int)sizeof(tmp) || snprintf(name, sizeof(name), "%s", slash + 1) >= (int)sizeof(name)) {
    fprintf(stderr, "forkd-uffd-broker: bad arguments\n");
    return 2;
  }
  memcpy(dir, path, (size_t)(slash - path));
  dir[slash - path] = 0;
  // Bound through a descriptor of its directory: the images directory's path may be longer than sun_path.
  int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dfd, tmp) >= (int)sizeof(sa.sun_path)) {
    perror("forkd-uffd-broker: images directory");
    return 1;
  }
  int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  unlinkat(dfd, tmp, 0);
  umask(077);
  // Listening before it has its name: a restore that sees the name can connect.
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || fchownat(dfd, tmp, (uid_t)uid, 0, AT_SYMLINK_NOFOLLOW) != 0 || listen(lfd, 64) != 0 ||
      renameat(dfd, tmp, dfd, name) != 0) {
    perror("forkd-uffd-broker");
    unlinkat(dfd, tmp, 0);
    return 1;
  }
  for (;;) {
    int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      perror("forkd-uffd-broker: accept");
      return 1;
    }
    answer(c, (uid_t)uid);
    close(c);
  }
}
