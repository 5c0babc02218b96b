#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"
#include "users.h"
#include "util.h"
#include "xattrs.h"

#define LIST_MAX_DEPTH 32
#define RM_MAX_DEPTH 256

/* NAME = a + b without building the string */
static void tlv_str2(struct buf *b, uint8_t key, const char *x, const char *y) {
  size_t lx = strlen(x), ly = strlen(y);
  if (lx + ly > MAX_STR) {
    tlv_strn(b, key, x, lx);
    return;
  }
  uint8_t h[5];
  h[0] = key;
  wr32(h + 1, (uint32_t)(lx + ly));
  buf_append(b, h, 5);
  buf_append(b, x, lx);
  buf_append(b, y, ly);
}

/* `dfd`/`at`: where the entry is, for its xattrs (v3 only: an older host has no use for them) */
static void entry_frame(struct buf *b, const char *prefix, const char *name, const struct stat *st,
                        const char *link, int dfd, const char *at, bool xattrs) {
  size_t m = fr_begin(b, T_ENTRY);
  tlv_str2(b, K_NAME, prefix, name);
  tlv_str(b, K_TYPE, S_ISREG(st->st_mode)   ? "file"
                     : S_ISDIR(st->st_mode) ? "dir"
                     : S_ISLNK(st->st_mode) ? "symlink"
                                            : "other");
  tlv_int(b, K_SIZE, st->st_size);
  tlv_int(b, K_MODE, st->st_mode);
  tlv_int(b, K_MTIME, (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000);
  tlv_int(b, K_UID, st->st_uid);
  tlv_int(b, K_GID, st->st_gid);
  if (link) tlv_str(b, K_LINK, link);
  if (xattrs) xattrs_report(b, dfd, at, st);
  fr_end(b, m);
}

/* readlinkat into buf (PATH_MAX); NULL on failure */
static const char *read_link(int dfd, const char *name, char *buf) {
  ssize_t n = readlinkat(dfd, name, buf, PATH_MAX - 1);
  if (n < 0) return NULL;
  buf[n] = 0;
  return buf;
}

static int lookup_user(struct client *c, const struct req *r, struct user_info *u) {
  const char *name = req_str(r, K_USER);
  if (!name) return 0;
  if (user_by_name(name, u) < 0) {
    client_error_code(c, "EINVAL", "unknown user '%s'", name);
    return -1;
  }
  return 1;
}

/* An upload cut short leaves what O_TRUNC would have: the bytes received, nothing of the old file. */
void files_cleanup(struct client *c) {
  if (c->file_fd >= 0 && c->trunc_at_end) (void)!ftruncate(c->file_fd, (off_t)c->count);
  if (c->file_fd >= 0) close(c->file_fd);
  c->file_fd = -1;
  c->trunc_at_end = false;
  for (int i = 0; i < c->ndirs; i++) {
    closedir(c->dirs[i].d);
    free(c->dirs[i].prefix);
  }
  free(c->dirs);
  c->dirs = NULL;
  c->ndirs = 0;
}

/* fstat of a just-opened fd; on failure (of either) the error is answered and fd closed. */
static bool opened(struct client *c, int fd, const char *path, struct stat *st) {
  if (fd >= 0 && fstat(fd, st) == 0) return true;
  int e = errno;
  if (fd >= 0) close(fd);
  client_error(c, e, "open '%s': %s", path, strerror(e));
  return false;
}

/* ---- READ_FILE ---- */

void files_handle_read(struct client *c, const struct req *r) {
  const char *path = need_str(c, r, K_PATH, "PATH");
  if (!path) return;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  struct stat st;
  if (!opened(c, fd, path, &st)) return;
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    client_error(c, EISDIR, "'%s' is a directory", path);
    return;
  }
  size_t m = fr_begin(&c->out, T_OK);
  tlv_int(&c->out, K_SIZE, S_ISREG(st.st_mode) ? st.st_size : 0);
  fr_end(&c->out, m);
  c->file_fd = fd;
  c->aux_wait = false;
  c->state = CS_READ;
}

