/* Process streams: attach, detach, output to clients, ACK/DETACH, SIGNAL, RESIZE. */
#include "stream.h"

#include <errno.h>
#include <unistd.h>

#include "client.h"
#include "proctab.h"
#include "pty.h"
#include "ring.h"
#include "stdin.h"
#include "util.h"

#define WRITE_CHUNK (256u * 1024u)

void proc_client_pump(struct client *c) {
  struct proc *p = c->proc;
  if (!p || c->dead) return;
  if (client_flush(c) < 0 || buf_size(&c->out)) return;
  while (c->pos < p->end) {
    uint64_t n = p->end - c->pos;
    if (n > WRITE_CHUNK) n = WRITE_CHUNK;
    ssize_t w = ring_write(p, c->fd, c->pos, n);
    if (w > 0) {
      c->pos += (uint64_t)w;
      ring_frame_end(p, &c->bound, c->pos);
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
    client_finish(c);
  }
}

int64_t g_hold_ms = HOLD_MS;

/* A host connected: it is back (a snapshot done, a daemon restarted, however
   slowly). Output a DETACH holds is kept g_hold_ms more for it to re-attach,
   no longer: the DETACH itself holds until then, since a host that stopped
   to be upgraded cannot say when it will be back. */
void procs_host_back(int64_t now) {
  for (struct proc *p = g_procs; p; p = p->next)
    if (p->hold_until > now + g_hold_ms) p->hold_until = now + g_hold_ms;
}

void proc_pump_clients(struct proc *p) {
  struct client *c = p->clients, *nx;
  for (; c; c = nx) {
    nx = c->pnext;
    proc_client_pump(c);
  }
}

/* from < 0: from the oldest output kept. Otherwise a v2 host resuming a
   stream at the ring offset it had received up to: what was dropped since
   is reported, and an offset past the end (the sandbox went back to an
   earlier state) starts at the end. */
void proc_attach(struct client *c, struct proc *p, int64_t from) {
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
  c->acked = c->bound = c->pos;
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
  proc_maybe_remove(p);
}

void proc_handle_attach(struct client *c, const struct req *r) {
  struct proc *p = proc_find_req(r);
  /* TOKEN: only that very process (after a rewind the pid may be another's) */
  if (!p || (req_has(r, K_TOKEN) && (uint64_t)req_int(r, K_TOKEN, 0) != p->token)) {
    client_error_code(c, "ESRCH", "no such process");
    return;
  }
  int64_t from = req_int(r, K_OFFSET, -1);
  proc_attach(c, p, c->version >= 2 && from >= 0 ? from : -1);
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
    if (p && !p->finished) p->hold_until = now_ms() + HOLD_AWAY_MS;
    /* A partial write may have stopped inside a frame: its rest goes first, or DETACHED
       would land inside it (the host reads garbage; with output of zeros, a length of 0). */
    if (p) {
      uint64_t fe = ring_frame_end(p, &c->bound, c->pos);
      if (fe > c->pos) {
        ring_copy(p, c->pos, fe - c->pos, &c->out);
        c->pos = c->bound = fe;
      }
    }
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

int proc_stream_frame(struct client *c, uint8_t type, const uint8_t *pl, size_t n) {
  struct proc *p = c->proc;
  if (!p) return -1;
  if (type == T_STDIN || type == T_STDIN_EOF) return proc_stdin_frame(c, p, type, pl, n);
  if (type == T_ACK || type == T_DETACH) return proc_resume_frame(c, type, pl, n);
  if (type != T_SIGNAL && type != T_RESIZE) return -1;
  struct req r;
  int pr = req_parse(&r, pl, n);
  if (pr == 0 && type == T_SIGNAL) {
    int64_t sig = req_int(&r, K_SIGNAL, -1);
    if (sig < 0 || sig > 64) pr = -1;
    else if (p->running) proc_signal_group(p->pid, (int)sig);
  } else if (pr == 0) {
    if (!req_has(&r, K_COLS) || !req_has(&r, K_ROWS)) pr = -1;
    else if (p->pty && p->out_fd >= 0)
      pty_resize(p->out_fd, clamp_dim(req_int(&r, K_COLS, 80), 80),
                 clamp_dim(req_int(&r, K_ROWS, 24), 24));
  }
  req_free(&r);
  return pr == 0 ? 0 : -1;
}
