/* Process table: spawn, per-process output rings, attach, reaping. */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pty.h"
#include "users.h"
#include "util.h"

extern char **environ;

struct proc *g_procs;
int g_nprocs;
static struct proc *g_grave;
static uint64_t g_next_id = 1, g_exit_seq;

#define PTY_GRACE_MS 50
#define RING_KEEP 16384   /* an empty ring larger than this is freed */
#define READ_MIN_ROOM 4096 /* with a reader attached, read only with this much room */
#define WRITE_CHUNK (256u * 1024u)

static int min_int(int a, int b) { return a < b ? a : b; }

/* ---- ring of wire frames ---- */

static inline uint32_t ridx(const struct proc *p, uint64_t off) {
  return (uint32_t)(off & (p->cap - 1));
}
static inline uint64_t rused(const struct proc *p) { return p->end - p->head; }

static void ring_put(struct proc *p, uint64_t off, const void *src, size_t n) {
  uint32_t i = ridx(p, off);
  size_t first = p->cap - i;
  if (first > n) first = n;
  memcpy(p->ring + i, src, first);
  memcpy(p->ring, (const uint8_t *)src + first, n - first);
}

static uint32_t ring_frame_len(const struct proc *p, uint64_t off) {
  uint8_t h[4];
  for (int k = 0; k < 4; k++) h[k] = p->ring[ridx(p, off + (uint64_t)k)];
  return rd32(h);
}

static void ring_release(struct proc *p) {
  free(p->ring);
  p->ring = NULL;
  p->cap = 0;
}

/* Ensure capacity >= total (total <= RING_MAX). Offsets are kept. */
static int ring_reserve(struct proc *p, uint64_t total) {
  if (p->cap >= total) return 0;
  uint32_t nc = p->cap ? p->cap : 512;
  while (nc < total) nc *= 2;
  uint8_t *nr = malloc(nc);
  if (!nr) return -1;
  uint64_t off = p->head, left = rused(p);
  while (left) {
    uint32_t i = ridx(p, off);
    size_t chunk = p->cap - i;
    if (chunk > left) chunk = (size_t)left;
    uint32_t j = (uint32_t)(off & (nc - 1));
    size_t c1 = nc - j;
    if (c1 > chunk) c1 = chunk;
    memcpy(nr + j, p->ring + i, c1);
    memcpy(nr, p->ring + i + c1, chunk - c1);
    off += chunk;
    left -= chunk;
  }
  free(p->ring);
  p->ring = nr;
  p->cap = nc;
  return 0;
}

static void ring_drop_oldest(struct proc *p) {
  uint32_t l = ring_frame_len(p, p->head);
  p->dropped += l - 1;
  p->head += 4 + (uint64_t)l;
}

/* Drop frames every attached client is done with: written (v1) or
   acknowledged (v2, whose host may come back for what was in flight). */
static void ring_trim(struct proc *p) {
  if (!p->nclients) return;
  uint64_t minpos = UINT64_MAX;
  for (struct client *c = p->clients; c; c = c->pnext) {
    uint64_t done = c->version >= 2 ? c->acked : c->pos;
    if (done < minpos) minpos = done;
  }
  while (p->head < p->end) {
    uint32_t l = ring_frame_len(p, p->head);
    if (p->head + 4 + l > minpos) break;
    p->head += 4 + (uint64_t)l;
  }
  if (p->head == p->end && p->cap > RING_KEEP) ring_release(p);
}

/* A host that detached to take a snapshot comes back for the output: until
   then it is held (the process waits on a full pipe), not dropped. */
static bool held(const struct proc *p) {
  return p->nclients || (p->hold_until && now_ms() < p->hold_until);
}

/* ---- table ---- */

/* A pid can be reused while an exited entry still carries it: the running
   process wins. */
static struct proc *find_pid(pid_t pid) {
  struct proc *exited = NULL;
  for (struct proc *p = g_procs; p; p = p->next)
    if (p->pid == pid) {
      if (p->running) return p;
      if (!exited) exited = p;
    }
  return exited;
}

static struct proc *find_id(uint64_t id) {
  for (struct proc *p = g_procs; p; p = p->next)
    if (p->id == id) return p;
  return NULL;
}

