/* Per-process output ring: frames in, frames out to attached clients,
   dropping or holding when full. */
#include "ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util.h"

#define RING_KEEP 16384   /* an empty ring larger than this is freed */

static int min_int(int a, int b) { return a < b ? a : b; }

static inline uint32_t ridx(const struct proc *p, uint64_t off) {
  return (uint32_t)(off & (p->cap - 1));
}

static void ring_put(struct proc *p, uint64_t off, const void *src, size_t n) {
  uint32_t i = ridx(p, off);
  size_t first = p->cap - i;
  if (first > n) first = n;
  memcpy(p->ring + i, src, first);
  memcpy(p->ring, (const uint8_t *)src + first, n - first);
}

static uint32_t ring_frame_len(const struct proc *p, uint64_t off) {
  uint8_t h[4];
  for (int k = 0; k < 4; k++) h[k] = p->ring[ridx(p, off + (uint64_t)k)];
  return rd32(h);
}

void ring_release(struct proc *p) {
  free(p->ring);
  p->ring = NULL;
  p->cap = 0;
}

/* Ensure capacity >= total (total <= RING_MAX). Offsets are kept. */
static int ring_reserve(struct proc *p, uint64_t total) {
  if (p->cap >= total) return 0;
  uint32_t nc = p->cap ? p->cap : 512;
  while (nc < total) nc *= 2;
  uint8_t *nr = malloc(nc);
  if (!nr) return -1;
  uint64_t off = p->head, left = ring_used(p);
  while (left) {
    uint32_t i = ridx(p, off);
    size_t chunk = p->cap - i;
    if (chunk > left) chunk = (size_t)left;
    uint32_t j = (uint32_t)(off & (nc - 1));
    size_t c1 = nc - j;
    if (c1 > chunk) c1 = chunk;
    memcpy(nr + j, p->ring + i, c1);
    memcpy(nr, p->ring + i + c1, chunk - c1);
    off += chunk;
    left -= chunk;
  }
  free(p->ring);
  p->ring = nr;
  p->cap = nc;
  return 0;
}

static void ring_drop_oldest(struct proc *p) {
  uint32_t l = ring_frame_len(p, p->head);
  p->dropped += l - 1;
  p->head += 4 + (uint64_t)l;
}

/* Drop frames every attached client is done with: written (v1) or
   acknowledged (v2, whose host may come back for what was in flight). */
void ring_trim(struct proc *p) {
  if (!p->nclients) return;
  uint64_t minpos = UINT64_MAX;
  for (struct client *c = p->clients; c; c = c->pnext) {
    uint64_t done = c->version >= 2 ? c->acked : c->pos;
    if (done < minpos) minpos = done;
  }
  while (p->head < p->end) {
    uint32_t l = ring_frame_len(p, p->head);
    if (p->head + 4 + l > minpos) break;
    p->head += 4 + (uint64_t)l;
  }
  if (p->head == p->end && p->cap > RING_KEEP) ring_release(p);
}

/* A host that detached to take a snapshot comes back for the output: until
   then it is held (the process waits on a full pipe), not dropped. */
bool ring_held(const struct proc *p) {
  return p->nclients || (p->hold_until && now_ms() < p->hold_until);
}

static uint8_t g_discard[4096];

ssize_t ring_read(struct proc *p, int fd, uint8_t type) {
  int avail = 0;
  if (ioctl(fd, FIONREAD, &avail) < 0 || avail <= 0) avail = 512;
  size_t want = (size_t)min_int(avail, (int)MAX_DATA);
  if (ring_held(p)) {
    uint64_t room = RING_MAX - ring_used(p);
    if (room < 6) return -2;
    if (want > room - 5) want = (size_t)(room - 5);
  } else {
    while (RING_MAX - ring_used(p) < want + 5) ring_drop_oldest(p);
  }
  ssize_t n;
  if (ring_reserve(p, ring_used(p) + want + 5) < 0) {
    n = read(fd, g_discard, sizeof g_discard); /* out of memory: lose it */
    if (n > 0) p->dropped += (uint64_t)n;
    return n;
  }
  uint32_t i = ridx(p, p->end + 5);
  size_t first = p->cap - i;
  if (first > want) first = want;
  struct iovec iov[2] = {{p->ring + i, first}, {p->ring, want - first}};
  n = readv(fd, iov, want > first ? 2 : 1);
  if (n > 0) {
    uint8_t h[5];
    wr32(h, (uint32_t)n + 1);
    h[4] = type;
    ring_put(p, p->end, h, 5);
    p->end += 5 + (uint64_t)n;
  }
  return n;
}

uint64_t ring_frame_end(const struct proc *p, uint64_t *bound, uint64_t pos) {
  while (*bound < pos) {
    uint64_t next = *bound + 4 + (uint64_t)ring_frame_len(p, *bound);
    /* past the end: a resume offset that was not a boundary (the host's error); stop at what there is */
    if (next > p->end) return p->end;
    if (next > pos) return next;
    *bound = next;
  }
  return pos;
}

void ring_copy(const struct proc *p, uint64_t pos, uint64_t n, struct buf *b) {
  uint32_t i = ridx(p, pos);
  size_t first = p->cap - i;
  if (first > n) first = (size_t)n;
  buf_append(b, p->ring + i, first);
  buf_append(b, p->ring, (size_t)n - first);
}

ssize_t ring_write(const struct proc *p, int fd, uint64_t pos, uint64_t n) {
  uint32_t i = ridx(p, pos);
  size_t first = p->cap - i;
  if (first > n) first = (size_t)n;
  struct iovec iov[2] = {{p->ring + i, first}, {p->ring, (size_t)n - first}};
  return writev(fd, iov, n > first ? 2 : 1);
}
