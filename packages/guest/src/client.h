/* A connection as the operations see it: its lifetime, its output and the
   replies that end a request. The operation units include this, so it
   includes none of them: what an operation holds on a connection is given
   back by the release function conn.c sets. */
#ifndef FORKD_CLIENT_H
#define FORKD_CLIENT_H
#include "agent.h"

#define BUF_KEEP 16384 /* an empty connection buffer above this is freed */

extern struct client *g_clients;
extern int g_nclients;

/* Called on close and on an error reply (after the ERROR frame is queued). */
void client_set_release(void (*release)(struct client *c));

struct client *client_new(int fd);
void client_close(struct client *c);
void client_sweep(void); /* free closed clients */
int client_expire(int64_t now); /* closes connections that never sent their request; ms to the next deadline, or -1 */
int client_flush(struct client *c); /* -1 if the client got closed */
void client_finish(struct client *c); /* CS_CLOSING: flush, then half-close */

void client_error(struct client *c, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void client_error_code(struct client *c, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void client_ok_end(struct client *c); /* queue an empty OK and finish */
/* A required non-empty str key, or NULL after queueing an EINVAL error. */
const char *need_str(struct client *c, const struct req *r, int key, const char *what);

#endif
