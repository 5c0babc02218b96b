#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* Each returns 0 or an exit code (resolve.h), having printed why on stderr. */
int op_mkdir(int rootfd, const char *path, mode_t mode);
int op_chmod(int rootfd, const char *path, mode_t mode);
int op_install(int rootfd, const char *src, const char *path, mode_t mode);
int op_rmtree(int rootfd, const char *path);
int op_mountpoint(int rootfd, const char *path, bool dir);
int op_symlink(int rootfd, const char *target, const char *path);
int op_unseal(int rootfd, const char *path);
int op_seal_agent(int rootfd, const char *dir, const char *sock, long wait_ms);
int op_check_agent(int rootfd, const char *dir, const char *sock);
int op_du(int rootfd, const char *path);
