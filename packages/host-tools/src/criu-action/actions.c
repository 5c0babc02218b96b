/*
 * forkd's part of CRIU's dump steps (see README.md): run by CRIU as the
 * action script (main.c: CRTOOLS_SCRIPT_ACTION, CRTOOLS_IMAGE_DIR) or, without
 * a process per step, by the criu wrapper's relay (criu-version/relay.c) at
 * CRIU's RPC notifications. Acts only when forkd left a hook file in the
 * images dir (RuncRuntime.checkpoint):
 *
 *   line 1  the cgroup's freeze control file   (v1 freezer.state, v2 cgroup.freeze)
 *   line 2  the value that freezes it          (FROZEN, 1)
 *   line 3  the file that says it is frozen    (v1 freezer.state, v2 cgroup.events)
 *   line 4  an extended regex matching "frozen" in it
 *   line 5+ argv of the filesystem snapshot to take while frozen (optional)
 *
 * pre-dump: record the instant (HOOK.frozen-at, ns since the epoch), freeze,
 * wait until frozen, then start the snapshot in the background, its exit
 * status to be written into the FIFO HOOK.snap-fifo. post-dump: wait for
 * that status. network-unlock (the script only): with forkd's token
 * HOOK.thaw-token, start the early-thaw watcher (thaw.c); the relay instead
 * thaws at CRIU's answer (criu_action_thaw_now). Stopped tasks get SIGCONT
 * and SIGSTOP while frozen (see tasks.c's note_if_stopped). Every wait blocks in the kernel (poll on cgroup.events, a
 * FIFO read) or sleeps (v1's freezer.state has no notification): nothing
 * spins, and deadlines are in seconds, so a loaded host only makes it slower.
 *
 * The hook is trusted only when it is a regular file of root's that group and
 * others cannot write, in an images dir of the same kind (see read_hook).
 *
 * A non-zero result fails the dump (forkd then thaws).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actions.h"
#include "io.h"
#include "tasks.h"
#include "thaw.h"

#define HOOK_NAME "forkd-hook"
#define MAX_ARGS 64
/* A freeze waits for every task to reach the freezer: tasks in uninterruptible
 * I/O (a busy Btrfs) get there late. */
#define FREEZE_DEADLINE_S 30
/* The Btrfs snapshot commits with the filesystem's transaction: behind a
 * cleaner deleting a thousand subvolumes that takes seconds. */
#define SNAPSHOT_DEADLINE_S 60
/* v1 re-sends the freeze this often to tasks that missed it (as CRIU does). */
#define V1_REFREEZE_NS 100000000LL
/* v2: a missed notification costs at most this much. */
#define V2_RECHECK_MS 100

static char hook[4096];
static const char *dir_path;
static char *lines[4 + MAX_ARGS + 1];
static int nlines;

static int fail(const char *what)
{
    fprintf(stderr, "forkd-criu-action: %s: %s\n", what, strerror(errno));
    return 1;
}

/*
 * The hook names files this root process writes to and a command it runs:
 * only a file root made, in a directory only root can change, is followed.
 * forkd makes both (0600 in a 0700 images dir, in the root-only staging dir
 * or pool); anything else (a symlink, a FIFO, another user's file, one that
 * group or others may write) is refused, checked on the open file itself.
 */
