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

/* setup-namespaces (restore): CRIU has made the tree's namespaces and not
 * yet restored its sockets. A network namespace CRIU made itself (a
 * sandbox in a user namespace) has its loopback down, and re-connecting an
 * established TCP socket over 127.0.0.1 then fails (ENETUNREACH): bring it
 * up first. In a namespace the host made, it is up already. */
int loopback_up(void)
{
    const char *pid = getenv("CRTOOLS_INIT_PID");
    char path[64];
    if (!pid || snprintf(path, sizeof path, "/proc/%s/ns/net", pid) >= (int)sizeof path)
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
