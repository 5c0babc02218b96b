/* The criu wrapper's relay between runc and CRIU for a dump (see relay.c). */
#ifndef FORKD_CRIU_VERSION_RELAY_H
#define FORKD_CRIU_VERSION_RELAY_H

/*
 * Serves runc's request waiting on runc_fd when it is a dump the relay can
 * carry: runs CRIU (argv, whose argv[fd_arg] becomes CRIU's end of a new
 * socketpair) and relays every message both ways, doing forkd's dump steps
 * (criu-action/actions.c) at CRIU's notifications. Returns the status to exit
 * with (CRIU's), or -1 with the request left unread when it is not such a dump
 * or the relay could not be set up: the caller then execs CRIU as it is.
 */
int relay_dump(int runc_fd, char **argv, int fd_arg);

#endif
