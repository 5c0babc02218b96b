/* The early thaw of a dump that leaves the tree running (see thaw.c). */
#ifndef FORKD_CRIU_ACTION_THAW_H
#define FORKD_CRIU_ACTION_THAW_H

struct thaw_watch {
    const char *dir;            /* the images dir: the token and the report are beside the hook file */
    const char *control;        /* the freeze control file */
    const char *thawed;         /* the value that thaws it (THAWED, 0) */
    const char *check;          /* the file that says it is frozen */
    const char *frozen_pattern; /* an extended regex matching "frozen" in it */
};

/*
 * At network-unlock, when forkd left the token HOOK.thaw-token: starts a detached
 * watcher that thaws the cgroup as soon as CRIU has put it back to frozen.
 * Returns at once; never fails the dump (without a watcher forkd thaws).
 */
void thaw_watch_start(const struct thaw_watch *w);

/* Claims the token now (when it is there) and thaws, with the same report: the relay's thaw at CRIU's answer. */
void thaw_claim(const struct thaw_watch *w);

#endif
