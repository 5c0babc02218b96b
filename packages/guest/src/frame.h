/* Framing and TLV encode/decode. */
#ifndef FORKD_FRAME_H
#define FORKD_FRAME_H
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "proto.h"

static inline uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void wr32(uint8_t *p, uint32_t v) {
  p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}

/* Encoding: fr_begin returns a mark (relative to live data) for fr_end. */
size_t fr_begin(struct buf *b, uint8_t type);
void fr_end(struct buf *b, size_t mark);
void fr_empty(struct buf *b, uint8_t type);
void tlv_int(struct buf *b, uint8_t key, int64_t v);
void tlv_str(struct buf *b, uint8_t key, const char *s);
void tlv_strn(struct buf *b, uint8_t key, const char *s, size_t n);

/* Decoding of a control payload. Strings are NUL-terminated copies. */
struct req {
  uint8_t *copy;
  uint64_t has; /* bit k set when key k present */
  int64_t i[K_MAXKEY + 1];
  const char *s[K_MAXKEY + 1]; /* str (NUL-terminated) and bytes values */
  uint32_t len[K_MAXKEY + 1];
  const char **args, **envs, **xattrs; /* repeated ARG, ENV, XATTR */
  size_t nargs, nenvs, nxattrs;
};
static inline int req_has(const struct req *r, int k) { return (r->has >> k) & 1; }
static inline int64_t req_int(const struct req *r, int k, int64_t dflt) {
  return req_has(r, k) ? r->i[k] : dflt;
}
static inline const char *req_str(const struct req *r, int k) {
  return req_has(r, k) ? r->s[k] : NULL;
}
/* 0 ok, -1 malformed, -2 out of memory. r must be freed with req_free either way. */
int req_parse(struct req *r, const uint8_t *p, size_t n);
void req_free(struct req *r);

#endif
