#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *errno_name(int e) {
  const char *s = e > 0 ? strerrorname_np(e) : NULL;
  return s ? s : "EIO";
}

int set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return -1;
  return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int mkdir_one(const char *p, mode_t mode, bool chown_new, uid_t uid, gid_t gid,
                     bool last) {
  if (mkdir(p, mode) == 0) {
    if (chown_new && chown(p, uid, gid) < 0) return -errno;
    return 0;
  }
  int e = errno;
  struct stat st;
  if (e == EEXIST || e == EROFS || e == EACCES || e == EPERM) {
    if (stat(p, &st) == 0) {
      if (S_ISDIR(st.st_mode)) return 0;
      return last ? -EEXIST : -ENOTDIR;
    }
    if (e == EEXIST) return last ? -EEXIST : -ENOTDIR; /* dangling symlink */
  }
  return -e;
}

int mkdir_p(const char *path, mode_t mode, bool chown_new, uid_t uid, gid_t gid) {
  size_t n = strlen(path);
  if (n == 0) return -ENOENT;
  char *p = malloc(n + 1);
  if (!p) return -ENOMEM;
  memcpy(p, path, n + 1);
  while (n > 1 && p[n - 1] == '/') p[--n] = 0;
  int r = 0;
  for (size_t i = 1; i <= n && r == 0; i++) {
    if (p[i] != '/' && p[i] != 0) continue;
    if (p[i - 1] == '/') continue; /* repeated slash */
    char save = p[i];
    p[i] = 0;
    r = mkdir_one(p, mode, chown_new, uid, gid, i == n);
    p[i] = save;
  }
  free(p);
  return r;
}

char *read_small_file(const char *path, size_t max, size_t *lenp) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return NULL;
  size_t cap = 4096, len = 0;
  char *b = malloc(cap + 1);
  while (b) {
    if (len == cap) {
      if (cap >= max) break;
      cap *= 2;
      char *nb = realloc(b, cap + 1);
      if (!nb) {
        free(b);
        b = NULL;
        break;
      }
      b = nb;
    }
    ssize_t r = read(fd, b + len, cap - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
  }
  close(fd);
  if (b) {
    b[len] = 0;
    if (lenp) *lenp = len;
  }
  return b;
}

long self_rss_bytes(void) {
  char buf[128];
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  char *sp = strchr(buf, ' ');
  if (!sp) return -1;
  return strtol(sp + 1, NULL, 10) * sysconf(_SC_PAGESIZE);
}