int files_read_pump(struct client *c) {
  if (c->aux_wait) return 0;
  if (buf_reserve(&c->out, MAX_DATA + 5) < 0) return -1;
  size_t m = fr_begin(&c->out, T_DATA);
  ssize_t n = read(c->file_fd, c->out.p + c->out.len, MAX_DATA);
  int e = errno;
  if (n > 0) {
    c->out.len += (size_t)n;
    fr_end(&c->out, m);
    return 1;
  }
  c->out.len -= 5; /* undo the header */
  if (n < 0 && e == EINTR) return 1;
  if (n < 0 && e == EAGAIN) { /* a FIFO or device: wait for it */
    c->aux_wait = true;
    return 0;
  }
  files_cleanup(c);
  if (n == 0) {
    fr_empty(&c->out, T_END);
    c->state = CS_CLOSING;
  } else {
    client_error(c, e, "read: %s", strerror(e));
  }
  return 1;
}

/* ---- WRITE_FILE ---- */

void files_handle_write(struct client *c, const struct req *r) {
  const char *path = need_str(c, r, K_PATH, "PATH");
  if (!path) return;
  const char *bad = xattrs_check(r); /* before anything is created */
  if (bad) {
    client_error_code(c, "EINVAL", "%s", bad);
    return;
  }
  struct user_info u;
  int has_user = lookup_user(c, r, &u);
  if (has_user < 0) return;
  mode_t mode = req_has(r, K_MODE) ? (mode_t)(req_int(r, K_MODE, 0) & 07777) : 0644;
  /* No O_TRUNC: the old bytes are overwritten and the rest cut when the upload ends (or fails). Btrfs
     answers a truncation to zero by dropping every extent at once and by flushing the file's dirty
     pages at its close (its guard for truncate-and-rewrite without fsync): 250 ms of the agent's time
     for a 100 MB file rewritten, during which it serves no one else. */
  bool append = req_int(r, K_APPEND, 0) != 0;
  int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (append ? O_APPEND : 0);

  const char *slash = strrchr(path, '/');
  if (slash && slash != path) {
    char *dir = strndup(path, (size_t)(slash - path));
    if (!dir) {
      client_error(c, ENOMEM, "out of memory");
      return;
    }
    int e = mkdir_p(dir, 0755, has_user > 0, u.uid, u.gid);
    if (e < 0) {
      client_error(c, -e, "mkdir '%s': %s", dir, strerror(-e));
      free(dir);
      return;
    }
    free(dir);
  }
  bool created = false;
  int fd = open(path, flags);
  if (fd < 0 && errno == ENOENT) {
    fd = open(path, flags | O_CREAT | O_EXCL, mode);
    if (fd >= 0) created = true;
    else if (errno == EEXIST) fd = open(path, flags | O_CREAT, mode); /* raced, or a dangling symlink */
  }
  struct stat st;
  if (!opened(c, fd, path, &st)) return;
  int e = 0;
  if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) e = EINVAL;
  else if (S_ISCHR(st.st_mode)) fcntl(fd, F_SETFL, O_WRONLY | (flags & O_APPEND));
  else if ((created || req_has(r, K_MODE)) && fchmod(fd, mode) < 0) e = errno;
  if (!e && created && has_user > 0 && fchown(fd, u.uid, u.gid) < 0) e = errno;
  /* Set as root like the chown: user.* xattrs of a regular file; ENOTSUP (a virtual fs) stores nothing. */
  if (!e && S_ISREG(st.st_mode) && (r->nxattrs || req_has(r, K_XATTR_REPLACE))) e = xattrs_apply(fd, r);
  if (e) {
    close(fd);
    client_error(c, e, "'%s': %s", path, e == EINVAL ? "not a regular file" : strerror(e));
    return;
  }
  fr_empty(&c->out, T_OK);
  c->file_fd = fd;
  c->count = 0;
  c->trunc_at_end = !append && S_ISREG(st.st_mode);
  c->state = CS_WRITE;
}

