#ifndef FORKD_CRIU_ACTION_LOOPBACK_H
#define FORKD_CRIU_ACTION_LOOPBACK_H

/* Brings up the loopback of the network namespace of CRTOOLS_INIT_PID; 0 or 1. */
int loopback_up(void);

#endif
