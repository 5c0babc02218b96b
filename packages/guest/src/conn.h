/* Connections as the event loop drives them: reading, state machine, pumping. */
#ifndef FORKD_CONN_H
#define FORKD_CONN_H
#include "agent.h"

void conn_release(struct client *c); /* for client_set_release */
void client_read(struct client *c);
void client_pump(struct client *c);
/* the process took the blocked STDIN (or its stdin went away): go on with
   the input behind it */
void client_stdin_ready(struct client *c);
bool client_want_read(const struct client *c);
bool client_want_write(const struct client *c);

#endif
