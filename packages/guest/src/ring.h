/* A process's output ring: wire frames [u32 len][u8 type][data] at ring
   offsets head..end, kept until every attached client is done with them. */
#ifndef FORKD_RING_H
#define FORKD_RING_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "proc.h"

static inline uint64_t ring_used(const struct proc *p) { return p->end - p->head; }

bool ring_held(const struct proc *p);
/* Reads up to MAX_DATA from fd into one frame of the given type. >0 bytes
   read, -2 no room (held), else read(2)'s 0 or -1 with errno. */
ssize_t ring_read(struct proc *p, int fd, uint8_t type);
/* writev of ring bytes [pos, pos + n) to fd */
ssize_t ring_write(const struct proc *p, int fd, uint64_t pos, uint64_t n);
/* The end of the frame offset pos is in (pos itself at a frame boundary), walking
   from *bound, a boundary at or below pos, which is moved up to the last one. */
uint64_t ring_frame_end(const struct proc *p, uint64_t *bound, uint64_t pos);
/* Appends ring bytes [pos, pos + n) to b. */
void ring_copy(const struct proc *p, uint64_t pos, uint64_t n, struct buf *b);
void ring_trim(struct proc *p);
void ring_release(struct proc *p);

#endif
