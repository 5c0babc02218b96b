/* Connections: lifetime, output, replies. */
#include "client.h"

#include <sys/socket.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "proc.h"
#include "util.h"

struct client *g_clients;
int g_nclients;

#define REQUEST_TIMEOUT_MS 10000

static void (*g_release)(struct client *c);

void client_set_release(void (*release)(struct client *c)) { g_release = release; }

struct client *client_new(int fd) {
  struct client *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->fd = fd;
  c->file_fd = -1;
  c->state = CS_HELLO;
  c->request_deadline = now_ms() + REQUEST_TIMEOUT_MS;
  c->next = g_clients;
  g_clients = c;
  g_nclients++;
  return c;
}

void client_close(struct client *c) {
  if (c->dead) return;
  c->dead = true;
  if (g_release) g_release(c);
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  g_nclients--;
}

/* A connection that never completes HELLO and its request would hold one of
   the MAX_CLIENTS places for ever: give it REQUEST_TIMEOUT_MS. */
int client_expire(int64_t now) {
  int64_t next = -1;
  for (struct client *c = g_clients; c; c = c->next) {
    if (c->dead || (c->state != CS_HELLO && c->state != CS_REQ)) continue;
    if (now >= c->request_deadline) client_close(c);
    else if (next < 0 || c->request_deadline - now < next) next = c->request_deadline - now;
  }
  return (int)next;
}

void client_sweep(void) {
  bool freed = false;
  for (struct client **pp = &g_clients; *pp;) {
    struct client *c = *pp;
    if (!c->dead) {
      pp = &c->next;
      continue;
    }
    *pp = c->next;
    buf_free(&c->in);
    buf_free(&c->out);
    free(c);
    freed = true;
  }
  /* the host closes every connection before a memory snapshot: give free
     heap pages back then, so they are not part of the snapshot */
  if (freed && g_nclients == 0) malloc_trim(0);
}

int client_flush(struct client *c) {
  if (c->dead) return -1;
  if (c->out.err) { /* could not build a frame: give up on this client */
    client_close(c);
    return -1;
  }
  while (buf_size(&c->out)) {
    ssize_t n = write(c->fd, buf_data(&c->out), buf_size(&c->out));
    if (n > 0) {
      buf_consume(&c->out, (size_t)n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return 0;
    client_close(c);
    return -1;
  }
  if (c->state != CS_READ) buf_shrink(&c->out, BUF_KEEP);
  return 0;
}

/* After the final frame the guest only half-closes: the host may still be
   sending (STDIN_EOF racing an EXIT), and a full close would make its write
   fail with EPIPE and reset the connection before it has read our frames.
   The host closes once it has the final frame; until then input is discarded. */
static void linger(struct client *c) {
  shutdown(c->fd, SHUT_WR);
  c->state = CS_LINGER;
  buf_free(&c->in);
  buf_free(&c->out);
}

void client_finish(struct client *c) {
  if (client_flush(c) < 0 || buf_size(&c->out)) return;
  /* v2 hosts acknowledge the EXIT (a snapshot may cut it off in flight) */
  if (c->exit_queued && c->proc && c->version < 2) c->proc->exit_delivered = true;
  linger(c);
}

static void verror(struct client *c, const char *code, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  size_t m = fr_begin(&c->out, T_ERROR);
  tlv_str(&c->out, K_CODE, code);
  tlv_str(&c->out, K_MESSAGE, msg);
  fr_end(&c->out, m);
  if (g_release) g_release(c);
  c->state = CS_CLOSING;
}

void client_error(struct client *c, int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verror(c, errno_name(err), fmt, ap);
  va_end(ap);
}

void client_error_code(struct client *c, const char *code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verror(c, code, fmt, ap);
  va_end(ap);
}

void client_ok_end(struct client *c) {
  fr_empty(&c->out, T_OK);
  c->state = CS_CLOSING;
}

const char *need_str(struct client *c, const struct req *r, int key, const char *what) {
  const char *s = req_str(r, key);
  if (!s || !*s) {
    client_error_code(c, "EINVAL", "missing %s", what);
    return NULL;
  }
  return s;
}
