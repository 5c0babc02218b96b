#include "xattrs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#define USER_NS "user."
#define USER_NS_LEN 5
#define NAME_MAX_XATTR 255 /* the VFS limit of a whole xattr name */
#define LIST_MAX 65536     /* the VFS limit of a listxattr answer */

/* The agent is single-threaded: one listing buffer serves every call. */
static char names[LIST_MAX];
static char value[MAX_XATTR_VALUE + 1];

const char *xattrs_check(const struct req *r) {
  if (r->nxattrs > MAX_XATTRS) return "too many XATTR entries";
  for (size_t i = 0; i < r->nxattrs; i++) {
    const char *s = r->xattrs[i], *eq = strchr(s, '=');
    if (!eq || eq == s) return "XATTR must be name=value with a non-empty name";
    if ((size_t)(eq - s) + USER_NS_LEN > NAME_MAX_XATTR) return "XATTR name too long";
    if (strlen(eq + 1) > MAX_XATTR_VALUE) return "XATTR value too long";
  }
  return NULL;
}

/* Is user.<n> (n: the part after "user.") in the request's list? */
static bool listed(const struct req *r, const char *n) {
  size_t nl = strlen(n);
  for (size_t i = 0; i < r->nxattrs; i++) {
    const char *s = r->xattrs[i];
    if (strncmp(s, n, nl) == 0 && s[nl] == '=') return true;
  }
  return false;
}

static bool unsupported(int e) { return e == ENOTSUP || e == EOPNOTSUPP; }

int xattrs_apply(int fd, const struct req *r) {
  const char *prefix = req_str(r, K_XATTR_REPLACE);
  char name[NAME_MAX_XATTR + 1];
  if (prefix) {
    ssize_t n = flistxattr(fd, names, sizeof names);
    if (n < 0) return unsupported(errno) ? 0 : errno;
    size_t pl = strlen(prefix);
    for (ssize_t off = 0; off < n; off += (ssize_t)strlen(names + off) + 1) {
      const char *nm = names + off;
      if (strncmp(nm, USER_NS, USER_NS_LEN) != 0 || strncmp(nm + USER_NS_LEN, prefix, pl) != 0) continue;
      if (listed(r, nm + USER_NS_LEN)) continue;
      if (fremovexattr(fd, nm) < 0 && errno != ENODATA) return errno;
    }
  }
  for (size_t i = 0; i < r->nxattrs; i++) {
    const char *s = r->xattrs[i], *eq = strchr(s, '=');
    size_t kl = (size_t)(eq - s); /* checked by xattrs_check */
    memcpy(name, USER_NS, USER_NS_LEN);
    memcpy(name + USER_NS_LEN, s, kl);
    name[USER_NS_LEN + kl] = 0;
    if (fsetxattr(fd, name, eq + 1, strlen(eq + 1), 0) < 0) {
      if (unsupported(errno)) return 0;
      return errno;
    }
  }
  return 0;
}

void xattrs_report(struct buf *b, int dfd, const char *name, const struct stat *st) {
  if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)) return; /* the VFS allows user.* only on these */
  /* Opening a regular file or directory read-only has no side effects (a
     FIFO or device is never opened); there is no *xattrat call. */
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = flistxattr(fd, names, sizeof names);
  int count = 0;
  for (ssize_t off = 0; n > 0 && off < n && count < MAX_XATTRS; off += (ssize_t)strlen(names + off) + 1) {
    const char *nm = names + off;
    if (strncmp(nm, USER_NS, USER_NS_LEN) != 0 || !nm[USER_NS_LEN] || strchr(nm, '=')) continue;
    ssize_t vl = fgetxattr(fd, nm, value, MAX_XATTR_VALUE);
    if (vl < 0 || memchr(value, 0, (size_t)vl)) continue; /* too long (ERANGE), gone, or not a string */
    size_t kl = strlen(nm) - USER_NS_LEN;
    uint8_t h[5];
    h[0] = K_XATTR;
    wr32(h + 1, (uint32_t)(kl + 1 + (size_t)vl));
    buf_append(b, h, 5);
    buf_append(b, nm + USER_NS_LEN, kl);
    buf_append(b, "=", 1);
    buf_append(b, value, (size_t)vl);
    count++;
  }
  close(fd);
}
