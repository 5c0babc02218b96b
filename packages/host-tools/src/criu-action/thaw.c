/*
 * The early thaw. CRIU thaws the cgroup once it has seized every task (they
 * then wait in ptrace stops, not in the freezer), dumps, runs post-dump and
 * network-unlock, puts the freezer back to frozen as it found it, detaches
 * and exits; runc then exits and only then could forkd thaw: 3-7 ms of an
 * 80 ms freeze on a slow host went on CRIU's and runc's ends. From CRIU's
 * write of "frozen" on, nothing of the dump needs the freeze (the images are
 * written, the filesystem snapshot taken; the tasks stay in ptrace stops
 * until CRIU detaches), so a watcher started at network-unlock thaws as
 * soon as the cgroup reads frozen again.
 *
 * One thaw only, and never a later freeze's: forkd and the watcher both
 * claim the token forkd left (HOOK.thaw-token) by renaming it, and only the
 * one whose rename succeeds thaws. forkd claims it when runc has exited; it
 * finds it gone only when the watcher won, and then waits for the watcher's
 * report (HOOK.thawed-at: the instant in ns, or 0 if its thaw failed)
 * before it freezes the tree again. The watcher gives up when CRIU exits
 * with the cgroup not frozen, and after WATCH_DEADLINE_S in any case.
 */
#include "thaw.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io.h"

#define WATCH_DEADLINE_S 60
/* Beside the hook file (forkd-hook), names forkd's early-thaw.ts shares. */
#define HOOK_TOKEN "forkd-hook.thaw-token"
#define HOOK_CLAIMED "forkd-hook.thaw-claimed"
#define HOOK_REPORT "forkd-hook.thawed-at"

/*
 * Claims the token; on success thaws and reports the instant (written whole:
 * forkd may read at any time). Through dirfd, not the hook's path: CRIU names
 * the images dir /proc/CRIU/fd/N, gone once CRIU has exited.
 */
static void claim_and_thaw(const struct thaw_watch *w, int dirfd)
{
    if (renameat(dirfd, HOOK_TOKEN, dirfd, HOOK_CLAIMED) != 0)
        return; /* forkd claimed it first: it thaws */
    long long t = write_str(w->control, w->thawed) == 0 ? now_ns(CLOCK_REALTIME) : 0;
    int fd = openat(dirfd, HOOK_REPORT ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    char stamp[32];
    int n = snprintf(stamp, sizeof stamp, "%lld\n", t);
    int ok = write(fd, stamp, (size_t)n) == n;
    close(fd);
    if (ok)
        renameat(dirfd, HOOK_REPORT ".tmp", dirfd, HOOK_REPORT);
}

/*
 * Waits for frozen (CRIU's write; the cgroup was seen thawed before the
 * fork), sleeping between looks: v2 in poll on cgroup.events (POLLPRI on a
 * change), v1 (no notification) from 20 us doubling to 1 ms; either way
 * woken by CRIU's exit (its pidfd).
 */
static void watch(const struct thaw_watch *w, int dirfd, int fd, int pidfd, regex_t *re, int v2)
{
    long long deadline = now_ns(CLOCK_MONOTONIC) + WATCH_DEADLINE_S * 1000000000LL;
    long sleep_ns = V1_FIRST_SLEEP_NS;
    int gone = 0;
    for (;;) {
        int m = matches(fd, re);
        if (m < 0)
            return;
        if (m) {
            claim_and_thaw(w, dirfd);
            return;
        }
        if (gone || now_ns(CLOCK_MONOTONIC) >= deadline)
            return;
        struct pollfd p[2] = { { .fd = pidfd, .events = POLLIN }, { .fd = fd, .events = POLLPRI } };
        struct timespec ts = { 0, v2 ? 100000000L : sleep_ns };
        if (ppoll(p, v2 ? 2 : 1, &ts, NULL) > 0 && (p[0].revents & POLLIN))
            gone = 1; /* one more look: CRIU's last write may be what woke us */
        sleep_ns = v1_next_sleep(sleep_ns);
    }
}

/* fd moved above 0-2, which the watcher points at /dev/null (CRIU starts its actions with them closed). */
static int above_std(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return moved;
}

void thaw_claim(const struct thaw_watch *w)
{
    int dirfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return;
    claim_and_thaw(w, dirfd);
    close(dirfd);
}

void thaw_watch_start(const struct thaw_watch *w)
{
    int dirfd = above_std(open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dirfd < 0)
        return;
    struct stat st;
    regex_t re;
    if (fstatat(dirfd, HOOK_TOKEN, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
        regcomp(&re, w->frozen_pattern, REG_EXTENDED | REG_NEWLINE | REG_NOSUB) != 0) {
        close(dirfd);
        return;
    }
    int fd = above_std(open(w->check, O_RDONLY | O_CLOEXEC));
    /* Our parent is CRIU: its exit ends the watch. */
    int pidfd = above_std((int)syscall(SYS_pidfd_open, getppid(), 0));
    /* Thawed now, while CRIU waits for this action: the next "frozen" is CRIU's refreeze (the watcher may
       first run after it). Frozen now: not a dump CRIU thawed; nothing to watch for. */
    pid_t pid = fd < 0 || pidfd < 0 || matches(fd, &re) != 0 ? -1 : fork();
    if (pid != 0) {
        close(dirfd);
        if (fd >= 0)
            close(fd);
        if (pidfd >= 0)
            close(pidfd);
        return;
    }
    setsid();
    signal(SIGHUP, SIG_IGN);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
    }
    /* Nothing of CRIU's (its pipes to runc) may stay open in here: runc would wait for us. In three
       system calls, not a thousand: this runs inside the freeze. */
    int keep[3] = { fd, pidfd, dirfd }, from = 3;
    for (int a = 0; a < 3; a++)
        for (int b = a + 1; b < 3; b++)
            if (keep[b] < keep[a]) {
                int t = keep[a];
                keep[a] = keep[b];
                keep[b] = t;
            }
    for (int a = 0; a < 3; a++) {
        if (keep[a] > from)
            syscall(SYS_close_range, from, keep[a] - 1, 0);
        from = keep[a] + 1 > from ? keep[a] + 1 : from;
    }
    syscall(SYS_close_range, from, ~0U, 0);
    watch(w, dirfd, fd, pidfd, &re, ends_with(w->check, "/cgroup.events"));
    _exit(0);
}
