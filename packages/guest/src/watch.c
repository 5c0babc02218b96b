#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"

#define WATCH_MAX 8192 /* watches per WATCH request */
#define SCAN_MAX_DEPTH 64
#define WMASK (IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | \
               IN_DELETE_SELF | IN_MOVE_SELF)

struct went {
  int wd;
  char *rel; /* "" for the watched path itself */
};

struct watch {
  int ifd;
  bool recursive;
  char *root;
  struct went *w;
  int n, cap;
};

int watch_fd(const struct client *c) { return c->watch ? c->watch->ifd : -1; }

void watch_free(struct client *c) {
  struct watch *w = c->watch;
  if (!w) return;
  if (w->ifd >= 0) close(w->ifd);
  for (int i = 0; i < w->n; i++) free(w->w[i].rel);
  free(w->w);
  free(w->root);
  free(w);
  c->watch = NULL;
}

static char *join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = malloc(la + lb + 2);
  if (!s) return NULL;
  memcpy(s, a, la);
  size_t o = la;
  if (la && lb && a[la - 1] != '/') s[o++] = '/';
  memcpy(s + o, b, lb + 1);
  return s;
}

static struct went *find_wd(struct watch *w, int wd) {
  for (int i = 0; i < w->n; i++)
    if (w->w[i].wd == wd) return &w->w[i];
  return NULL;
}

/* A directory moved inside the tree keeps its wd: rename it and its descendants. */
static void rename_prefix(struct watch *w, const char *old, const char *new) {
  size_t lo = strlen(old), ln = strlen(new);
  for (int i = 0; i < w->n; i++) {
    char *r = w->w[i].rel;
    if (strncmp(r, old, lo) != 0 || (r[lo] != 0 && r[lo] != '/')) continue;
    char *nr = malloc(ln + strlen(r + lo) + 1);
    if (!nr) continue;
    memcpy(nr, new, ln);
    strcpy(nr + ln, r + lo);
    free(r);
    w->w[i].rel = nr;
  }
}

static int add_watch(struct watch *w, const char *rel) {
  if (w->n >= WATCH_MAX) return -ENOSPC;
  char *full = join(w->root, rel);
  if (!full) return -ENOMEM;
  uint32_t mask = WMASK | (rel[0] ? IN_DONT_FOLLOW | IN_ONLYDIR : 0);
  int wd = inotify_add_watch(w->ifd, full, mask);
  int e = errno;
  free(full);
  if (wd < 0) return -e;
  struct went *x = find_wd(w, wd);
  if (x) {
    if (strcmp(x->rel, rel) != 0) rename_prefix(w, x->rel, rel);
    return wd;
  }
  if (w->n == w->cap) {
    int nc = w->cap ? w->cap * 2 : 8;
    struct went *nw = realloc(w->w, (size_t)nc * sizeof *nw);
    if (!nw) return -ENOMEM;
    w->w = nw;
    w->cap = nc;
  }
  char *r = strdup(rel);
  if (!r) return -ENOMEM;
  w->w[w->n].wd = wd;
  w->w[w->n].rel = r;
  w->n++;
  return wd;
}

static void emit(struct client *c, const char *kind, const char *name) {
  size_t m = fr_begin(&c->out, T_EVENT);
  tlv_str(&c->out, K_EVENT, kind);
  tlv_str(&c->out, K_NAME, name);
  fr_end(&c->out, m);
}

/* Add watches below rel; with do_emit also report what is found as created
   (covers files made in a new directory before its watch existed). */
