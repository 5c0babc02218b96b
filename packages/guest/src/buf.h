/* Growable byte buffer: live data is p[off..len). */
#ifndef FORKD_BUF_H
#define FORKD_BUF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf {
  uint8_t *p;
  size_t off, len, cap;
  bool err; /* sticky allocation failure */
};

static inline size_t buf_size(const struct buf *b) { return b->len - b->off; }
static inline uint8_t *buf_data(const struct buf *b) { return b->p + b->off; }

int buf_reserve(struct buf *b, size_t n); /* cap - len >= n afterwards, or -1 */
void buf_append(struct buf *b, const void *d, size_t n);
void buf_consume(struct buf *b, size_t n);
void buf_free(struct buf *b);
void buf_shrink(struct buf *b, size_t keep); /* free storage if empty and cap > keep */

#endif
