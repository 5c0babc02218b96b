/* Process streams: clients attached to a process, its output written to
   them, and the frames they send (STDIN goes on to stdin.c). */
#ifndef FORKD_STREAM_H
#define FORKD_STREAM_H
#include <stdint.h>

#include "proc.h"

void proc_attach(struct client *c, struct proc *p, int64_t from);
void proc_handle_attach(struct client *c, const struct req *r);
void proc_detach(struct client *c);
void proc_client_pump(struct client *c);
void proc_pump_clients(struct proc *p);
/* How long a held stream waits for its host once the host is back (HOLD_MS; --hold-ms, for tests). */
extern int64_t g_hold_ms;
void procs_host_back(int64_t now);
/* frames from the host on a process stream; returns 1 when the frame is
   blocked (stdin pipe full), 0 otherwise */
int proc_stream_frame(struct client *c, uint8_t type, const uint8_t *p, size_t n);
void proc_linger_frame(struct client *c, uint8_t type, const uint8_t *p, size_t n);

#endif