static struct proc *find_tag(const char *tag) {
  for (struct proc *p = g_procs; p; p = p->next)
    if (p->tag && strcmp(p->tag, tag) == 0) return p;
  return NULL;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void proc_remove(struct proc *p) {
  struct proc **pp = &g_procs;
  while (*pp && *pp != p) pp = &(*pp)->next;
  if (*pp) *pp = p->next;
  g_nprocs--;
  close_fd(&p->out_fd);
  close_fd(&p->err_fd);
  close_fd(&p->in_fd);
  ring_release(p);
  p->removed = true;
  p->next = g_grave;
  g_grave = p;
}

void proc_sweep(void) {
  while (g_grave) {
    struct proc *p = g_grave;
    g_grave = p->next;
    free(p->tag);
    free(p->argv);
    free(p);
  }
}

static void maybe_remove(struct proc *p) {
  if (p->removed || !p->finished || p->nclients) return;
  if (p->exit_delivered) proc_remove(p);
  else if (p->head == p->end) ring_release(p);
}

static void evict_exited(void) {
  for (;;) {
    int n = 0;
    struct proc *old = NULL;
    for (struct proc *p = g_procs; p; p = p->next) {
      if (p->running) continue;
      n++;
      if (!p->nclients && (!old || p->exit_seq < old->exit_seq)) old = p;
    }
    if (n <= MAX_EXITED || !old) return;
    proc_remove(old);
  }
}

static void pump_clients(struct proc *p) {
  struct client *c = p->clients, *nx;
  for (; c; c = nx) {
    nx = c->pnext;
    proc_client_pump(c);
  }
}

/* ---- output ---- */

static uint8_t g_discard[4096];

/* >0 bytes read, 0 fd closed (EOF/error), -1 nothing to read, -2 no room */
static int proc_read(struct proc *p, int *fdp) {
  int fd = *fdp;
  uint8_t type = fdp == &p->err_fd ? T_STDERR : T_STDOUT;
  int avail = 0;
  if (ioctl(fd, FIONREAD, &avail) < 0 || avail <= 0) avail = 512;
  size_t want = (size_t)min_int(avail, (int)MAX_DATA);
  if (held(p)) {
    uint64_t room = RING_MAX - rused(p);
    if (room < 6) return -2;
    if (want > room - 5) want = (size_t)(room - 5);
  } else {
    while (RING_MAX - rused(p) < want + 5) ring_drop_oldest(p);
  }
  ssize_t n;
  if (ring_reserve(p, rused(p) + want + 5) < 0) {
    n = read(fd, g_discard, sizeof g_discard); /* out of memory: lose it */
    if (n > 0) {
      p->dropped += (uint64_t)n;
      return (int)n;
    }
  } else {
    uint32_t i = ridx(p, p->end + 5);
    size_t first = p->cap - i;
    if (first > want) first = want;
    struct iovec iov[2] = {{p->ring + i, first}, {p->ring, want - first}};
    n = readv(fd, iov, want > first ? 2 : 1);
    if (n > 0) {
      uint8_t h[5];
      wr32(h, (uint32_t)n + 1);
      h[4] = type;
      ring_put(p, p->end, h, 5);
      p->end += 5 + (uint64_t)n;
      return (int)n;
    }
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return -1;
  if (p->pty) {
    /* EIO: every slave fd is closed. The process may still be on its way
       out; closing the master now would hang up its session (SIGHUP). */
    p->pty_hup = true;
    return 0;
  }
  close_fd(fdp); /* EOF */
  return 0;
}

static bool out_open(const struct proc *p) { return p->out_fd >= 0 && !p->pty_hup; }

static void proc_finish(struct proc *p) {
  p->finished = true;
  p->drain_deadline = 0;
  close_fd(&p->out_fd);
  close_fd(&p->err_fd);
  close_fd(&p->in_fd);
  pump_clients(p);
  maybe_remove(p);
  evict_exited();
}

/* After exit: take what the pipes still hold, then finish. */
static void proc_drain(struct proc *p, int64_t now) {
  int *fds[2] = {&p->out_fd, &p->err_fd};
  for (int k = 0; k < 2; k++) {
    while (k ? p->err_fd >= 0 : out_open(p)) {
      if (!p->drain_budget) { /* something else keeps writing: stop */
        close_fd(fds[k]);
        break;
      }
      int r = proc_read(p, fds[k]);
      if (r > 0) {
        p->drain_budget = (uint64_t)r >= p->drain_budget ? 0 : p->drain_budget - (uint64_t)r;
        continue;
      }
      if (r == -1) {
        /* empty but still open (a descendant holds it). A PTY may still
           have output in flight in the line discipline: short grace. */
        if (p->pty) {
          if (!p->drain_deadline) p->drain_deadline = now + PTY_GRACE_MS;
          else if (now >= p->drain_deadline) close_fd(fds[k]);
        } else {
          close_fd(fds[k]);
        }
      }
      break;
    }
  }
  pump_clients(p);
  if (!p->removed && !p->finished && !out_open(p) && p->err_fd < 0) proc_finish(p);
}

bool proc_want_read(const struct proc *p) {
  if (!held(p)) return true;
  return RING_MAX - rused(p) >= READ_MIN_ROOM + 5;
}

void proc_on_readable(struct proc *p, int fd) {
  int *fdp = fd == p->out_fd ? &p->out_fd : fd == p->err_fd ? &p->err_fd : NULL;
  if (!fdp) return;
  if (!p->running) {
    proc_drain(p, now_ms());
    return;
  }
  for (int i = 0; i < 4 && *fdp >= 0 && !(p->pty && p->pty_hup); i++) {
    if (held(p) && RING_MAX - rused(p) < 6) break;
    if (proc_read(p, fdp) <= 0) break;
  }
  pump_clients(p);
}

void proc_service(int64_t now) {
again:
  for (struct proc *p = g_procs; p; p = p->next)
    if (!p->running && !p->finished) {
      proc_drain(p, now);
      if (p->removed || p->finished) goto again; /* the list may have changed */
    }
}

static void earliest(int *t, int64_t at, int64_t now) {
  int64_t d = at - now;
  int ms = d < 0 ? 0 : (int)d + 1;
  if (*t < 0 || ms < *t) *t = ms;
}

int proc_poll_timeout(int64_t now) {
  int t = -1;
  for (struct proc *p = g_procs; p; p = p->next) {
    if (p->drain_deadline && !p->finished) earliest(&t, p->drain_deadline, now);
    /* when the hold ends, reading (and dropping) resumes */
    if (p->hold_until && !p->nclients) {
      if (now < p->hold_until) earliest(&t, p->hold_until, now);
      else p->hold_until = 0;
    }
  }
  return t;
}

void proc_reap(void) {
  int st;
  pid_t pid;
  while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
    struct proc *p = find_pid(pid);
    if (!p || !p->running) continue; /* an orphan: just reaped */
    p->running = false;
    if (WIFSIGNALED(st)) {
      p->exit_sig = WTERMSIG(st);
      p->exit_code = 128 + p->exit_sig;
    } else {
      p->exit_code = WEXITSTATUS(st);
      p->exit_sig = 0;
    }
    p->exit_seq = ++g_exit_seq;
    p->drain_budget = 2 * (uint64_t)RING_MAX;
    proc_drain(p, now_ms());
  }
}

/* ---- attach / detach / pumping ---- */

void proc_client_pump(struct client *c) {
  struct proc *p = c->proc;
  if (!p || c->dead) return;
  if (client_flush(c) < 0 || buf_size(&c->out)) return;
  while (c->pos < p->end) {
    uint64_t n = p->end - c->pos;
    if (n > WRITE_CHUNK) n = WRITE_CHUNK;
    uint32_t i = ridx(p, c->pos);
    size_t first = p->cap - i;
    if (first > n) first = (size_t)n;
    struct iovec iov[2] = {{p->ring + i, first}, {p->ring, (size_t)n - first}};
    ssize_t w = writev(c->fd, iov, n > first ? 2 : 1);
    if (w > 0) {
      c->pos += (uint64_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) break;
    client_close(c);
    return;
  }
  ring_trim(p);
  if (c->pos == p->end && p->finished && !c->exit_queued) {
    size_t m = fr_begin(&c->out, T_EXIT);
    tlv_int(&c->out, K_EXIT_CODE, p->exit_code);
    tlv_int(&c->out, K_SIGNAL, p->exit_sig);
    fr_end(&c->out, m);
    c->exit_queued = true;
    c->state = CS_CLOSING;
    client_pump(c);
  }
}

/* from < 0: from the oldest output kept. Otherwise a v2 host resuming a
   stream at the ring offset it had received up to: what was dropped since
   is reported, and an offset past the end (the sandbox went back to an
   earlier state) starts at the end. */
static void attach(struct client *c, struct proc *p, int64_t from) {
  c->proc = p;
  c->pnext = p->clients;
  p->clients = c;
  p->nclients++;
  p->hold_until = 0;
  uint64_t lost = 0;
  if (from < 0) {
    c->pos = p->head;
    lost = p->dropped;
    p->dropped = 0;
  } else if ((uint64_t)from < p->head) {
    c->pos = p->head;
    lost = p->head - (uint64_t)from;
  } else {
    c->pos = (uint64_t)from > p->end ? p->end : (uint64_t)from;
  }
  c->acked = c->pos;
  c->state = CS_PROC;
  size_t m = fr_begin(&c->out, T_STARTED);
  tlv_int(&c->out, K_PID, p->pid);
  if (p->tag) tlv_str(&c->out, K_TAG, p->tag);
  tlv_int(&c->out, K_PTY, p->pty);
  if (c->version >= 2) {
    tlv_int(&c->out, K_OFFSET, (int64_t)c->pos);
    tlv_int(&c->out, K_TOKEN, (int64_t)p->token);
  }
  fr_end(&c->out, m);
  if (lost) {
    m = fr_begin(&c->out, T_DROPPED);
    tlv_int(&c->out, K_DROPPED, (int64_t)lost);
    fr_end(&c->out, m);
  }
  proc_client_pump(c);
}

void proc_detach(struct client *c) {
  struct proc *p = c->proc;
  if (!p) return;
  struct client **pp = &p->clients;
  while (*pp && *pp != c) pp = &(*pp)->pnext;
  if (*pp) *pp = c->pnext;
  p->nclients--;
  c->proc = NULL;
  c->pnext = NULL;
  c->stdin_pending = false;
  ring_trim(p);
  maybe_remove(p);
}

/* ---- spawn ---- */

enum { ST_SETSID = 1, ST_PTY, ST_STDIO, ST_GROUPS, ST_SETGID, ST_SETUID, ST_CHDIR, ST_EXEC };
static const char *stage_name(int s) {
  switch (s) {
  case ST_SETSID: return "setsid";
  case ST_PTY: return "open pty";
  case ST_STDIO: return "set up stdio";
  case ST_GROUPS: return "setgroups";
  case ST_SETGID: return "setgid";
  case ST_SETUID: return "setuid";
  case ST_CHDIR: return "chdir";
  default: return "exec";
  }
}

static __attribute__((noreturn)) void child_fail(int fd, int stage, int err) {
  int msg[2] = {stage, err};
  ssize_t r = write(fd, msg, sizeof msg);
  (void)r;
  _exit(127);
}

struct spawn_ctx {
  const struct user_info *u;
  bool change_id, cwd_required, pty;
  const char *cwd;
  char *const *argv;
  char **envp;
  int master, in_r, out_w, err_w;
  const char *slave;
};

static __attribute__((noreturn)) void child_main(const struct spawn_ctx *s, int ep) {
  sigset_t none;
  sigemptyset(&none);
  signal(SIGPIPE, SIG_DFL);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (setsid() < 0) child_fail(ep, ST_SETSID, errno);
  if (s->pty) {
    int r = pty_child_attach(s->master, s->slave);
    if (r < 0) child_fail(ep, ST_PTY, -r);
  } else {
    int in = s->in_r;
    if (in < 0) in = open("/dev/null", O_RDONLY | O_CLOEXEC); /* else keep the agent's fd 0 */
    if ((in >= 0 && dup2(in, 0) < 0) || dup2(s->out_w, 1) < 0 || dup2(s->err_w, 2) < 0)
      child_fail(ep, ST_STDIO, errno);
  }
  int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (oom >= 0) {
    ssize_t r = write(oom, "0", 1);
    (void)r;
    close(oom);
  }
  if (s->change_id) {
    if (setgroups((size_t)s->u->ngroups, s->u->groups) < 0) child_fail(ep, ST_GROUPS, errno);
    if (setgid(s->u->gid) < 0) child_fail(ep, ST_SETGID, errno);
    if (setuid(s->u->uid) < 0) child_fail(ep, ST_SETUID, errno);
  }
  if (chdir(s->cwd) < 0) {
    if (s->cwd_required || chdir("/") < 0) child_fail(ep, ST_CHDIR, errno);
  }
  environ = s->envp;
  execvp(s->argv[0], s->argv);
  child_fail(ep, ST_EXEC, errno);
}

static int env_key_eq(const char *a, const char *b) {
  size_t i = 0;
  for (; a[i] && a[i] != '=' && a[i] == b[i]; i++) {}
  return (a[i] == '=' || a[i] == 0) && (b[i] == '=' || b[i] == 0);
}

/* env array (pointers into r and into *store, which the caller frees) */
static char **build_env(const struct req *r, const struct user_info *u, bool pty, char **store) {
  size_t hl = strlen(u->home), nl = strlen(u->name);
  char *s = malloc(hl + 2 * nl + 32);
  char **env = calloc(6 + r->nenvs + 1, sizeof(char *));
  if (!s || !env) {
    free(s);
    free(env);
    return NULL;
  }
  size_t n = 0;
  char *w = s;
  env[n++] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  env[n++] = w;
  w += sprintf(w, "HOME=%s", u->home) + 1;
  env[n++] = w;
  w += sprintf(w, "USER=%s", u->name) + 1;
  env[n++] = w;
  sprintf(w, "LOGNAME=%s", u->name);
  env[n++] = "LANG=C.UTF-8";
  if (pty) env[n++] = "TERM=xterm-256color";
  for (size_t i = 0; i < r->nenvs; i++) {
    const char *e = r->envs[i];
    if (!strchr(e, '=') || e[0] == '=') continue;
    size_t j = 0;
    while (j < n && !env_key_eq(env[j], e)) j++;
    env[j] = (char *)e;
    if (j == n) n++;
  }
  env[n] = NULL;
  *store = s;
  return env;
}

static char **copy_argv(const char **args, size_t n) {
  size_t total = (n + 1) * sizeof(char *);
  for (size_t i = 0; i < n; i++) total += strlen(args[i]) + 1;
  char **v = malloc(total);
  if (!v) return NULL;
  char *w = (char *)(v + n + 1);
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(args[i]) + 1;
    memcpy(w, args[i], l);
    v[i] = w;
    w += l;
  }
  v[n] = NULL;
  return v;
}

static int clamp_dim(int64_t v, int dflt) {
  if (v < 1) return dflt;
  return v > 10000 ? 10000 : (int)v;
}

void proc_handle_spawn(struct client *c, const struct req *r) {
  if (!r->nargs || !r->args[0][0]) {
    client_error_code(c, "EINVAL", "SPAWN needs a non-empty ARG");
    return;
  }
  const char *tag = req_str(r, K_TAG);
  if (tag) {
    struct proc *o = find_tag(tag);
    if (o && o->running) {
      client_error_code(c, "EEXIST", "tag '%s' is in use by pid %d", tag, (int)o->pid);
      return;
    }
  }
  struct user_info u;
  const char *uname = req_str(r, K_USER);
  bool change_id = false;
  if (uname) {
    if (user_by_name(uname, &u) < 0) {
      client_error_code(c, "EINVAL", "unknown user '%s'", uname);
      return;
    }
    user_load_groups(&u);
    change_id = geteuid() == 0 || u.uid != geteuid();
  } else {
    user_by_uid(geteuid(), &u);
  }
  bool pty = req_int(r, K_PTY, 0) != 0;
  struct spawn_ctx s = {
      .u = &u, .change_id = change_id, .pty = pty,
      .cwd = req_str(r, K_CWD) ? req_str(r, K_CWD) : u.home,
      .cwd_required = req_has(r, K_CWD),
      .argv = (char *const *)r->args,
      .master = -1, .in_r = -1, .out_w = -1, .err_w = -1,
  };
  char slave[64] = "";
  s.slave = slave;
  int in_w = -1, out_r = -1, err_r = -1, ep[2] = {-1, -1};
  char *envstore = NULL;
  struct proc *p = calloc(1, sizeof *p);
  int err = 0;
  const char *what = "spawn";
  if (!p || !(p->argv = copy_argv(r->args, r->nargs)) || (tag && !(p->tag = strdup(tag))) ||
      !(s.envp = build_env(r, &u, pty, &envstore))) {
    err = ENOMEM;
    goto fail;
  }
  if (pty) {
    int e = pty_open(&s.master, slave, sizeof slave,
                     clamp_dim(req_int(r, K_COLS, 80), 80), clamp_dim(req_int(r, K_ROWS, 24), 24));
    if (e < 0) {
      err = -e;
      what = "open /dev/ptmx";
      goto fail;
    }
  } else {
    int a[2], b[2], d[2] = {-1, -1};
    if (pipe2(a, O_CLOEXEC) < 0) { err = errno; what = "pipe"; goto fail; }
    out_r = a[0];
    s.out_w = a[1];
    if (pipe2(b, O_CLOEXEC) < 0) { err = errno; what = "pipe"; goto fail; }
    err_r = b[0];
    s.err_w = b[1];
    if (req_int(r, K_STDIN, 0)) {
      if (pipe2(d, O_CLOEXEC) < 0) { err = errno; what = "pipe"; goto fail; }
      s.in_r = d[0];
      in_w = d[1];
      set_nonblock(in_w);
    }
    set_nonblock(out_r);
    set_nonblock(err_r);
  }
  if (pipe2(ep, O_CLOEXEC) < 0) { err = errno; what = "pipe"; goto fail; }
  pid_t pid = fork();
  if (pid < 0) { err = errno; what = "fork"; goto fail; }
  if (pid == 0) {
    close(ep[0]);
    child_main(&s, ep[1]);
  }
  close_fd(&ep[1]);
  close_fd(&s.in_r);
  close_fd(&s.out_w);
  close_fd(&s.err_w);
  int msg[2];
  ssize_t n;
  do n = read(ep[0], msg, sizeof msg);
  while (n < 0 && errno == EINTR);
  close_fd(&ep[0]);
  if (n == (ssize_t)sizeof msg) { /* the child failed before exec */
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    err = msg[1];
    switch (msg[0]) {
    case ST_EXEC: client_error(c, err, "exec '%s': %s", r->args[0], strerror(err)); break;
    case ST_CHDIR: client_error(c, err, "chdir '%s': %s", s.cwd, strerror(err)); break;
    default: client_error(c, err, "%s: %s", stage_name(msg[0]), strerror(err)); break;
    }
    err = -1;
    goto fail;
  }
  /* tracked */
  if (tag) {
    struct proc *o = find_tag(tag);
    if (o) { /* an exited entry with the same tag: superseded */
      free(o->tag);
      o->tag = NULL;
      if (!o->nclients) proc_remove(o);
    }
  }
  p->id = g_next_id++;
  p->pid = pid;
  /* 48 bits: the host reads ints as doubles */
  if (getrandom(&p->token, sizeof p->token, GRND_NONBLOCK) != (ssize_t)sizeof p->token)
    p->token = (uint64_t)now_ms() ^ ((uint64_t)pid << 32);
  p->token &= 0xffffffffffffull;
  p->argc = (int)r->nargs;
  p->pty = pty;
  p->running = true;
  p->out_fd = pty ? s.master : out_r;
  p->err_fd = pty ? -1 : err_r;
  p->in_fd = pty ? -1 : in_w;
  struct proc **tail = &g_procs;
  while (*tail) tail = &(*tail)->next;
  *tail = p;
  g_nprocs++;
  free(s.envp);
  free(envstore);
  attach(c, p, -1);
  return;
fail:
  if (err > 0) client_error(c, err, "%s: %s", what, strerror(err));
  close_fd(&s.master);
  close_fd(&s.in_r);
  close_fd(&s.out_w);
  close_fd(&s.err_w);
  close_fd(&in_w);
  close_fd(&out_r);
  close_fd(&err_r);
  close_fd(&ep[0]);
  close_fd(&ep[1]);
  free(s.envp);
  free(envstore);
  if (p) {
    free(p->argv);
    free(p->tag);
    free(p);
  }
}

static struct proc *find_req(const struct req *r) {
  if (req_has(r, K_PID)) {
    int64_t pid = req_int(r, K_PID, 0);
    return pid > 0 && pid <= 0x7fffffff ? find_pid((pid_t)pid) : NULL;
  }
  const char *tag = req_str(r, K_TAG);
  return tag ? find_tag(tag) : NULL;
}

void proc_handle_attach(struct client *c, const struct req *r) {
  struct proc *p = find_req(r);
  /* TOKEN: only that very process (after a rewind the pid may be another's) */
  if (!p || (req_has(r, K_TOKEN) && (uint64_t)req_int(r, K_TOKEN, 0) != p->token)) {
    client_error_code(c, "ESRCH", "no such process");
    return;
  }
  int64_t from = req_int(r, K_OFFSET, -1);
  attach(c, p, c->version >= 2 && from >= 0 ? from : -1);
}

static int signal_group(pid_t pid, int sig) {
  if (kill(-pid, sig) == 0) return 0;
  return kill(pid, sig) == 0 ? 0 : -errno;
}

void proc_handle_kill(struct client *c, const struct req *r) {
  int64_t sig = req_int(r, K_SIGNAL, SIGKILL);
  if (sig < 0 || sig > 64) {
    client_error_code(c, "EINVAL", "bad signal %lld", (long long)sig);
    return;
  }
  struct proc *p = find_req(r);
  if (p) {
    if (p->running) {
      int e = signal_group(p->pid, (int)sig);
      if (e < 0) {
        client_error(c, -e, "kill %d: %s", (int)p->pid, strerror(-e));
        return;
      }
    }
  } else {
    int64_t pid = req_int(r, K_PID, 0);
    if (!req_has(r, K_PID) || pid <= 1 || pid > 0x7fffffff || pid == getpid()) {
      client_error_code(c, "ESRCH", "no such process");
      return;
    }
    if (kill((pid_t)pid, (int)sig) < 0) {
      client_error(c, errno, "kill %lld: %s", (long long)pid, strerror(errno));
      return;
    }
  }
  client_ok_end(c);
}

void proc_handle_list(struct client *c) {
  c->state = CS_PROCS;
  c->list_cursor = 0;
  client_pump(c);
}

int proc_list_pump(struct client *c) {
  int produced = 0;
  struct proc *p = g_procs;
  for (; p && buf_size(&c->out) < OUT_SOFT; p = p->next) {
    if (p->id < c->list_cursor) continue;
    size_t m = fr_begin(&c->out, T_PROCF);
    tlv_int(&c->out, K_PID, p->pid);
    if (p->tag) tlv_str(&c->out, K_TAG, p->tag);
    size_t budget = MAX_FRAME - 256 - (p->tag ? strlen(p->tag) : 0);
    for (int i = 0; i < p->argc; i++) {
      size_t l = strlen(p->argv[i]);
      if (l > MAX_STR || l + 5 > budget) break;
      budget -= l + 5;
      tlv_strn(&c->out, K_ARG, p->argv[i], l);
    }
    tlv_int(&c->out, K_PTY, p->pty);
    tlv_int(&c->out, K_RUNNING, p->running);
    if (!p->running) {
      tlv_int(&c->out, K_EXIT_CODE, p->exit_code);
      tlv_int(&c->out, K_SIGNAL, p->exit_sig);
    }
    fr_end(&c->out, m);
    c->list_cursor = p->id + 1;
    produced = 1;
  }
  if (!p) {
    fr_empty(&c->out, T_END);
    c->state = CS_CLOSING;
    produced = 1;
  }
  return produced;
}

/* ---- resumable streams (v2) ---- */

/* ACK: the host has the output below OFFSET (the ring may let it go);
   with EOF=1 it has the EXIT too, so the entry need not be kept for it.
   DETACH: the host lets go before a snapshot. Whatever STDIN is still
   waiting for the pipe is discarded; DETACHED says how much was taken, so
   the host sends the rest again after it re-attaches, and the output is
   held for it meanwhile. */
static int proc_resume_frame(struct client *c, uint8_t type, const uint8_t *pl, size_t n) {
  struct proc *p = c->proc;
  if (c->version < 2) return -1;
  if (type == T_DETACH) {
    if (n) return -1;
    c->stdin_pending = false;
    c->stdin_n = 0;
    if (p && !p->finished) p->hold_until = now_ms() + HOLD_MS;
    size_t m = fr_begin(&c->out, T_DETACHED);
    tlv_int(&c->out, K_SIZE, (int64_t)c->stdin_total);
    fr_end(&c->out, m);
    c->state = CS_CLOSING;
    return 0;
  }
  struct req r;
  int pr = req_parse(&r, pl, n);
  if (pr == 0 && p) {
    uint64_t off = (uint64_t)req_int(&r, K_OFFSET, 0);
    if (off > c->pos) off = c->pos;
    if (off > c->acked) c->acked = off;
    if (req_int(&r, K_EOF, 0) && c->exit_queued) p->exit_delivered = true;
    ring_trim(p);
  }
  req_free(&r);
  return pr == 0 ? 0 : -1;
}

/* After the final frame a v2 host still acknowledges it: input is read
   for that (and nothing else) until the host closes. */
void proc_linger_frame(struct client *c, uint8_t type, const uint8_t *pl, size_t n) {
  if (type == T_ACK && c->proc) proc_resume_frame(c, type, pl, n);
}

/* ---- host -> process stream ---- */

int proc_stdin_fd(const struct proc *p) {
  if (p->pty) return p->pty_hup ? -1 : p->out_fd;
  return p->in_fd;
}

static void stdin_write_error(struct proc *p, int e) {
  (void)e; /* EPIPE etc.: the reader is gone; further input is discarded */
  if (!p->pty) close_fd(&p->in_fd);
}

/* PTY: the terminal's EOF character; pipe: close it */
static void stdin_eof(struct proc *p) {
  if (p->pty) {
    if (proc_stdin_fd(p) >= 0) {
      char ch = (char)pty_eof_char(p->out_fd);
      ssize_t w = write(p->out_fd, &ch, 1);
      (void)w;
    }
  } else {
    close_fd(&p->in_fd);
  }
}

int proc_client_stdin_fd(struct client *c) {
  struct proc *p = c->state == CS_WSTDIN ? find_id(c->wstdin_id) : c->proc;
  return p ? proc_stdin_fd(p) : -1;
}

int proc_handle_write_stdin(struct client *c, const struct req *r, const uint8_t *payload) {
  struct proc *p = find_req(r);
  if (!p) {
    client_error_code(c, "ESRCH", "no such process");
    return 0;
  }
  const char *data = req_str(r, K_DATA);
  size_t n = data ? r->len[K_DATA] : 0;
  bool eof = req_int(r, K_EOF, 0) != 0;
  int fd = proc_stdin_fd(p);
  if (fd < 0 && n) {
    client_error_code(c, "EPIPE", "stdin of process %d is not open", (int)p->pid);
    return 0;
  }
  ssize_t w = 0;
  if (n) {
    do w = write(fd, data, n);
    while (w < 0 && errno == EINTR);
    if (w < 0 && errno != EAGAIN) {
      stdin_write_error(p, errno); /* the reader is gone: data is discarded */
      w = (ssize_t)n;
    }
    if (w < 0) w = 0;
  }
  if ((size_t)w < n) { /* the pipe is full: finish from the frame kept in c->in */
    c->state = CS_WSTDIN;
    c->wstdin_id = p->id;
    c->wstdin_eof = eof;
    c->stdin_pending = true;
    c->stdin_off = (size_t)(payload - buf_data(&c->in)) + (size_t)(data - (const char *)r->copy) +
                   (size_t)w;
    c->stdin_n = n - (size_t)w;
    return 1;
  }
  if (eof) stdin_eof(p);
  client_ok_end(c);
  return 0;
}

int proc_stream_frame(struct client *c, uint8_t type, const uint8_t *pl, size_t n) {
  struct proc *p = c->proc;
  if (!p) return -1;
  if (type == T_STDIN) {
    if (n > MAX_DATA) return -1;
    int fd = proc_stdin_fd(p);
    if (fd < 0 || n == 0) {
      c->stdin_total += n; /* nobody reads it: discarded, not to be sent again */
      return 0;
    }
    ssize_t w;
    do w = write(fd, pl, n);
    while (w < 0 && errno == EINTR);
    if (w == (ssize_t)n) {
      c->stdin_total += n;
      return 0;
    }
    if (w < 0 && errno != EAGAIN) {
      stdin_write_error(p, errno);
      c->stdin_total += n;
      return 0;
    }
    if (w < 0) w = 0;
    c->stdin_total += (uint64_t)w;
    c->stdin_pending = true;
    c->stdin_off = (size_t)(pl - buf_data(&c->in)) + (size_t)w;
    c->stdin_n = n - (size_t)w;
    return 1;
  }
  if (type == T_STDIN_EOF) {
    if (n) return -1;
    stdin_eof(p);
    return 0;
  }
  if (type == T_ACK || type == T_DETACH) return proc_resume_frame(c, type, pl, n);
  if (type != T_SIGNAL && type != T_RESIZE) return -1;
  struct req r;
  int pr = req_parse(&r, pl, n);
  if (pr == 0 && type == T_SIGNAL) {
    int64_t sig = req_int(&r, K_SIGNAL, -1);
    if (sig < 0 || sig > 64) pr = -1;
    else if (p->running) signal_group(p->pid, (int)sig);
  } else if (pr == 0) {
    if (!req_has(&r, K_COLS) || !req_has(&r, K_ROWS)) pr = -1;
    else if (p->pty && p->out_fd >= 0)
      pty_resize(p->out_fd, clamp_dim(req_int(&r, K_COLS, 80), 80),
                 clamp_dim(req_int(&r, K_ROWS, 24), 24));
  }
  req_free(&r);
  return pr == 0 ? 0 : -1;
}

void proc_stdin_continue(struct client *c) {
  struct proc *p = c->state == CS_WSTDIN ? find_id(c->wstdin_id) : c->proc;
  int fd = p ? proc_stdin_fd(p) : -1;
  if (fd >= 0 && c->stdin_n) {
    ssize_t w = write(fd, buf_data(&c->in) + c->stdin_off, c->stdin_n);
    if (w > 0) {
      c->stdin_off += (size_t)w;
      c->stdin_n -= (size_t)w;
      c->stdin_total += (uint64_t)w;
      if (c->stdin_n) return;
    } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
      return;
    } else {
      stdin_write_error(p, errno);
    }
  }
  c->stdin_total += c->stdin_n; /* the reader went away: the rest is discarded */
  c->stdin_pending = false;
  buf_consume(&c->in, c->blocked_len);
  c->scan_off = c->scan_off > c->blocked_len ? c->scan_off - c->blocked_len : 0;
  if (c->state == CS_WSTDIN) { /* WRITE_STDIN is done (a vanished reader is not an error) */
    if (c->wstdin_eof && p) stdin_eof(p);
    client_ok_end(c);
    return;
  }
  client_parse(c);
}
