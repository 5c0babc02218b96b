/* forkd-idmap SRC DST HOSTID COUNT: bind-mounts SRC on DST as an idmapped
 * mount whose ids 0..COUNT-1 on disk read as HOSTID..HOSTID+COUNT-1, so a
 * sandbox whose user namespace maps its root to HOSTID owns its files while
 * the files on disk keep the ids of the template (shared by every sandbox,
 * snapshot and fork, whatever its range). Nothing walks the tree.
 * forkd-idmap --check: exits 0 when the kernel can make such a mount here.
 * With --bind FROM TO it also bind-mounts FROM on TO (a restore's images,
 * next to the root): one process instead of two at every restore.
 * With `-- PROG ARGS...` after them, the mounts are made in a new private
 * mount namespace of this process, which then runs PROG: a container
 * runtime (runc run/restore) then sees the sandbox's root while the host's
 * mount table never holds it. Every tool that reads the whole table (runc,
 * CRIU and systemd read /proc/self/mountinfo per operation) would otherwise
 * pay for every sandbox on the host at each sandbox's start. The container
 * keeps its own copy of the root's mount after PROG exits. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/mount.h>

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A user namespace with the mapping, held by a child that waits to be killed:
 * the kernel takes the mapping from the namespace when the mount is made and
 * keeps it with the mount, so the namespace need not outlive this process. */
static int userns_fd(unsigned long host, unsigned long count)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        char c;
        close(pipefd[1]);
        ssize_t r = read(pipefd[0], &c, 1); /* until the parent is done (EOF) */
        (void)r;
        _exit(0);
    }
    close(pipefd[0]);
    char path[64], map[96];
    int fd = -1;
    snprintf(map, sizeof map, "0 %lu %lu\n", host, count);
    snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
    if (write_file(path, map) == 0) {
        snprintf(path, sizeof path, "/proc/%d/setgroups", (int)pid);
        write_file(path, "deny");
        snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
        if (write_file(path, map) == 0) {
            snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
            fd = open(path, O_RDONLY | O_CLOEXEC);
        }
    }
    int e = errno;
    close(pipefd[1]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    errno = e;
    return fd;
}

static int idmap(const char *src, const char *dst, unsigned long host, unsigned long count)
{
    int ns = userns_fd(host, count);
    if (ns < 0) {
        perror("forkd-idmap: user namespace");
        return 1;
    }
    int tree = (int)syscall(SYS_open_tree, AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
    if (tree < 0) {
        perror("forkd-idmap: open_tree");
        return 1;
    }
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)ns};
    if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
        perror("forkd-idmap: mount_setattr");
        return 1;
    }
    if (dst && syscall(SYS_move_mount, tree, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
        perror("forkd-idmap: move_mount");
        return 1;
    }
    return 0;
}

static int number(const char *s, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || !*s || *end || v > UINT32_MAX)
        return -1;
    *out = v;
    return 0;
}

/* A mount namespace of this process's own, whose mounts propagate nowhere
 * (nor do the host's later ones into it). */
static int private_namespace(void)
{
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        perror("forkd-idmap: private mount namespace");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long host, count;
    if (argc == 3 && strcmp(argv[1], "--check") == 0)
        return idmap(argv[2], NULL, 100000, 65536);
    /* The mount arguments end at "--" (then PROG follows) or at argv's end. */
    int end = 1;
    while (end < argc && strcmp(argv[end], "--") != 0)
        end++;
    int run = end < argc - 1;
    int bind = end == 8 && strcmp(argv[5], "--bind") == 0;
    if ((end != 5 && !bind) || (end < argc && !run) || number(argv[3], &host) || number(argv[4], &count) || !count || host + count > UINT32_MAX) {
        fprintf(stderr, "usage: forkd-idmap SRC DST HOSTID COUNT [--bind FROM TO] [-- PROG ARGS...] | forkd-idmap --check DIR\n");
        return 2;
    }
    if (run && private_namespace() < 0)
        return 1;
    if (idmap(argv[1], argv[2], host, count) != 0)
        return 1;
    if (bind && mount(argv[6], argv[7], NULL, MS_BIND, NULL) < 0) {
        perror("forkd-idmap: bind");
        return 1;
    }
    if (!run)
        return 0;
    execvp(argv[end + 1], argv + end + 1);
    perror("forkd-idmap: exec");
    return 127;
}
