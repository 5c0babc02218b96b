/*
 * forkd-criu-action: CRIU's action script for forkd (see README.md and
 * actions.c). CRIU runs it at every step of a dump or restore with
 * CRTOOLS_SCRIPT_ACTION and CRTOOLS_IMAGE_DIR set; runc also runs it as the
 * restore's createRuntime hook for setup-namespaces. Exit 0 lets CRIU go on;
 * anything else fails the dump (forkd then thaws).
 */
#include <stdlib.h>
#include <string.h>

#include "actions.h"
#include "loopback.h"

int main(void)
{
    const char *action = getenv("CRTOOLS_SCRIPT_ACTION");
    if (action && strcmp(action, "setup-namespaces") == 0)
        return loopback_up();
    const char *dir = getenv("CRTOOLS_IMAGE_DIR");
    return action && dir ? criu_action_run(action, dir) : 0;
}
