/* Connection bookkeeping used by the event loop. */
#ifndef FORKD_CONN_H
#define FORKD_CONN_H
#include "agent.h"

extern int g_nclients;

struct client *client_new(int fd);
void client_sweep(void); /* free closed clients */
int client_expire(int64_t now); /* closes connections that never sent their request; ms to the next deadline, or -1 */
void client_read(struct client *c);
bool client_want_read(const struct client *c);
bool client_want_write(const struct client *c);

#endif
