/* Input to a process: STDIN / STDIN_EOF frames, WRITE_STDIN, and the write
   that waits while the pipe or terminal is full. */
#ifndef FORKD_STDIN_H
#define FORKD_STDIN_H
#include <stddef.h>
#include <stdint.h>

#include "proc.h"

/* STDIN or STDIN_EOF on c's process stream: 0 done, 1 blocked (pipe full), -1 malformed */
int proc_stdin_frame(struct client *c, struct proc *p, uint8_t type, const uint8_t *pl, size_t n);
/* returns 1 when the request is blocked on the stdin pipe, else 0 */
int proc_handle_write_stdin(struct client *c, const struct req *r, const uint8_t *payload);
int proc_client_stdin_fd(struct client *c); /* where c's pending stdin goes, or -1 */
/* that fd is writable (or gone). 1 when the write is done and the frames
   kept behind it in c->in are to be parsed now. */
int proc_stdin_continue(struct client *c);

#endif