static int unsafe(const struct stat *st, int want_dir, const char *what)
{
    const char *why = NULL;
    if (want_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
        why = want_dir ? "not a directory" : "not a regular file";
    else if (st->st_uid != 0)
        why = "not owned by root";
    else if (st->st_mode & (S_IWGRP | S_IWOTH))
        why = "writable by group or others";
    if (!why)
        return 0;
    fprintf(stderr, "forkd-criu-action: refusing %s %s: %s (uid %u, mode %04o)\n", what, want_dir ? dir_path : hook, why,
            (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777));
    return 1;
}

/* 1: no hook (not a dump of forkd's), 0: read, -1: refused or unreadable. */
static int read_hook(void)
{
    static char buf[65536];
    nlines = 0;
    int dfd = open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return 1;
    /* O_NONBLOCK: a FIFO in its place must not hang the dump before fstat refuses it. */
    int fd = openat(dfd, HOOK_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        close(dfd);
        if (e == ENOENT)
            return 1;
        fprintf(stderr, "forkd-criu-action: refusing hook file %s: %s\n", hook, e == ELOOP ? "a symbolic link" : strerror(e));
        return -1;
    }
    struct stat dst, fst;
    int bad = fstat(dfd, &dst) < 0 || unsafe(&dst, 1, "images dir") || fstat(fd, &fst) < 0 || unsafe(&fst, 0, "hook file");
    close(dfd);
    if (bad) {
        close(fd);
        return -1;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    for (char *p = buf; *p && nlines < (int)(sizeof lines / sizeof *lines) - 1;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        lines[nlines++] = p;
        if (!nl)
            break;
        p = nl + 1;
    }
    lines[nlines] = NULL;
    return nlines >= 4 ? 0 : -1;
}

/* Freezes the cgroup and returns once the kernel says every task is frozen. */
static int freeze(void)
{
    const char *control = lines[0], *value = lines[1], *check = lines[2];
    regex_t re;
    if (regcomp(&re, lines[3], REG_EXTENDED | REG_NEWLINE | REG_NOSUB) != 0) {
        fprintf(stderr, "forkd-criu-action: bad pattern %s\n", lines[3]);
        return 1;
    }
    int fd = open(check, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(check);
    /* v2: cgroup.events announces every change of "frozen": poll(2) on the file
     * itself reports POLLPRI once it changed since it was last read (kernfs),
     * so no change after a read can be missed. Not inotify: releasing an
     * inotify instance waits for an SRCU grace period (10-25 ms measured), and
     * this process's exit is inside the freeze. */
    int v2 = ends_with(check, "/cgroup.events");
    if (write_str(control, value) < 0)
        return fail(control);
    long long start = now_ns(CLOCK_MONOTONIC), deadline = start + FREEZE_DEADLINE_S * 1000000000LL;
    long long refreeze = start + V1_REFREEZE_NS;
    long sleep_ns = V1_FIRST_SLEEP_NS;
    for (;;) {
        int m = matches(fd, &re);
        if (m < 0)
            return fail(check);
        if (m)
            return 0;
        long long t = now_ns(CLOCK_MONOTONIC);
        if (t >= deadline) {
            fprintf(stderr, "forkd-criu-action: the cgroup did not freeze within %d s\n", FREEZE_DEADLINE_S);
            return 1;
        }
        if (v2) {
            struct pollfd p = { .fd = fd, .events = POLLPRI };
            long long left_ms = (deadline - t) / 1000000 + 1;
            poll(&p, 1, left_ms < V2_RECHECK_MS ? (int)left_ms : V2_RECHECK_MS);
        } else {
            /* v1 offers no notification: sleep, never spin. */
            struct timespec ts = { 0, sleep_ns };
            nanosleep(&ts, NULL);
            sleep_ns = v1_next_sleep(sleep_ns);
            if (t >= refreeze) {
                write_str(control, value);
                refreeze = t + V1_REFREEZE_NS;
            }
        }
    }
}

static void fifo_path(char *out, size_t n)
{
    snprintf(out, n, "%s.snap-fifo", hook);
}

/*
 * Runs the snapshot in a detached grandchild of CRIU, or of the relay (CRIU
 * waits only for this process; the relay for none of its children but CRIU) and hands its status to post-dump through the FIFO. The
 * writer's open blocks until post-dump (or forkd, after a failed dump) opens
 * the FIFO for reading; an alarm ends it if nobody ever does.
 */
static int start_snapshot(char **argv)
{
    char fifo[4200];
    fifo_path(fifo, sizeof fifo);
    unlink(fifo);
    if (mkfifo(fifo, 0600) < 0)
        return fail(fifo);
    pid_t pid = fork();
    if (pid < 0)
        return fail("fork");
    if (pid > 0)
        return 0;
    setsid();
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
    }
    /* Nothing of CRIU's (its pipes to runc) may stay open in here: runc would wait for us. */
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    int status = 0;
    pid_t cmd = fork();
    if (cmd == 0) {
        execvp(argv[0], argv);
        _exit(127);
    }
    while (cmd > 0 && waitpid(cmd, &status, 0) < 0 && errno == EINTR) {
    }
    int rc = cmd < 0 ? 126 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    alarm(SNAPSHOT_DEADLINE_S + 30);
    int w = open(fifo, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (w >= 0) {
        char msg[16];
        int len = snprintf(msg, sizeof msg, "%d\n", rc);
        if (write(w, msg, (size_t)len) < 0) {
            /* the reader gave up */
        }
    }
    _exit(0);
}

static int write_frozen_at(void)
{
    char at[4200];
    snprintf(at, sizeof at, "%s.frozen-at", hook);
    char stamp[32];
    snprintf(stamp, sizeof stamp, "%lld\n", now_ns(CLOCK_REALTIME));
    int fd = open(at, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, stamp, strlen(stamp)) < 0)
        return fail(at);
    close(fd);
    return 0;
}

/* How often a freeze that caught a vfork is let go and made again before the dump is left to CRIU as it is. */
#define VFORK_RETRIES 100
#define VFORK_RETRY_NS 2000000L

static const char *thaw_value(void)
{
    return strcmp(lines[1], "FROZEN") == 0 ? "THAWED" : "0";
}

static int pre_dump(void)
{
    char cg[4096];
    snprintf(cg, sizeof cg, "%s", lines[0]);
    char *slash = strrchr(cg, '/');
    if (slash) {
        *slash = 0;
        tasks_note_stopped(cg);
    }
    if (write_frozen_at() != 0 || freeze() != 0)
        return 1;
    /* A vfork caught in the freeze: thaw for a moment so the child can exec, then freeze again. */
    const char *thawed = thaw_value();
    for (int i = 0; slash && i < VFORK_RETRIES && tasks_vfork_waiting(cg); i++) {
        if (write_str(lines[0], thawed) < 0)
            return fail(lines[0]);
        struct timespec ts = { 0, VFORK_RETRY_NS };
        nanosleep(&ts, NULL);
        if (write_frozen_at() != 0 || freeze() != 0)
            return 1;
    }
    tasks_restop_stopped();
    /* Frozen: the filesystem snapshot runs alongside CRIU's dump. */
    return nlines > 4 ? start_snapshot(&lines[4]) : 0;
}

/* Waits for the snapshot's status; the FIFO goes with it (read once). */
static int post_dump(void)
{
    if (nlines <= 4)
        return 0;
    char fifo[4200];
    fifo_path(fifo, sizeof fifo);
    /* Non-blocking open: a reader needs no writer yet; poll then sleeps until the status comes. */
    int fd = open(fifo, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return fail(fifo);
    char buf[32];
    size_t got = 0;
    long long deadline = now_ns(CLOCK_MONOTONIC) + SNAPSHOT_DEADLINE_S * 1000000000LL;
    for (;;) {
        long long left_ms = (deadline - now_ns(CLOCK_MONOTONIC)) / 1000000;
        if (left_ms <= 0) {
            unlink(fifo);
            fprintf(stderr, "forkd-criu-action: the filesystem snapshot did not finish within %d s\n", SNAPSHOT_DEADLINE_S);
            return 1;
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, (int)left_ms);
        if (r < 0 && errno != EINTR)
            return fail("poll");
        if (r <= 0)
            continue;
        ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        if (memchr(buf, '\n', got) || got == sizeof buf - 1)
            break;
    }
    /* Only now: the writer opens it by name, maybe after this reader did. */
    unlink(fifo);
    buf[got] = 0;
    if (got == 0 || atoi(buf) != 0 || buf[0] != '0') {
        fprintf(stderr, "forkd-criu-action: the filesystem snapshot failed (status %s)\n", got ? buf : "none");
        return 1;
    }
    return 0;
}

/* What the early thaw needs of the hook just read. */
static struct thaw_watch hook_watch(void)
{
    return (struct thaw_watch){ dir_path, lines[0], thaw_value(), lines[2], lines[3] };
}

/*
 * CRIU's last action before it puts the freezer back to frozen: the early
 * thaw's watcher starts here (thaw.c), not at post-dump, so that it polls
 * only for the instants before that write, not beside this action.
 */
static int network_unlock(void)
{
    struct thaw_watch w = hook_watch();
    thaw_watch_start(&w);
    return 0;
}

static int set_dir(const char *dir)
{
    dir_path = dir;
    return snprintf(hook, sizeof hook, "%s/%s", dir, HOOK_NAME) >= (int)sizeof hook ? -1 : 0;
}

int criu_action_run(const char *action, const char *dir)
{
    if (strcmp(action, "pre-dump") != 0 && strcmp(action, "post-dump") != 0 && strcmp(action, "network-unlock") != 0)
        return 0;
    if (set_dir(dir) != 0)
        return 1;
    int r = read_hook();
    if (r > 0)
        return 0;
    if (r < 0) {
        fprintf(stderr, "forkd-criu-action: unusable hook file %s\n", hook);
        return 1;
    }
    if (strcmp(action, "network-unlock") == 0)
        return network_unlock();
    return strcmp(action, "pre-dump") == 0 ? pre_dump() : post_dump();
}

void criu_action_thaw_now(const char *dir)
{
    if (set_dir(dir) != 0 || read_hook() != 0)
        return;
    struct thaw_watch w = hook_watch();
    thaw_claim(&w);
}
