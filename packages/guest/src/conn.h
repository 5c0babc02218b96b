/* Connection bookkeeping used by the event loop. */
#ifndef FORKD_CONN_H
#define FORKD_CONN_H
#include "agent.h"

extern int g_nclients;

struct client *client_new(int fd);
void client_sweep(void); /* free closed clients */
void client_read(struct client *c);
bool client_want_read(const struct client *c);
bool client_want_write(const struct client *c);

#endif
