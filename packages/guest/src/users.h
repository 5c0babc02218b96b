/* /etc/passwd and /etc/group parsing (no NSS in a static binary). */
#ifndef FORKD_USERS_H
#define FORKD_USERS_H
#include <sys/types.h>

#define USER_MAX_GROUPS 256

struct user_info {
  uid_t uid;
  gid_t gid;
  char name[256];
  char home[1024];
  gid_t groups[USER_MAX_GROUPS];
  int ngroups;
};

/* By name (or a decimal uid when no such name). 0 or -ENOENT. */
int user_by_name(const char *name, struct user_info *u);
/* By uid; falls back to a synthetic entry (root: /root, others: /). */
void user_by_uid(uid_t uid, struct user_info *u);
/* Fill u->groups with the primary gid and every group listing u->name. */
void user_load_groups(struct user_info *u);

#endif
