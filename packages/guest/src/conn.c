/* Connections: frame reading, the per-connection state machine, dispatch. */
#include "conn.h"

#include <sys/prctl.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "files.h"
#include "proctab.h"
#include "spawn.h"
#include "stdin.h"
#include "stream.h"
#include "util.h"
#include "watch.h"

#define IN_KEEP (MAX_DATA * 2 + 64) /* WRITE_FILE keeps its input buffer */
#define IN_AHEAD_MAX (256u * 1024u)

/* What an operation holds on a connection (its process, file, listing or
   watch), given back when the connection closes or the operation ends in
   an error (no error is sent while a process is attached: then only the
   file, listing or watch is let go). */
void conn_release(struct client *c) {
  proc_detach(c);
  files_cleanup(c);
  watch_free(c);
}

void client_pump(struct client *c) {
  for (int i = 0; i < 16 && !c->dead; i++) {
    if (client_flush(c) < 0 || buf_size(&c->out)) return;
    int more;
    switch (c->state) {
    case CS_CLOSING: client_finish(c); return;
    case CS_PROC: proc_client_pump(c); return;
    case CS_READ:
      more = files_read_pump(c);
      if (more < 0) {
        client_close(c);
        return;
      }
      break;
    case CS_LIST: more = files_list_pump(c); break;
    case CS_PROCS: more = proc_list_pump(c); break;
    default: return;
    }
    if (!more) return;
  }
}

bool client_want_read(const struct client *c) {
  if (c->dead || c->state == CS_CLOSING) return false;
  if (c->state == CS_LINGER) return true;
  /* while STDIN waits for the process, keep reading (bounded) so that
     SIGNAL and RESIZE queued behind it still get through */
  return !c->stdin_pending || buf_size(&c->in) < IN_AHEAD_MAX;
}

bool client_want_write(const struct client *c) {
  if (c->dead) return false;
  if (buf_size(&c->out) || c->state == CS_CLOSING) return true;
  switch (c->state) {
  case CS_PROC: return c->proc && c->pos < c->proc->end;
  case CS_READ: return !c->aux_wait;
  case CS_LIST:
  case CS_PROCS: return true;
  default: return false;
  }
}

static void handle_info(struct client *c) {
  size_t m = fr_begin(&c->out, T_OK);
  tlv_int(&c->out, K_VERSION, FORKD_GUEST_PROTOCOL);
  tlv_str(&c->out, K_AGENT, FORKD_AGENT_NAME);
  tlv_int(&c->out, K_PID, getpid());
  tlv_int(&c->out, K_SIZE, self_rss_bytes());
  tlv_int(&c->out, K_ENTRIES, g_nprocs);
  fr_end(&c->out, m);
  c->state = CS_CLOSING;
}

/* The agent is not dumpable (sandbox root cannot ptrace PID 1), except
   while the host dumps it: after a restore its memory belongs to the host's
   user namespace, and CRIU, checking the sandbox's namespaces from inside
   its user namespace, could not open the namespaces of a non-dumpable task. */
static void handle_dumpable(struct client *c, const struct req *r) {
  if (prctl(PR_SET_DUMPABLE, req_int(r, K_DUMPABLE, 0) ? 1 : 0, 0, 0, 0) < 0) {
    client_error(c, errno, "prctl: %s", strerror(errno));
    return;
  }
  client_ok_end(c);
}

