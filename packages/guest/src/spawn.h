/* SPAWN: start a process and attach the requesting connection to it. */
#ifndef FORKD_SPAWN_H
#define FORKD_SPAWN_H
#include "agent.h"

void proc_handle_spawn(struct client *c, const struct req *r);

#endif
