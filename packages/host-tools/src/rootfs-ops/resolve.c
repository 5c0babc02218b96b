#include "resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int fail(int code, const char *op, const char *path, int err) {
	if (err) fprintf(stderr, "forkd-rootfs-ops %s %s: %s\n", op, path, strerror(err));
	else fprintf(stderr, "forkd-rootfs-ops %s %s: refused\n", op, path);
	return code;
}

bool valid_path(const char *path) {
	size_t n = strlen(path);
	if (n == 0 || n >= PATH_MAX) return false;
	const char *p = path;
	while (*p == '/') p++;
	if (!*p) return false; /* the root itself is never an operand */
	while (*p) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.')) return false;
		p += len;
		while (*p == '/') p++;
	}
	return true;
}

int open_in_root(int rootfd, const char *path, int flags) {
	while (*path == '/') path++;
	struct open_how how = {
		/* No O_NOFOLLOW: with O_PATH it would return the symlink itself; RESOLVE_NO_SYMLINKS refuses a trailing one (ELOOP). */
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	return (int)syscall(SYS_openat2, rootfd, *path ? path : ".", &how, sizeof how);
}

int open_parent(int rootfd, const char *path, char *buf, size_t bufsz, const char **name) {
	if (strlen(path) >= bufsz) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(buf, path);
	size_t n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/') buf[--n] = '\0';
	char *slash = strrchr(buf, '/');
	if (!slash) {
		*name = buf;
		return open_in_root(rootfd, ".", O_PATH | O_DIRECTORY);
	}
	*slash = '\0';
	*name = slash + 1;
	return open_in_root(rootfd, buf, O_PATH | O_DIRECTORY);
}

bool is_refusal(int err) {
	return err == ELOOP || err == EXDEV || err == ENOTDIR || err == EMLINK;
}
