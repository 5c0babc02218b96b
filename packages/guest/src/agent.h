/* A connection's state, shared by the units that serve it. Data only. */
#ifndef FORKD_AGENT_H
#define FORKD_AGENT_H
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "frame.h"
#include "proto.h"

enum cstate {
  CS_HELLO,   /* waiting for HELLO */
  CS_REQ,     /* waiting for the request */
  CS_PROC,    /* process stream (SPAWN/ATTACH) */
  CS_WRITE,   /* WRITE_FILE: receiving DATA/END */
  CS_READ,    /* READ_FILE: sending DATA */
  CS_LIST,    /* LIST_DIR: sending ENTRY */
  CS_PROCS,   /* LIST_PROCS: sending PROC */
  CS_WATCH,   /* WATCH: sending EVENT */
  CS_WSTDIN,  /* WRITE_STDIN: waiting for the process to take the data */
  CS_CLOSING, /* final frame queued: flush, then half-close */
  CS_LINGER,  /* half-closed: discard input until the host closes */
};

struct proc;
struct watch;

struct dirlevel {
  DIR *d;
  char *prefix; /* relative path of this directory + "/" ("" at top) */
};

struct client {
  struct client *next;
  int fd;
  enum cstate state;
  int version;          /* negotiated in HELLO; 2 adds ACK/DETACH and resumable streams */
  bool dead;
  int64_t request_deadline; /* HELLO and the request must arrive before this (monotonic ms) */
  struct buf in, out;

  /* process stream */
  struct proc *proc;
  struct client *pnext; /* in proc->clients */
  uint64_t pos;         /* ring offset of next byte to send */
  uint64_t bound;       /* the last frame boundary at or below pos (a partial write can stop mid-frame) */
  uint64_t acked;       /* v2: the host has everything below this ring offset */
  uint64_t stdin_total; /* bytes of this connection's STDIN taken by the process (or discarded) */
  bool exit_queued;
  bool stdin_pending;   /* the STDIN frame at the head of `in` is partially written */
  size_t stdin_off;     /* remaining data: offset from buf_data(&in) */
  size_t stdin_n, blocked_len;
  size_t scan_off;      /* frames below this offset were scanned ahead (SIGNAL/RESIZE done) */
  uint64_t wstdin_id;   /* WRITE_STDIN: target process (by id: it may go away) */
  bool wstdin_eof;

  /* files */
  int file_fd;
  bool aux_wait;        /* READ_FILE: waiting for file_fd readable */
  uint64_t count;
  bool trunc_at_end;    /* WRITE_FILE: overwritten in place, cut to `count` when done (see files_handle_write) */
  struct dirlevel *dirs;
  int ndirs, maxdepth;
  uint64_t list_cursor; /* LIST_PROCS */
  struct watch *watch;
};

#endif
