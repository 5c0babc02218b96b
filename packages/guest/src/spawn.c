/* SPAWN: fork, the child's setup (session, PTY or pipes, user, cwd) and exec. */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"
#include "proctab.h"
#include "pty.h"
#include "stream.h"
#include "users.h"
#include "util.h"

extern char **environ;

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

void proc_handle_spawn(struct client *c, const struct req *r) {
  if (!r->nargs || !r->args[0][0]) {
    client_error_code(c, "EINVAL", "SPAWN needs a non-empty ARG");
    return;
  }
  const char *tag = req_str(r, K_TAG);
  if (tag) {
    struct proc *o = proc_find_tag(tag);
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
    struct proc *o = proc_find_tag(tag);
    if (o) { /* an exited entry with the same tag: superseded */
      free(o->tag);
      o->tag = NULL;
      if (!o->nclients) proc_remove(o);
    }
  }
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
  proc_add(p);
  free(s.envp);
  free(envstore);
  proc_attach(c, p, -1);
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
