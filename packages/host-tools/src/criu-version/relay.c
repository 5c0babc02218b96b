/*
 * The relay. With runc's RPC, CRIU tells runc of each step of a dump
 * (notify_scripts) and also runs its action script at each, a fork, exec and
 * wait of forkd-criu-action from a process as big as CRIU: 4-9 ms a step
 * here, three of them inside the freeze (network-lock, post-dump,
 * network-unlock). forkd needs only pre-dump (freeze, start the filesystem
 * snapshot) and post-dump (wait for it), and its early thaw. So for a dump
 * the wrapper does not exec CRIU: it starts it on a socketpair of its own and
 * passes every message between runc and CRIU unchanged (file descriptors
 * too), doing forkd's steps in process at CRIU's pre-dump and post-dump
 * notifications before runc hears of them, and thawing at CRIU's answer,
 * which CRIU sends once it has put the freezer back to frozen and detached.
 * CRIU runs no script: forkd names none to it for a relayed dump.
 *
 * CRIU opens the images and work dirs runc names by descriptor as
 * /proc/PEER/fd/N, PEER being whoever made its socket: here the wrapper,
 * which therefore holds runc's dirs open at the same numbers. A request
 * naming other descriptors of runc's (inherited fds, a status fd, a pidfd
 * store), or anything but one dump with notifications on, is not relayed.
 *
 * runc's part in such a dump is its request and an answer of "go on" to each
 * notification; starting runc takes ~20 ms here, more than the relay saves.
 * So the relay can keep runc's request (relay_dump's save path) and later
 * send it to CRIU itself, answering the notifications as runc would
 * (relay_saved): forkd does that for the next dumps of the same init, whose
 * request runc would build again unchanged (see runc-direct-dump.ts).
 */
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../criu-action/actions.h"
#include "pb.h"

#define MAX_MSG (1 << 20)
#define MAX_FDS 16
/* No work dir named (not a failure, which is -1). */
#define NO_FD (-2)
enum { REQ_DUMP = 1, REQ_NOTIFY = 6 };
/* CriuReq { type = NOTIFY, notify_success = false }: a step of forkd's failed; CRIU fails the dump. */
static const uint8_t NOTIFY_FAILED[] = { 0x08, REQ_NOTIFY, 0x18, 0x00 };
/* CriuReq { type = NOTIFY, notify_success = true }: runc's answer to every notification of a dump. */
static const uint8_t NOTIFY_OK[] = { 0x08, REQ_NOTIFY, 0x18, 0x01 };
/* No runc: the wrapper itself asked for the dump (relay_saved). */
#define NO_RUNC (-1)
/* What relay_loop saw of CRIU's answer. */
enum { ANSWER_NONE = -1, ANSWER_FAILED = 0, ANSWER_OK = 1 };

static uint8_t buf[MAX_MSG];

/* Room for the descriptors of one message, aligned for a cmsghdr. */
union fd_ctl {
    char space[CMSG_SPACE(sizeof(int) * MAX_FDS)];
    struct cmsghdr align;
};

struct msg {
    size_t len;
    int fds[MAX_FDS];
    int nfds;
};

struct dump_req {
    int images_fd;
    int work_fd;
};

/* 1 when the request is one dump the relay can carry (see the header comment), with its dir descriptors. */
static int parse_request(const uint8_t *b, size_t n, struct dump_req *r)
{
    r->images_fd = r->work_fd = -1;
    int type = -1, notify = 0, k;
    const uint8_t *p = b;
    struct pb_field f;
    while ((k = pb_next(&p, b + n, &f)) > 0) {
        if (f.num == 1 && f.wire == PB_VARINT)
            type = (int)f.varint;
        else if (f.num == 4)
            return 0; /* keep_open: more requests than one */
        else if (f.num == 2 && f.wire == PB_BYTES) {
            const uint8_t *q = f.data;
            struct pb_field g;
            int j;
            while ((j = pb_next(&q, f.data + f.len, &g)) > 0) {
                if (g.num == 1 && g.wire == PB_VARINT)
                    r->images_fd = pb_int32(&g);
                else if (g.num == 17 && g.wire == PB_VARINT)
                    r->work_fd = pb_int32(&g);
                else if (g.num == 12 && g.wire == PB_VARINT)
                    notify = g.varint != 0;
                else if (g.num == 27 || g.num == 49 || g.num == 62)
                    return 0; /* inherit_fd, status_fd, pidfd_store_sk: more of runc's descriptors */
            }
            if (j < 0)
                return 0;
        }
    }
    return k == 0 && type == REQ_DUMP && notify && r->images_fd > 2 && (r->work_fd == -1 || r->work_fd > 2);
}

