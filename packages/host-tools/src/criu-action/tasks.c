/* What forkd-criu-action looks at of a frozen tree's tasks (see main.c). */
#include "tasks.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/*
 * Tasks of the cgroup at dir (and below) stopped by job control (state T: a
 * shell's Ctrl-Z, a `kill -STOP`). CRIU's ptrace attach to a stopped task in
 * a frozen cgroup waits in the kernel for it to trap again, which a frozen
 * task never does: the dump would hang with the sandbox frozen. So, once the
 * tree is frozen, each gets SIGCONT and then SIGSTOP: no longer stopped, it
 * cannot run either (frozen), and CRIU finds the SIGSTOP pending, records
 * the task as stopped and stops it again after the dump (and after every
 * restore). Its parent sees one continue and one stop more.
 */
#define MAX_STOPPED 256
static pid_t stopped_pids[MAX_STOPPED];
static int nstopped;

/*
 * Calls visit for every pid in cgroup.procs of the cgroup at dir and of the
 * cgroups below it (8 levels at most) until visit returns nonzero, which is
 * then returned.
 */
static int each_cgroup_pid(const char *dir, int depth, int (*visit)(long pid))
{
    char path[4400];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    FILE *f = fopen(path, "re");
    int stop = 0;
    if (f) {
        long pid;
        while (!stop && fscanf(f, "%ld", &pid) == 1)
            stop = visit(pid);
        fclose(f);
    }
    if (stop || depth >= 8)
        return stop;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    while (!stop && (e = readdir(d))) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        stop = each_cgroup_pid(path, depth + 1, visit);
    }
    closedir(d);
    return stop;
}

/* Notes pid if it is stopped; nonzero once the list is full. */
static int note_if_stopped(long pid)
{
    char stat_path[64], buf[512];
    snprintf(stat_path, sizeof stat_path, "/proc/%ld/stat", pid);
    int fd = open(stat_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    /* The state follows the last ')': the command name may hold anything. */
    char *p = strrchr(buf, ')');
    if (p && p[1] == ' ' && p[2] == 'T')
        stopped_pids[nstopped++] = (pid_t)pid;
    return nstopped >= MAX_STOPPED;
}

void tasks_note_stopped(const char *cgroup_dir)
{
    each_cgroup_pid(cgroup_dir, 0, note_if_stopped);
}

void tasks_restop_stopped(void)
{
    for (int i = 0; i < nstopped; i++) {
        kill(stopped_pids[i], SIGCONT);
        kill(stopped_pids[i], SIGSTOP);
    }
}

/*
 * Whether a thread of pid is a parent waiting for
 * its vfork child to exec or exit (wchan kernel_clone, or
 * wait_for_vfork_done where that is not inlined). CRIU cannot dump one:
 * once it has seized the child, the parent never leaves that wait, and the
 * dump fails after CRIU's 10 s timeout with "Unseizable non-zombie ...
 * state D" (a shell loop running commands is in that window often, the
 * more so where exec is slow). The window lasts until the child's exec.
 */
static int waits_for_vfork(long pid)
{
    char task_dir[64];
    snprintf(task_dir, sizeof task_dir, "/proc/%ld/task", pid);
    DIR *t = opendir(task_dir);
    if (!t)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(t))) {
        if (e->d_name[0] == '.')
            continue;
        char wchan_path[400], wchan[64] = {0};
        snprintf(wchan_path, sizeof wchan_path, "%s/%s/wchan", task_dir, e->d_name);
        int fd = open(wchan_path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, wchan, sizeof wchan - 1);
        close(fd);
        found = n > 0 && (strcmp(wchan, "kernel_clone") == 0 || strcmp(wchan, "wait_for_vfork_done") == 0);
    }
    closedir(t);
    return found;
}

int tasks_vfork_waiting(const char *cgroup_dir)
{
    return each_cgroup_pid(cgroup_dir, 0, waits_for_vfork);
}