/* 0 handled, 1 blocked (WRITE_STDIN), -1 protocol violation (close) */
static int handle_request(struct client *c, uint8_t type, const uint8_t *pl, size_t n) {
  switch (type) {
  case T_SPAWN: case T_ATTACH: case T_LIST_PROCS: case T_KILL: case T_INFO: case T_WRITE_STDIN:
  case T_DUMPABLE:
  case T_READ_FILE: case T_WRITE_FILE: case T_LIST_DIR: case T_STAT:
  case T_MKDIR: case T_MOVE: case T_REMOVE: case T_WATCH:
    break;
  default:
    return -1;
  }
  struct req r;
  int pr = req_parse(&r, pl, n);
  if (pr == -1) {
    req_free(&r);
    return -1;
  }
  if (pr == -2) {
    req_free(&r);
    client_error(c, ENOMEM, "out of memory");
    return 0;
  }
  int ret = 0;
  switch (type) {
  case T_SPAWN: proc_handle_spawn(c, &r); break;
  case T_ATTACH: proc_handle_attach(c, &r); break;
  case T_LIST_PROCS:
    proc_handle_list(c);
    client_pump(c);
    break;
  case T_KILL: proc_handle_kill(c, &r); break;
  case T_WRITE_STDIN: ret = proc_handle_write_stdin(c, &r, pl); break;
  case T_INFO: handle_info(c); break;
  case T_DUMPABLE: handle_dumpable(c, &r); break;
  case T_READ_FILE: files_handle_read(c, &r); break;
  case T_WRITE_FILE: files_handle_write(c, &r); break;
  case T_LIST_DIR: files_handle_list(c, &r); break;
  case T_STAT: files_handle_stat(c, &r); break;
  case T_MKDIR: files_handle_mkdir(c, &r); break;
  case T_MOVE: files_handle_move(c, &r); break;
  case T_REMOVE: files_handle_remove(c, &r); break;
  case T_WATCH: watch_handle(c, &r); break;
  }
  req_free(&r);
  return ret;
}

static int handle_hello(struct client *c, uint8_t type, const uint8_t *pl, size_t n) {
  if (type != T_HELLO) return -1;
  struct req r;
  int pr = req_parse(&r, pl, n);
  int64_t v = req_int(&r, K_VERSION, -1);
  req_free(&r);
  if (pr == -1) return -1;
  if (v < FORKD_GUEST_PROTOCOL_MIN || v > FORKD_GUEST_PROTOCOL) {
    client_error_code(c, "EPROTO", "unsupported protocol version %lld (agent speaks %d to %d)",
                      (long long)v, FORKD_GUEST_PROTOCOL_MIN, FORKD_GUEST_PROTOCOL);
    return 0;
  }
  c->version = (int)v;
  size_t m = fr_begin(&c->out, T_HELLO_OK);
  tlv_int(&c->out, K_VERSION, v);
  tlv_str(&c->out, K_AGENT, FORKD_AGENT_NAME);
  fr_end(&c->out, m);
  c->state = CS_REQ;
  return 0;
}

/* 0 consumed, 1 blocked (keep the frame), -1 protocol violation */
static int handle_frame(struct client *c, uint8_t type, const uint8_t *pl, size_t n) {
  switch (c->state) {
  case CS_HELLO: return handle_hello(c, type, pl, n);
  case CS_REQ: return handle_request(c, type, pl, n);
  case CS_PROC: return proc_stream_frame(c, type, pl, n);
  case CS_WRITE: return files_write_frame(c, type, pl, n);
  default: return -1; /* nothing is expected from the host in other states */
  }
}

/* Protocol violation: best effort to deliver what is already queued
   (e.g. HELLO_OK), then close. Never waits. */
static void client_abort(struct client *c) {
  if (!c->out.err && buf_size(&c->out)) {
    ssize_t n = write(c->fd, buf_data(&c->out), buf_size(&c->out));
    (void)n;
  }
  client_close(c);
}

static uint32_t frame_limit(const struct client *c) {
  return c->state == CS_HELLO || c->state == CS_REQ ? MAX_FRAME : MAX_DATA + 1;
}

/* While the head STDIN frame is blocked: handle SIGNAL/RESIZE frames
   queued behind it now (marking them done by zeroing their type byte);
   STDIN/STDIN_EOF stay queued in order. */