/*
 * CRIU's log level for the dump (-1: the request's own). runc asks 4 (debug):
 * ~1,700 lines a dump, one write each, most of them inside the freeze.
 */
static int log_level = -1;

/* The request's CriuOpts.log_level (9) set to log_level in place, when one is asked and the field is one byte (runc's 4 is). */
static void apply_log_level(uint8_t *b, size_t n)
{
    if (log_level < 0)
        return;
    const uint8_t *p = b;
    struct pb_field f;
    while (pb_next(&p, b + n, &f) > 0) {
        if (f.num != 2 || f.wire != PB_BYTES)
            continue;
        const uint8_t *q = f.data;
        struct pb_field g;
        while (pb_next(&q, f.data + f.len, &g) > 0)
            if (g.num == 9 && g.wire == PB_VARINT && g.varint < 0x80 && q[-2] == 0x48) {
                b[q - 1 - b] = (uint8_t)log_level;
                return;
            }
    }
}

/* A message of CRIU's: its type, its success, and for a notification the step's name (NUL-terminated, cut to fit). */
static int parse_response(const uint8_t *b, size_t n, char *script, size_t size, int *success)
{
    int type = -1;
    *success = 0;
    const uint8_t *p = b;
    struct pb_field f;
    script[0] = 0;
    while (pb_next(&p, b + n, &f) > 0) {
        if (f.num == 1 && f.wire == PB_VARINT)
            type = (int)f.varint;
        else if (f.num == 2 && f.wire == PB_VARINT)
            *success = f.varint != 0;
        else if (f.num == 5 && f.wire == PB_BYTES) {
            const uint8_t *q = f.data;
            struct pb_field g;
            while (pb_next(&q, f.data + f.len, &g) > 0)
                if (g.num == 1 && g.wire == PB_BYTES && g.len < size) {
                    memcpy(script, g.data, g.len);
                    script[g.len] = 0;
                }
        }
    }
    return type;
}

static void drop_fds(struct msg *m)
{
    for (int i = 0; i < m->nfds; i++)
        close(m->fds[i]);
    m->nfds = 0;
}

/* One message into buf with the descriptors it carries: its length, 0 at the end, -1 on an error or a cut message. */
static ssize_t recv_msg(int fd, struct msg *m)
{
    union fd_ctl ctl;
    struct iovec iov = { buf, sizeof buf };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space, .msg_controllen = sizeof ctl.space };
    ssize_t n;
    do
        n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    m->nfds = 0;
    for (struct cmsghdr *c = n < 0 ? NULL : CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k && m->nfds < MAX_FDS; i++)
                memcpy(&m->fds[m->nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        }
    if (n > 0 && (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        fprintf(stderr, "forkd-criu: a message too big to relay\n");
        drop_fds(m);
        return -1;
    }
    m->len = n > 0 ? (size_t)n : 0;
    return n;
}

static int send_msg(int fd, const struct msg *m)
{
    union fd_ctl ctl;
    struct iovec iov = { buf, m->len };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (m->nfds) {
        mh.msg_control = ctl.space;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * m->nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * m->nfds);
        memcpy(CMSG_DATA(c), m->fds, sizeof(int) * m->nfds);
    }
    ssize_t n;
    do
        n = sendmsg(fd, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)m->len ? 0 : -1;
}

/* buf made one of our own answers to a notification of CRIU's, sent to CRIU in place of runc's. */
static int answer_criu(struct msg *m, int criu, const uint8_t *answer)
{
    drop_fds(m);
    memcpy(buf, answer, sizeof NOTIFY_OK);
    m->len = sizeof NOTIFY_OK;
    return send_msg(criu, m) == 0 ? 0 : -1;
}

