/* The process table: lookup, removal of exited entries, LIST_PROCS, KILL. */
#include "proctab.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "ring.h"
#include "util.h"

struct proc *g_procs;
int g_nprocs;
static struct proc *g_grave;
static uint64_t g_next_id = 1;

void proc_add(struct proc *p) {
  p->id = g_next_id++;
  struct proc **tail = &g_procs;
  while (*tail) tail = &(*tail)->next;
  *tail = p;
  g_nprocs++;
}

/* A pid can be reused while an exited entry still carries it: the running
   process wins. */
struct proc *proc_find_pid(pid_t pid) {
  struct proc *exited = NULL;
  for (struct proc *p = g_procs; p; p = p->next)
    if (p->pid == pid) {
      if (p->running) return p;
      if (!exited) exited = p;
    }
  return exited;
}

struct proc *proc_find_id(uint64_t id) {
  for (struct proc *p = g_procs; p; p = p->next)
    if (p->id == id) return p;
  return NULL;
}

struct proc *proc_find_tag(const char *tag) {
  for (struct proc *p = g_procs; p; p = p->next)
    if (p->tag && strcmp(p->tag, tag) == 0) return p;
  return NULL;
}

struct proc *proc_find_req(const struct req *r) {
  if (req_has(r, K_PID)) {
    int64_t pid = req_int(r, K_PID, 0);
    return pid > 0 && pid <= 0x7fffffff ? proc_find_pid((pid_t)pid) : NULL;
  }
  const char *tag = req_str(r, K_TAG);
  return tag ? proc_find_tag(tag) : NULL;
}

void proc_remove(struct proc *p) {
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

void proc_maybe_remove(struct proc *p) {
  if (p->removed || !p->finished || p->nclients) return;
  if (p->exit_delivered) proc_remove(p);
  else if (p->head == p->end) ring_release(p);
}

void proc_evict_exited(void) {
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

int proc_signal_group(pid_t pid, int sig) {
  if (kill(-pid, sig) == 0) return 0;
  return kill(pid, sig) == 0 ? 0 : -errno;
}

void proc_handle_kill(struct client *c, const struct req *r) {
  int64_t sig = req_int(r, K_SIGNAL, SIGKILL);
  if (sig < 0 || sig > 64) {
    client_error_code(c, "EINVAL", "bad signal %lld", (long long)sig);
    return;
  }
  struct proc *p = proc_find_req(r);
  if (p) {
    if (p->running) {
      int e = proc_signal_group(p->pid, (int)sig);
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