static void scan_ahead(struct client *c) {
  if (c->scan_off < c->blocked_len) c->scan_off = c->blocked_len;
  while (!c->dead) {
    size_t avail = buf_size(&c->in);
    if (avail < c->scan_off + 4) return;
    uint8_t *f = buf_data(&c->in) + c->scan_off;
    uint32_t len = rd32(f);
    if (len < 1 || len > frame_limit(c)) {
      client_abort(c);
      return;
    }
    if (avail - c->scan_off - 4 < len) return;
    if (c->state != CS_PROC) { /* nothing may follow WRITE_STDIN */
      client_abort(c);
      return;
    }
    if (f[4] == T_SIGNAL || f[4] == T_RESIZE || f[4] == T_ACK || f[4] == T_DETACH) {
      if (proc_stream_frame(c, f[4], f + 5, len - 1) < 0) {
        client_abort(c);
        return;
      }
      if (c->state == CS_CLOSING) return; /* DETACHED: the blocked input is dropped */
      f[4] = 0;
    } else if (f[4] != T_STDIN && f[4] != T_STDIN_EOF) {
      client_abort(c);
      return;
    }
    c->scan_off += 4 + (size_t)len;
  }
}

static void client_parse(struct client *c) {
  while (!c->dead && c->state != CS_CLOSING) {
    if (c->stdin_pending) {
      scan_ahead(c);
      return;
    }
    size_t avail = buf_size(&c->in);
    if (avail < 4) break;
    const uint8_t *f = buf_data(&c->in);
    uint32_t len = rd32(f);
    if (len < 1 || len > frame_limit(c)) {
      client_abort(c);
      return;
    }
    if (avail - 4 < len) break;
    size_t flen = 4 + (size_t)len;
    int r = 0;
    if (f[4] != 0 || c->scan_off < flen) /* else: already handled ahead */
      r = handle_frame(c, f[4], f + 5, len - 1);
    if (r < 0) {
      client_abort(c);
      return;
    }
    if (r == 1) {
      c->blocked_len = flen;
      continue; /* -> scan_ahead */
    }
    buf_consume(&c->in, flen);
    c->scan_off = c->scan_off > flen ? c->scan_off - flen : 0;
  }
  if (!c->dead && !c->stdin_pending) buf_shrink(&c->in, c->state == CS_WRITE ? IN_KEEP : BUF_KEEP);
}

/* Half-closed: v2 process streams still take the host's ACK of the EXIT;
   everything else is discarded. */
static void linger_read(struct client *c) {
  bool parse = c->version >= 2 && c->proc;
  uint8_t tmp[4096];
  ssize_t n = read(c->fd, tmp, sizeof tmp);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    client_close(c);
    return;
  }
  if (n < 0 || !parse) return;
  buf_append(&c->in, tmp, (size_t)n);
  if (c->in.err) {
    client_close(c);
    return;
  }
  while (buf_size(&c->in) >= 4) {
    uint32_t len = rd32(buf_data(&c->in));
    if (len < 1 || len > MAX_DATA + 1) {
      client_close(c);
      return;
    }
    if (buf_size(&c->in) - 4 < len) break;
    const uint8_t *f = buf_data(&c->in);
    proc_linger_frame(c, f[4], f + 5, len - 1);
    buf_consume(&c->in, 4 + (size_t)len);
  }
  buf_shrink(&c->in, BUF_KEEP);
}

void client_read(struct client *c) {
  if (c->state == CS_LINGER) {
    linger_read(c);
    return;
  }
  size_t have = buf_size(&c->in), want = 4096;
  if (have >= 4) {
    uint32_t len = rd32(buf_data(&c->in));
    if (len >= 1 && len <= frame_limit(c) && 4 + (size_t)len > have) want = 4 + len - have;
  }
  if (c->state == CS_WRITE && want < MAX_DATA + 5) want = MAX_DATA + 5;
  if (buf_reserve(&c->in, want) < 0) {
    client_close(c);
    return;
  }
  ssize_t n = read(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) { /* the host closed (or detached from) the operation */
    client_close(c);
    return;
  }
  c->in.len += (size_t)n;
  client_parse(c);
  client_pump(c);
}

void client_stdin_ready(struct client *c) {
  if (proc_stdin_continue(c)) client_parse(c);
  if (!c->dead) client_pump(c);
}
