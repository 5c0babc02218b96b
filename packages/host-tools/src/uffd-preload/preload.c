/*
 * libforkd-uffd.so: preloaded into criu by its wrapper when the runtime sets
 * FORKD_UFFD_SOCK or FORKD_LAZY_WAIT_MS, for lazy restores.
 *
 * FORKD_LAZY_WAIT_MS=N: a lazy restore's runc starts beside its `criu
 * lazy-pages` daemon instead of after it listens (its start took ~8 ms of
 * every lazy resume's path). CRIU connects to the daemon's socket once, early
 * in the restore, and fails if nobody listens yet: connect() to a socket named
 * lazy-pages.socket (or to the broker's) is tried again while it is absent or
 * refused, for up to N ms, or until the process FORKD_LAZY_PID (the daemon)
 * is gone. A daemon that never listens fails the restore then, as an
 * unanswered connect did before; the runtime restores eagerly.
 *
 * FORKD_UFFD_SOCK: for lazy restores into a user namespace (see
 * forkd-uffd-broker for why). It wraps libc's syscall(): when CRIU's
 * syscall(SYS_userfaultfd) is refused with EPERM inside the namespace, the
 * restoring task asks the broker for an fd of /dev/userfaultfd, makes its
 * userfaultfd with it and closes it at once, before any sandbox code runs.
 *
 * The task's root and cwd are the sandbox's by then; the broker's socket lies
 * in the images directory, which CRIU keeps open as a service fd in every
 * task: it is found by the device and inode recorded at load time, and the
 * socket is reached relative to it.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

typedef long (*syscall_fn)(long, ...);
typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

static syscall_fn real_syscall;
static connect_fn real_connect;
static long wait_ms;
static pid_t daemon_pid;
static int armed;
static dev_t images_dev;
static ino_t images_ino;
static char sock_name[108];

__attribute__((constructor)) static void init(void) {
  real_syscall = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
  real_connect = (connect_fn)dlsym(RTLD_NEXT, "connect");
  const char *wait = getenv("FORKD_LAZY_WAIT_MS");
  char *end = NULL;
  long ms = wait ? strtol(wait, &end, 10) : 0;
  if (wait && end && *end == 0 && ms > 0 && ms <= 600000) wait_ms = ms;
  const char *pid = getenv("FORKD_LAZY_PID");
  long p = pid ? strtol(pid, &end, 10) : 0;
  if (pid && end && *end == 0 && p > 1 && p < (1L << 22)) daemon_pid = (pid_t)p;
  const char *path = getenv("FORKD_UFFD_SOCK");
  const char *slash = path ? strrchr(path, '/') : NULL;
  if (!slash || slash == path || strlen(slash + 1) >= sizeof(sock_name)) return;
  char dir[4096];
  size_t dlen = (size_t)(slash - path);
  if (dlen >= sizeof(dir)) return;
  memcpy(dir, path, dlen);
  dir[dlen] = 0;
  struct stat st;
  if (stat(dir, &st) != 0) return;
  images_dev = st.st_dev;
  images_ino = st.st_ino;
  strcpy(sock_name, slash + 1);
  armed = 1;
}

static int is_images_dir(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == images_dev && st.st_ino == images_ino;
}

/* The images directory's service fd: listed by /proc if the task's /proc is there, else by trying every fd. */
static int find_images_fd(void) {
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    struct dirent *e;
    int found = -1;
    while (found < 0 && (e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      int fd = atoi(e->d_name);
      if (fd != dirfd(d) && is_images_dir(fd)) found = fd;
    }
    closedir(d);
    if (found >= 0) return found;
  }
  struct rlimit rl;
  long top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1u << 20) ? (long)rl.rlim_cur : (1L << 20);
  for (long fd = top - 1; fd >= 0; fd--)
    if (fcntl((int)fd, F_GETFD) >= 0 && is_images_dir((int)fd)) return (int)fd;
  return -1;
}

static long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

/* A daemon's socket (by its last path element) that may not listen yet when CRIU first connects. */
static int awaited_socket(const struct sockaddr *sa, socklen_t len) {
  if (!sa || len <= offsetof(struct sockaddr_un, sun_path) || sa->sa_family != AF_UNIX) return 0;
  const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
  size_t n = strnlen(un->sun_path, len - offsetof(struct sockaddr_un, sun_path));
  if (n == 0 || n >= sizeof(un->sun_path)) return 0;
  char path[sizeof(un->sun_path)];
  memcpy(path, un->sun_path, n);
  path[n] = 0;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return strcmp(base, "lazy-pages.socket") == 0 || (armed && strcmp(base, sock_name) == 0);
}

/* The daemon named by FORKD_LAZY_PID ended before it listened: it never will. errno kept (the connect's). */
static int daemon_gone(void) {
  int saved = errno;
  int gone = daemon_pid && kill(daemon_pid, 0) != 0 && errno == ESRCH;
  errno = saved;
  return gone;
}

int connect(int fd, const struct sockaddr *sa, socklen_t len) {
  int r = real_connect(fd, sa, len);
  if (r == 0 || wait_ms == 0 || (errno != ENOENT && errno != ECONNREFUSED) || !awaited_socket(sa, len)) return r;
  long deadline = now_ms() + wait_ms;
  while (now_ms() < deadline && !daemon_gone()) {
    /* 200 us: the daemon listens within ~10 ms; a refused connect leaves the socket fd reusable. */
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 200000};
    nanosleep(&pause, NULL);
    r = real_connect(fd, sa, len);
    if (r == 0 || (errno != ENOENT && errno != ECONNREFUSED)) return r;
  }
  return r;
}

static int receive_device(int s) {
  char byte = 0;
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
  if (recvmsg(s, &msg, MSG_CMSG_CLOEXEC) != 1 || byte != 'K') return -1;
  struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
  if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int))) return -1;
  int fd;
  memcpy(&fd, CMSG_DATA(cm), sizeof(int));
  return fd;
}

/* A userfaultfd for this task's memory through the broker's device fd; -1 with errno EPERM if none. */
static long uffd_via_broker(long flags) {
  int images = find_images_fd();
  int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  long uffd = -1;
  if (images >= 0 && cwd >= 0 && s >= 0 && fchdir(images) == 0) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    strcpy(sa.sun_path, sock_name);
    int connected = connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (fchdir(cwd) == 0 && connected) {
      int dev = receive_device(s);
      if (dev >= 0) {
        uffd = ioctl(dev, USERFAULTFD_IOC_NEW, (int)flags);
        close(dev);
      }
    }
  }
  if (s >= 0) close(s);
  if (cwd >= 0) close(cwd);
  if (uffd < 0) errno = EPERM;
  return uffd;
}

long syscall(long n, ...) {
  va_list ap;
  va_start(ap, n);
  long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
  long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
  va_end(ap);
  long r = real_syscall(n, a1, a2, a3, a4, a5, a6);
  if (n == SYS_userfaultfd && r < 0 && errno == EPERM && armed) return uffd_via_broker(a1);
  return r;
}
