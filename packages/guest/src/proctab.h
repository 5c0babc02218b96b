/* The process table: lookup, removal of exited entries, LIST_PROCS, KILL. */
#ifndef FORKD_PROCTAB_H
#define FORKD_PROCTAB_H
#include <stdint.h>
#include <sys/types.h>

#include "proc.h"

extern struct proc *g_procs;
extern int g_nprocs;

void proc_add(struct proc *p); /* gives it an id, appends it */
struct proc *proc_find_pid(pid_t pid);
struct proc *proc_find_id(uint64_t id);
struct proc *proc_find_tag(const char *tag);
struct proc *proc_find_req(const struct req *r); /* by PID, else by TAG */
void proc_remove(struct proc *p);
void proc_maybe_remove(struct proc *p); /* an exited entry nobody is attached to */
void proc_evict_exited(void);            /* keeps at most MAX_EXITED exited entries */
void proc_sweep(void);                   /* frees removed entries */
int proc_signal_group(pid_t pid, int sig);

void proc_handle_kill(struct client *c, const struct req *r);
void proc_handle_list(struct client *c);
int proc_list_pump(struct client *c);

#endif