int files_write_frame(struct client *c, uint8_t type, const uint8_t *p, size_t n) {
  if (type == T_DATA) {
    if (n > MAX_DATA) return -1;
    while (n) {
      ssize_t w = write(c->file_fd, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        int e = w < 0 ? errno : EIO;
        files_cleanup(c);
        client_error(c, e, "write: %s", strerror(e));
        return 0;
      }
      p += w;
      n -= (size_t)w;
      c->count += (uint64_t)w;
    }
    return 0;
  }
  if (type == T_END) {
    int r = c->trunc_at_end ? ftruncate(c->file_fd, (off_t)c->count) : 0;
    int e = errno;
    c->trunc_at_end = false;
    if (close(c->file_fd) < 0 && r == 0) {
      r = -1;
      e = errno;
    }
    c->file_fd = -1;
    if (r < 0 && e != EINTR) {
      client_error(c, e, "close: %s", strerror(e));
      return 0;
    }
    size_t m = fr_begin(&c->out, T_OK);
    tlv_int(&c->out, K_SIZE, (int64_t)c->count);
    fr_end(&c->out, m);
    c->state = CS_CLOSING;
    return 0;
  }
  return -1;
}

/* ---- LIST_DIR / STAT ---- */

void files_handle_list(struct client *c, const struct req *r) {
  const char *path = need_str(c, r, K_PATH, "PATH");
  if (!path) return;
  int64_t depth = req_int(r, K_DEPTH, 1);
  if (depth < 1) depth = 1;
  if (depth > LIST_MAX_DEPTH) depth = LIST_MAX_DEPTH;
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  c->dirs = calloc((size_t)depth, sizeof *c->dirs);
  char *pre = strdup("");
  if (!d || !c->dirs || !pre) {
    int e = d && (!c->dirs || !pre) ? ENOMEM : errno;
    if (d) closedir(d);
    else if (fd >= 0) close(fd);
    free(pre);
    client_error(c, e, "opendir '%s': %s", path, strerror(e));
    return;
  }
  c->dirs[0].d = d;
  c->dirs[0].prefix = pre;
  c->ndirs = 1;
  c->maxdepth = (int)depth;
  c->state = CS_LIST;
}

int files_list_pump(struct client *c) {
  int produced = 0;
  char link[PATH_MAX];
  while (buf_size(&c->out) < OUT_SOFT) {
    if (c->ndirs == 0) {
      fr_empty(&c->out, T_END);
      c->state = CS_CLOSING;
      return 1;
    }
    struct dirlevel *L = &c->dirs[c->ndirs - 1];
    struct dirent *de = readdir(L->d);
    if (!de) {
      closedir(L->d);
      free(L->prefix);
      c->ndirs--;
      continue;
    }
    const char *nm = de->d_name;
    if (nm[0] == '.' && (nm[1] == 0 || (nm[1] == '.' && nm[2] == 0))) continue;
    struct stat st;
    int dfd = dirfd(L->d);
    if (fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0) continue; /* vanished */
    entry_frame(&c->out, L->prefix, nm, &st, S_ISLNK(st.st_mode) ? read_link(dfd, nm, link) : NULL, dfd, nm,
                c->version >= 3);
    produced = 1;
    if (S_ISDIR(st.st_mode) && c->ndirs < c->maxdepth) {
      int sfd = openat(dfd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sfd < 0) continue; /* unreadable: listed, not descended */
      size_t pl = strlen(L->prefix), nl = strlen(nm);
      char *np = malloc(pl + nl + 2);
      DIR *sd = np ? fdopendir(sfd) : NULL;
      if (!sd) {
        close(sfd);
        free(np);
        continue;
      }
      memcpy(np, L->prefix, pl);
      memcpy(np + pl, nm, nl);
      np[pl + nl] = '/';
      np[pl + nl + 1] = 0;
      c->dirs[c->ndirs].d = sd;
      c->dirs[c->ndirs].prefix = np;
      c->ndirs++;
    }
  }
  return produced;
}

