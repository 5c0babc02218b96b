/* Process table, spawn, output rings, reaping. */
#ifndef FORKD_PROC_H
#define FORKD_PROC_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent.h"

struct proc {
  struct proc *next;
  uint64_t id;
  pid_t pid;
  char *tag;
  char **argv; /* one allocation */
  int argc;
  bool pty, running, finished, exit_delivered, removed;
  bool pty_hup; /* master saw EIO: kept open until exit (closing it would SIGHUP the session) */
  int exit_code, exit_sig;
  int out_fd, err_fd, in_fd; /* PTY: out_fd is the master, in_fd is -1 */
  int64_t drain_deadline;    /* PTY grace after exit, 0 = none */
  uint64_t drain_budget;
  uint64_t exit_seq;
  uint64_t token;      /* random per spawn: tells this process from another with its pid */
  int64_t hold_until;  /* after a v2 DETACH: output is kept (back-pressure), not dropped */
  /* ring of wire frames [u32 len][u8 type][data] */
  uint8_t *ring;
  uint32_t cap;
  uint64_t head, end, dropped;
  struct client *clients;
  int nclients;
};

extern struct proc *g_procs;
extern int g_nprocs;

void proc_handle_spawn(struct client *c, const struct req *r);
void proc_handle_attach(struct client *c, const struct req *r);
void proc_handle_kill(struct client *c, const struct req *r);
void proc_handle_list(struct client *c);
int proc_list_pump(struct client *c);
/* frames from the host on a process stream; returns 1 when the frame is
   blocked (stdin pipe full), 0 otherwise */
int proc_stream_frame(struct client *c, uint8_t type, const uint8_t *p, size_t n);
void proc_client_pump(struct client *c);
void proc_detach(struct client *c);
void proc_linger_frame(struct client *c, uint8_t type, const uint8_t *p, size_t n);
int proc_stdin_fd(const struct proc *p);
int proc_client_stdin_fd(struct client *c); /* where c's pending stdin goes, or -1 */
void proc_stdin_continue(struct client *c); /* that fd is writable (or gone) */
/* returns 1 when the request is blocked on the stdin pipe, else 0 */
int proc_handle_write_stdin(struct client *c, const struct req *r, const uint8_t *payload);

bool proc_want_read(const struct proc *p);
void proc_on_readable(struct proc *p, int fd);
void proc_reap(void);
void proc_service(int64_t now); /* drains exited processes, timers */
int proc_poll_timeout(int64_t now); /* ms until next timer, -1 none */
void proc_sweep(void);

#endif
