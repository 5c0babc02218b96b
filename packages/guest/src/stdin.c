/* Input to a process: STDIN, STDIN_EOF, WRITE_STDIN. */
#include "stdin.h"

#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

#include "client.h"
#include "proctab.h"
#include "pty.h"
#include "util.h"

static int proc_stdin_fd(const struct proc *p) {
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
  struct proc *p = c->state == CS_WSTDIN ? proc_find_id(c->wstdin_id) : c->proc;
  return p ? proc_stdin_fd(p) : -1;
}

int proc_handle_write_stdin(struct client *c, const struct req *r, const uint8_t *payload) {
  struct proc *p = proc_find_req(r);
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

int proc_stdin_frame(struct client *c, struct proc *p, uint8_t type, const uint8_t *pl, size_t n) {
  if (type == T_STDIN_EOF) {
    if (n) return -1;
    stdin_eof(p);
    return 0;
  }
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

int proc_stdin_continue(struct client *c) {
  struct proc *p = c->state == CS_WSTDIN ? proc_find_id(c->wstdin_id) : c->proc;
  int fd = p ? proc_stdin_fd(p) : -1;
  if (fd >= 0 && c->stdin_n) {
    ssize_t w = write(fd, buf_data(&c->in) + c->stdin_off, c->stdin_n);
    if (w > 0) {
      c->stdin_off += (size_t)w;
      c->stdin_n -= (size_t)w;
      c->stdin_total += (uint64_t)w;
      if (c->stdin_n) return 0;
    } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
      return 0;
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
    return 0;
  }
  return 1;
}
