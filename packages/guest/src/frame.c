#include "frame.h"

#include <stdlib.h>
#include <string.h>

enum { KIND_UNKNOWN, KIND_INT, KIND_STR, KIND_TLV, KIND_BYTES };

static int key_kind(uint8_t k) {
  switch (k) {
  case K_AGENT: case K_ARG: case K_ENV: case K_CWD: case K_USER: case K_TAG:
  case K_PATH: case K_DST: case K_TYPE: case K_NAME: case K_LINK: case K_CODE:
  case K_MESSAGE: case K_EVENT: case K_XATTR: case K_XATTR_REPLACE:
    return KIND_STR;
  case K_PROC:
    return KIND_TLV;
  case K_DATA:
    return KIND_BYTES;
  default:
    return (k >= 1 && k <= K_MAXKEY) ? KIND_INT : KIND_UNKNOWN;
  }
}

size_t fr_begin(struct buf *b, uint8_t type) {
  size_t mark = buf_size(b);
  uint8_t h[5] = {0, 0, 0, 0, type};
  buf_append(b, h, 5);
  return mark;
}

void fr_end(struct buf *b, size_t mark) {
  if (b->err) return;
  wr32(buf_data(b) + mark, (uint32_t)(buf_size(b) - mark - 4));
}

void fr_empty(struct buf *b, uint8_t type) { fr_end(b, fr_begin(b, type)); }

static void tlv_hdr(struct buf *b, uint8_t key, uint32_t len) {
  uint8_t h[5];
  h[0] = key;
  wr32(h + 1, len);
  buf_append(b, h, 5);
}

void tlv_int(struct buf *b, uint8_t key, int64_t v) {
  uint8_t d[8];
  uint64_t u = (uint64_t)v;
  for (int i = 7; i >= 0; i--, u >>= 8) d[i] = (uint8_t)u;
  tlv_hdr(b, key, 8);
  buf_append(b, d, 8);
}

void tlv_strn(struct buf *b, uint8_t key, const char *s, size_t n) {
  if (n > MAX_STR) n = MAX_STR;
  tlv_hdr(b, key, (uint32_t)n);
  buf_append(b, s, n);
}

void tlv_str(struct buf *b, uint8_t key, const char *s) { tlv_strn(b, key, s, strlen(s)); }

static int64_t rd64(const uint8_t *p) {
  uint64_t u = 0;
  for (int i = 0; i < 8; i++) u = u << 8 | p[i];
  return (int64_t)u;
}

int req_parse(struct req *r, const uint8_t *p, size_t n) {
  memset(r, 0, sizeof *r);
  size_t off = 0, nargs = 0, nenvs = 0, nxattrs = 0;
  /* pass 1: validate structure and kinds, count lists */
  while (off < n) {
    if (n - off < 5) return -1;
    uint8_t k = p[off];
    uint32_t l = rd32(p + off + 1);
    off += 5;
    if (l > n - off) return -1;
    switch (key_kind(k)) {
    case KIND_INT:
      if (l != 8) return -1;
      break;
    case KIND_STR:
      if (l > MAX_STR || memchr(p + off, 0, l)) return -1;
      if (k == K_ARG) nargs++;
      if (k == K_ENV) nenvs++;
      if (k == K_XATTR) nxattrs++;
      break;
    default:
      break;
    }
    off += l;
  }
  r->copy = malloc(n + 1);
  r->args = calloc(nargs + 1, sizeof(char *));
  r->envs = calloc(nenvs + 1, sizeof(char *));
  r->xattrs = calloc(nxattrs + 1, sizeof(char *));
  if (!r->copy || !r->args || !r->envs || !r->xattrs) return -2;
  if (n) memcpy(r->copy, p, n);
  r->copy[n] = 0;
  /* pass 2: fill; NUL-terminating a string clobbers the next key byte,
     so that byte is read before. */
  uint8_t *c = r->copy;
  off = 0;
  uint8_t k = n ? c[0] : 0;
  while (off < n) {
    uint32_t l = rd32(c + off + 1);
    size_t v = off + 5;
    uint8_t nk = (v + l < n) ? c[v + l] : 0;
    int kind = key_kind(k);
    if (kind == KIND_INT) {
      r->i[k] = rd64(c + v);
      r->has |= 1ull << k;
    } else if (kind == KIND_STR || kind == KIND_BYTES) {
      c[v + l] = 0;
      const char *s = (const char *)c + v;
      if (k == K_ARG) r->args[r->nargs++] = s;
      else if (k == K_ENV) r->envs[r->nenvs++] = s;
      else if (k == K_XATTR) r->xattrs[r->nxattrs++] = s;
      r->s[k] = s;
      r->len[k] = l;
      r->has |= 1ull << k;
    }
    off = v + l;
    k = nk;
  }
  return 0;
}

void req_free(struct req *r) {
  free(r->copy);
  free(r->args);
  free(r->envs);
  free(r->xattrs);
  r->copy = NULL;
  r->args = r->envs = r->xattrs = NULL;
}
