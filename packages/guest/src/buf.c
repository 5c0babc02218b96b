#include "buf.h"

#include <stdlib.h>
#include <string.h>

int buf_reserve(struct buf *b, size_t n) {
  if (b->err) return -1;
  if (b->cap - b->len >= n) return 0;
  if (b->off) { /* compact */
    memmove(b->p, b->p + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
    if (b->cap - b->len >= n) return 0;
  }
  size_t want = b->len + n;
  size_t nc = b->cap ? b->cap : 256;
  while (nc < want) nc *= 2;
  uint8_t *np = realloc(b->p, nc);
  if (!np) {
    b->err = true;
    return -1;
  }
  b->p = np;
  b->cap = nc;
  return 0;
}

void buf_append(struct buf *b, const void *d, size_t n) {
  if (buf_reserve(b, n) < 0) return;
  if (n) memcpy(b->p + b->len, d, n);
  b->len += n;
}

void buf_consume(struct buf *b, size_t n) {
  b->off += n;
  if (b->off >= b->len) b->off = b->len = 0;
}

void buf_free(struct buf *b) {
  free(b->p);
  b->p = NULL;
  b->off = b->len = b->cap = 0;
}

void buf_shrink(struct buf *b, size_t keep) {
  if (b->len == b->off && b->cap > keep) buf_free(b);
}
