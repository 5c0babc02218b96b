#ifndef FORKD_UTIL_H
#define FORKD_UTIL_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

const char *errno_name(int e);        /* "ENOENT"...; "EIO" fallback */
int set_nonblock(int fd);
void close_fd(int *fd);              /* closes *fd if open; *fd = -1 */
int64_t now_ms(void);                 /* CLOCK_MONOTONIC */
/* mkdir -p. New directories get mode (and uid/gid when chown_new). 0 or -errno. */
int mkdir_p(const char *path, mode_t mode, bool chown_new, uid_t uid, gid_t gid);
char *read_small_file(const char *path, size_t max, size_t *len); /* NUL-terminated */
long self_rss_bytes(void);

#endif
