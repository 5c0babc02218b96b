/* forkd's part of CRIU's dump steps (see actions.c), shared by the action script and the criu wrapper's relay. */
#ifndef FORKD_CRIU_ACTION_ACTIONS_H
#define FORKD_CRIU_ACTION_ACTIONS_H

/* Does forkd's part of CRIU's step `action` (pre-dump, post-dump, network-unlock; others are nothing) of a
 * dump whose images are in dir; 0 lets CRIU go on, anything else fails the dump. */
int criu_action_run(const char *action, const char *dir);

/* The early thaw at CRIU's answer to a dump (it has refrozen and detached by then): thaws when forkd's
 * token is there to claim (see thaw.c). */
void criu_action_thaw_now(const char *dir);

#endif