/*
 * A message of CRIU's: forkd's step first at pre-dump and post-dump, the thaw at the answer. 0 to go on,
 * -1 when runc is gone; without runc, the answer ends the dump: ANSWER_OK or ANSWER_FAILED (as 2 + it).
 */
static int from_criu(struct msg *m, int runc, int criu, const char *dir)
{
    char script[32];
    int success;
    int type = parse_response(buf, m->len, script, sizeof script, &success);
    if (type == REQ_NOTIFY) {
        int step = strcmp(script, "pre-dump") == 0 || strcmp(script, "post-dump") == 0;
        if (step && criu_action_run(script, dir) != 0)
            return answer_criu(m, criu, NOTIFY_FAILED);
        if (runc == NO_RUNC)
            return answer_criu(m, criu, NOTIFY_OK);
    } else {
        criu_action_thaw_now(dir);
        if (runc == NO_RUNC) {
            drop_fds(m);
            return 2 + (type == REQ_DUMP && success ? ANSWER_OK : ANSWER_FAILED);
        }
    }
    int r = send_msg(runc, m);
    drop_fds(m);
    return r;
}

/* Until CRIU has ended its side (or runc is gone while CRIU waits for it); without runc, until CRIU's answer. */
static int relay_loop(int runc, int criu, const char *dir)
{
    struct msg m = { 0 };
    int runc_open = runc != NO_RUNC;
    for (;;) {
        struct pollfd p[2] = { { .fd = criu, .events = POLLIN }, { .fd = runc_open ? runc : -1, .events = POLLIN } };
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return ANSWER_NONE;
        }
        if (p[1].revents) {
            if (recv_msg(runc, &m) <= 0) {
                runc_open = 0;
                shutdown(criu, SHUT_WR);
            } else {
                apply_log_level(buf, m.len);
                if (send_msg(criu, &m) != 0)
                    runc_open = 0; /* CRIU is gone: its end reads empty next */
            }
            drop_fds(&m);
        }
        if (p[0].revents) {
            int r = recv_msg(criu, &m) <= 0 ? -1 : from_criu(&m, runc, criu, dir);
            if (r >= 2)
                return r - 2;
            if (r != 0)
                return ANSWER_NONE;
        }
    }
}

/* fd moved to the lowest free number at or above `above` (close-on-exec); -1 on failure, fd then closed. */
static int move_above(int fd, int above)
{
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, above);
    close(fd);
    return moved;
}

/* The fd `fd` of process pid (a dir) opened here, at or above `above`; its path into path. */
static int open_peer_dir(pid_t pid, int fd, int above, char *path, size_t size)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)pid, fd);
    int o = open(link, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (o < 0)
        return -1;
    ssize_t n = path ? readlink(link, path, size - 1) : 0;
    if (n < 0 || (path && n == 0)) {
        close(o);
        return -1;
    }
    if (path)
        path[n] = 0;
    return move_above(o, above);
}

static int exit_status(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* CRIU on its end of the socketpair; it dies with the relay (as it would with runc's kill of it). */
static pid_t start_criu(char **argv, int fd_arg, int criu_end)
{
    pid_t relay = getpid(), pid = fork();
    if (pid != 0)
        return pid;
    char fdarg[16];
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != relay || fcntl(criu_end, F_SETFD, 0) != 0)
        _exit(127);
    snprintf(fdarg, sizeof fdarg, "%d", criu_end);
    argv[fd_arg] = fdarg;
    execv(argv[0], argv);
    perror(argv[0]);
    _exit(127);
}

/* The lowest number above both dirs the request names: where our own descriptors go, so that those numbers stay free for them. */
static int above_dirs(const struct dump_req *req)
{
    return (req->images_fd > req->work_fd ? req->images_fd : req->work_fd) + 1;
}

/* runc's request kept at path for relay_saved (through path.PID.tmp, renamed); failing costs only runc's start next time. */
static void save_request(const char *path, const uint8_t *b, size_t n)
{
    char tmp[4200];
    if (!path || !*path || snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp)
        return;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    int ok = write(fd, b, n) == (ssize_t)n;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp);
}

