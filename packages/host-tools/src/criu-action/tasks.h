/* The tasks of a frozen sandbox tree that CRIU could not dump as they are
 * (see tasks.c and main.c's pre_dump). */
#ifndef FORKD_CRIU_ACTION_TASKS_H
#define FORKD_CRIU_ACTION_TASKS_H

/* Notes the tasks of the cgroup at cgroup_dir (and below) stopped by job control. */
void tasks_note_stopped(const char *cgroup_dir);

/* Once frozen: SIGCONT then SIGSTOP to each task noted, so CRIU finds a SIGSTOP pending instead of a stopped task. */
void tasks_restop_stopped(void);

/* Whether a task of the cgroup at cgroup_dir (and below) is a parent waiting for its vfork child. */
int tasks_vfork_waiting(const char *cgroup_dir);

#endif
