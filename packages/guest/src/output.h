/* A process's output and end: reading its pipes or PTY into the ring,
   reaping, draining after exit, and the timers that go with it. */
#ifndef FORKD_OUTPUT_H
#define FORKD_OUTPUT_H
#include <stdbool.h>
#include <stdint.h>

#include "proc.h"

bool proc_want_read(const struct proc *p);
void proc_on_readable(struct proc *p, int fd);
void proc_reap(void);
void proc_service(int64_t now); /* drains exited processes, timers */
int proc_poll_timeout(int64_t now); /* ms until next timer, -1 none */

#endif
