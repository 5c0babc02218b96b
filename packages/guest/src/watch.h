/* WATCH: inotify, optionally recursive (bounded). */
#ifndef FORKD_WATCH_H
#define FORKD_WATCH_H
#include "agent.h"

void watch_handle(struct client *c, const struct req *r);
void watch_on_readable(struct client *c); /* the caller pumps c afterwards */
int watch_fd(const struct client *c);
void watch_free(struct client *c);

#endif