static void scan(struct client *c, struct watch *w, const char *rel, bool do_emit, int depth) {
  if (depth > SCAN_MAX_DEPTH || w->n >= WATCH_MAX) return;
  char *full = join(w->root, rel);
  if (!full) return;
  int fd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (rel[0] ? O_NOFOLLOW : 0));
  free(full);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  struct dirent *de;
  while ((de = readdir(d)) && w->n < WATCH_MAX) {
    const char *nm = de->d_name;
    if (nm[0] == '.' && (nm[1] == 0 || (nm[1] == '.' && nm[2] == 0))) continue;
    char *crel = rel[0] ? join(rel, nm) : strdup(nm);
    if (!crel) break;
    if (do_emit) emit(c, "create", crel);
    bool isdir = de->d_type == DT_DIR;
    if (de->d_type == DT_UNKNOWN) {
      struct stat st;
      isdir = fstatat(dirfd(d), nm, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    if (isdir && add_watch(w, crel) >= 0) scan(c, w, crel, do_emit, depth + 1);
    free(crel);
  }
  closedir(d);
}

void watch_handle(struct client *c, const struct req *r) {
  const char *path = need_str(c, r, K_PATH, "PATH");
  if (!path) return;
  struct stat st;
  if (stat(path, &st) < 0) {
    client_error(c, errno, "watch '%s': %s", path, strerror(errno));
    return;
  }
  struct watch *w = calloc(1, sizeof *w);
  if (!w || !(w->root = strdup(path))) {
    free(w);
    client_error(c, ENOMEM, "out of memory");
    return;
  }
  c->watch = w;
  w->recursive = S_ISDIR(st.st_mode) && req_int(r, K_RECURSIVE, 0);
  w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  int e = w->ifd < 0 ? -errno : add_watch(w, "");
  if (e < 0) {
    watch_free(c);
    client_error(c, -e, "watch '%s': %s", path, strerror(-e));
    return;
  }
  if (w->recursive) scan(c, w, "", false, 0);
  fr_empty(&c->out, T_OK);
  c->state = CS_WATCH;
}

static void handle_event(struct client *c, struct watch *w, const struct inotify_event *ev) {
  if (ev->mask & IN_Q_OVERFLOW) {
    client_error_code(c, "EOVERFLOW", "too many events; watch again and rescan");
    return;
  }
  struct went *x = find_wd(w, ev->wd);
  if (!x) return;
  if (ev->mask & IN_IGNORED) {
    free(x->rel);
    *x = w->w[--w->n];
    return;
  }
  const char *rel = x->rel;
  const char *kind = NULL;
  uint32_t m = ev->mask;
  if (!ev->len || !ev->name[0]) { /* about the watched object itself */
    if (rel[0]) return;            /* subdirectories: the parent reports it */
    kind = m & IN_DELETE_SELF ? "remove"
         : m & IN_MOVE_SELF   ? "rename"
         : m & IN_ATTRIB      ? "chmod"
         : m & IN_MODIFY      ? "write"
                              : NULL;
    if (kind) emit(c, kind, "");
    return;
  }
  char *name = rel[0] ? join(rel, ev->name) : strdup(ev->name);
  if (!name) return;
  if (m & IN_CREATE) kind = "create";
  else if (m & IN_MOVED_TO) kind = "create";
  else if (m & IN_MODIFY) kind = "write";
  else if (m & IN_DELETE) kind = "remove";
  else if (m & IN_MOVED_FROM) kind = "rename";
  else if (m & IN_ATTRIB) kind = "chmod";
  if (kind) emit(c, kind, name);
  if (w->recursive && (m & IN_ISDIR) && (m & (IN_CREATE | IN_MOVED_TO)))
    if (add_watch(w, name) >= 0) scan(c, w, name, (m & IN_CREATE) != 0, 1);
  free(name);
}

void watch_on_readable(struct client *c) {
  struct watch *w = c->watch;
  char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
  for (int i = 0; i < 16 && w && c->state == CS_WATCH && !c->dead && buf_size(&c->out) < OUT_SOFT; i++) {
    ssize_t n = read(w->ifd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0 && errno != EAGAIN) client_error(c, errno, "inotify: %s", strerror(errno));
      break;
    }
    for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n;) {
      const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
      off += (ssize_t)(sizeof *ev + ev->len);
      if (off > n) break;
      if (c->state != CS_WATCH) break;
      handle_event(c, w, ev);
    }
  }
}