/*
 * CRIU started on a socketpair of ours, with the dirs (images, work: ours, above the request's numbers;
 * work NO_FD when none is named) at the request's numbers; the request sent from buf when `request` is
 * its length (0: runc's, still on runc's socket, which the loop relays; close_fd is runc's own then).
 * The status to exit with, or -1 before anything changed (the caller can still exec CRIU).
 */
static int run_dump(const struct dump_req *req, int images, int work, int runc, int close_fd, const char *dir, char **argv,
                    int fd_arg, size_t request)
{
    int above = above_dirs(req), sp[2] = { -1, -1 };
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0 || (sp[0] = move_above(sp[0], above)) < 0 ||
        (sp[1] = move_above(sp[1], above)) < 0) {
        fprintf(stderr, "forkd-criu: cannot relay the dump (%s)\n", strerror(errno));
        return -1; /* what is open here is close-on-exec: it goes with an exec */
    }
    /* From here the request is ours to carry: no way back to an exec. */
    if (dup3(images, req->images_fd, O_CLOEXEC) < 0 || (work >= 0 && dup3(work, req->work_fd, O_CLOEXEC) < 0))
        return perror("forkd-criu: dup3"), 1;
    close(images);
    if (work >= 0)
        close(work);
    if (close_fd >= 0 && close_fd != req->images_fd && close_fd != req->work_fd)
        close(close_fd);
    pid_t pid = start_criu(argv, fd_arg, sp[1]);
    close(sp[1]);
    if (pid < 0)
        return perror("forkd-criu: fork"), 1;
    struct msg m = { .len = request };
    int answer = request && send_msg(sp[0], &m) != 0 ? ANSWER_NONE : relay_loop(runc, sp[0], dir);
    close(sp[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int rc = exit_status(status);
    return runc != NO_RUNC || rc != 0 ? rc : answer == ANSWER_OK ? 0 : 1;
}

int relay_dump(int runc_fd, char **argv, int fd_arg, const char *save, int level)
{
    log_level = level;
    struct dump_req req;
    ssize_t n = recv(runc_fd, buf, sizeof buf, MSG_PEEK | MSG_TRUNC);
    if (n <= 0 || n > (ssize_t)sizeof buf || !parse_request(buf, (size_t)n, &req))
        return -1;
    save_request(save, buf, (size_t)n);
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(runc_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return -1;
    int above = above_dirs(&req);
    static char dir[4096];
    int images = open_peer_dir(cred.pid, req.images_fd, above, dir, sizeof dir);
    int work = req.work_fd < 0 ? NO_FD : open_peer_dir(cred.pid, req.work_fd, above, NULL, 0);
    int runc = fcntl(runc_fd, F_DUPFD_CLOEXEC, above);
    if (images < 0 || work == -1 || runc < 0) {
        fprintf(stderr, "forkd-criu: cannot relay the dump (%s)\n", strerror(errno));
        return -1;
    }
    return run_dump(&req, images, work, runc, runc_fd, dir, argv, fd_arg, 0);
}

int relay_saved(const char *path, const char *images_dir, const char *work_dir, char **argv, int fd_arg, int level)
{
    log_level = level;
    struct dump_req req;
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ssize_t n = f < 0 ? -1 : read(f, buf, sizeof buf);
    if (f >= 0)
        close(f);
    if (n <= 0 || n >= (ssize_t)sizeof buf || !parse_request(buf, (size_t)n, &req))
        return fprintf(stderr, "forkd-criu: %s holds no dump request to send\n", path), 2;
    apply_log_level(buf, (size_t)n);
    int above = above_dirs(&req);
    int images = move_above(open(images_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), above);
    int work = req.work_fd < 0 ? NO_FD : move_above(open(work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), above);
    if (images < 0 || work == -1)
        return fprintf(stderr, "forkd-criu: cannot open the dump's dirs (%s)\n", strerror(errno)), 2;
    int r = run_dump(&req, images, work, NO_RUNC, -1, images_dir, argv, fd_arg, (size_t)n);
    return r < 0 ? 2 : r;
}
