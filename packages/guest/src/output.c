/* Process output, exit, draining and reaping. */
#include "output.h"

#include <errno.h>
#include <sys/wait.h>

#include "proctab.h"
#include "ring.h"
#include "stream.h"
#include "util.h"

static uint64_t g_exit_seq;

#define PTY_GRACE_MS 50
#define READ_MIN_ROOM 4096 /* with a reader attached, read only with this much room */

/* >0 bytes read, 0 fd closed (EOF/error), -1 nothing to read, -2 no room */
static int proc_read(struct proc *p, int *fdp) {
  ssize_t n = ring_read(p, *fdp, fdp == &p->err_fd ? T_STDERR : T_STDOUT);
  if (n > 0 || n == -2) return (int)n;
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
  proc_pump_clients(p);
  proc_maybe_remove(p);
  proc_evict_exited();
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
  proc_pump_clients(p);
  if (!p->removed && !p->finished && !out_open(p) && p->err_fd < 0) proc_finish(p);
}

bool proc_want_read(const struct proc *p) {
  if (!ring_held(p)) return true;
  return RING_MAX - ring_used(p) >= READ_MIN_ROOM + 5;
}

void proc_on_readable(struct proc *p, int fd) {
  int *fdp = fd == p->out_fd ? &p->out_fd : fd == p->err_fd ? &p->err_fd : NULL;
  if (!fdp) return;
  if (!p->running) {
    proc_drain(p, now_ms());
    return;
  }
  for (int i = 0; i < 4 && *fdp >= 0 && !(p->pty && p->pty_hup); i++) {
    if (ring_held(p) && RING_MAX - ring_used(p) < 6) break;
    if (proc_read(p, fdp) <= 0) break;
  }
  proc_pump_clients(p);
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
    struct proc *p = proc_find_pid(pid);
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
