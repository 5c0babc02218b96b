/* A tracked process: what the process units (ring, proctab, output, stream,
   stdin, spawn) share. Data only. */
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

#endif
