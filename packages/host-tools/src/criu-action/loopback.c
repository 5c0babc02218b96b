/* forkd-criu-action at setup-namespaces (restore): see loopback.h. */
#include "loopback.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* The restored init's pid from the OCI state runc writes to a hook's stdin
 * ({"ociVersion":…,"id":…,"status":…,"pid":N,…}: runc's own JSON, the id
 * forkd's): 0 when there is none. */
static long pid_from_state(void)
{
    char buf[8192];
    size_t n = 0;
    for (ssize_t r; n < sizeof buf - 1 && (r = read(0, buf + n, sizeof buf - 1 - n)) != 0;) {
        if (r < 0)
            return 0;
        n += (size_t)r;
    }
    buf[n] = '\0';
    const char *p = strstr(buf, "\"pid\":");
    return p ? strtol(p + 6, NULL, 10) : 0;
}

/* setup-namespaces (restore): CRIU has made the tree's namespaces and not
 * yet restored its sockets. A network namespace CRIU made itself (a
 * sandbox in a user namespace) has its loopback down, and re-connecting an
 * established TCP socket over 127.0.0.1 then fails (ENETUNREACH): bring it
 * up first. In a namespace the host made, it is up already. Run by runc as
 * the restore's createRuntime hook (the pid in the state on stdin), which
 * runc runs at that very step: no CRIU action script runs at a restore, so
 * its other six steps cost no process each. */
int loopback_up(void)
{
    const char *env = getenv("CRTOOLS_INIT_PID");
    long pid = env ? strtol(env, NULL, 10) : pid_from_state();
    char path[64];
    if (pid <= 0 || snprintf(path, sizeof path, "/proc/%ld/ns/net", pid) >= (int)sizeof path)
        return 0;
    int ns = open(path, O_RDONLY | O_CLOEXEC);
    if (ns < 0 || setns(ns, CLONE_NEWNET) < 0) {
        perror("forkd-criu-action: network namespace");
        return 1;
    }
    close(ns);
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
        perror("forkd-criu-action: lo");
        return 1;
    }
    if (!(ifr.ifr_flags & IFF_UP)) {
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
            perror("forkd-criu-action: lo up");
            return 1;
        }
    }
    close(s);
    return 0;
}
