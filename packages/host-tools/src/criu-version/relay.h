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
 * With `save`, runc's request is also written there (owner-only) for relay_saved,
 * as runc sent it. With a `level` of 0-4, CRIU gets that log level instead of
 * the request's (runc's 4, debug: ~1,700 writes a dump, mostly in the freeze).
 */
int relay_dump(int runc_fd, char **argv, int fd_arg, const char *save, int level);

/*
 * The dump request relay_dump saved at `path`, sent to CRIU (argv as above) by the wrapper itself with
 * the dirs images_dir and work_dir at the numbers it names, answering CRIU's notifications as runc did:
 * forkd's steps, the thaw at the answer. 0 when CRIU answered success; 2 when it could not start (no
 * request, no dirs: nothing was frozen); otherwise CRIU's failure. `level` as for relay_dump.
 */
int relay_saved(const char *path, const char *images_dir, const char *work_dir, char **argv, int fd_arg, int level);

#endif