void files_handle_stat(struct client *c, const struct req *r) {
  const char *path = need_str(c, r, K_PATH, "PATH");
  if (!path) return;
  struct stat st;
  if (lstat(path, &st) < 0) {
    client_error(c, errno, "stat '%s': %s", path, strerror(errno));
    return;
  }
  char link[PATH_MAX];
  entry_frame(&c->out, "", path, &st, S_ISLNK(st.st_mode) ? read_link(AT_FDCWD, path, link) : NULL, AT_FDCWD,
              path, c->version >= 3);
  c->state = CS_CLOSING;
}

/* ---- MKDIR / MOVE / REMOVE ---- */

void files_handle_mkdir(struct client *c, const struct req *r) {
  const char *path = need_str(c, r, K_PATH, "PATH");
  if (!path) return;
  struct user_info u;
  int has_user = lookup_user(c, r, &u);
  if (has_user < 0) return;
  int e = mkdir_p(path, 0755, has_user > 0, u.uid, u.gid);
  if (e < 0) {
    client_error(c, -e, "mkdir '%s': %s", path, strerror(-e));
    return;
  }
  client_ok_end(c);
}

void files_handle_move(struct client *c, const struct req *r) {
  const char *src = need_str(c, r, K_PATH, "PATH");
  const char *dst = src ? need_str(c, r, K_DST, "DST") : NULL;
  if (!dst) return;
  if (rename(src, dst) < 0) {
    client_error(c, errno, "rename '%s' to '%s': %s", src, dst, strerror(errno));
    return;
  }
  client_ok_end(c);
}

/* Remove name (relative to dfd) and everything below it; never follows
   symlinks. 0 or the first -errno (keeps going after errors, like rm -rf). */
static int rm_at(int dfd, const char *name, int depth) {
  struct stat st;
  if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return errno == ENOENT ? 0 : -errno;
  if (!S_ISDIR(st.st_mode)) return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
  if (depth > RM_MAX_DEPTH) return -ELOOP;
  int first = 0;
  for (int pass = 0; pass < 2; pass++) {
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
      int e = errno;
      if (fd >= 0) close(fd);
      if (!first) first = -e;
      break;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
      const char *nm = de->d_name;
      if (nm[0] == '.' && (nm[1] == 0 || (nm[1] == '.' && nm[2] == 0))) continue;
      int e = rm_at(dirfd(d), nm, depth + 1);
      if (e && !first) first = e;
    }
    closedir(d);
    if (unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return first;
    if (errno != ENOTEMPTY || first) return first ? first : -errno;
    /* something appeared meanwhile: one more pass */
  }
  return first ? first : -ENOTEMPTY;
}

void files_handle_remove(struct client *c, const struct req *r) {
  const char *path = need_str(c, r, K_PATH, "PATH");
  if (!path) return;
  char *real = realpath(path, NULL);
  bool is_root = real && strcmp(real, "/") == 0;
  free(real);
  if (is_root) {
    client_error_code(c, "EBUSY", "refusing to remove /");
    return;
  }
  struct stat st;
  int e = 0;
  if (lstat(path, &st) < 0) e = -errno;
  else if (!S_ISDIR(st.st_mode)) e = unlink(path) < 0 ? -errno : 0;
  else if (req_int(r, K_RECURSIVE, 0)) e = rm_at(AT_FDCWD, path, 0);
  else e = rmdir(path) < 0 ? -errno : 0;
  if (e < 0) {
    client_error(c, -e, "remove '%s': %s", path, strerror(-e));
    return;
  }
  client_ok_end(c);
}
