#include "ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "resolve.h"

/* A refused resolution is the sandbox's doing (exit 3); anything else is an I/O error. */
static int fail_errno(const char *op, const char *path, int err) {
	if (err == ENOENT) return fail(EXIT_MISSING, op, path, err);
	return fail(is_refusal(err) ? EXIT_REFUSED : EXIT_IO, op, path, err);
}

/* One component below `dirfd`, with the same refusals as open_in_root. */
static int open_beneath(int dirfd, const char *name, int flags) {
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	return (int)syscall(SYS_openat2, dirfd, name, &how, sizeof how);
}

/* chmod through the descriptor (an O_PATH fd cannot fchmod; the /proc magic link names that very inode, never a path). */
static int chmod_fd(int fd, mode_t mode) {
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	return chmod(proc, mode);
}

int op_mkdir(int rootfd, const char *path, mode_t mode) {
	char buf[PATH_MAX];
	snprintf(buf, sizeof buf, "%s", path);
	int cur = dup(rootfd);
	if (cur < 0) return fail_errno("mkdir", path, errno);
	for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST) {
			int e = errno;
			close(cur);
			return fail_errno("mkdir", path, e);
		}
		int next = open_beneath(cur, c, O_PATH | O_DIRECTORY);
		int e = errno;
		close(cur);
		if (next < 0) return fail_errno("mkdir", path, e);
		cur = next;
	}
	int rc = chmod_fd(cur, mode) < 0 ? fail_errno("mkdir", path, errno) : 0;
	close(cur);
	return rc;
}

int op_chmod(int rootfd, const char *path, mode_t mode) {
	int fd = open_in_root(rootfd, path, O_PATH);
	if (fd < 0) return fail_errno("chmod", path, errno);
	int rc = chmod_fd(fd, mode) < 0 ? fail_errno("chmod", path, errno) : 0;
	close(fd);
	return rc;
}

static int copy_fd(int in, int out) {
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (n == 0) return 0;
		if (n > 0) continue;
		if (errno == EINTR) continue;
		if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return -1;
		break;
	}
	char b[65536];
	for (;;) {
		ssize_t n = read(in, b, sizeof b);
		if (n == 0) return 0;
		if (n < 0) {
			if (errno == EINTR) continue;
			return -1;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, b + off, (size_t)(n - off));
			if (w < 0) {
				if (errno == EINTR) continue;
				return -1;
			}
			off += w;
		}
	}
}

int op_install(int rootfd, const char *src, const char *path, mode_t mode) {
	char buf[PATH_MAX];
	const char *name;
	int parent = open_parent(rootfd, path, buf, sizeof buf, &name);
	if (parent < 0) return fail_errno("install", path, errno);
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		close(parent);
		return fail(EXIT_IO, "install", src, errno);
	}
	/* Exclusive: an entry already there (whatever it is, a link included) is never written through. */
	int out = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int rc = 0;
	if (out < 0) rc = errno == EEXIST ? fail(EXIT_REFUSED, "install", path, EEXIST) : fail_errno("install", path, errno);
	else if (copy_fd(in, out) < 0 || fchmod(out, mode) < 0) rc = fail(EXIT_IO, "install", path, errno);
	if (out >= 0 && close(out) < 0 && !rc) rc = fail(EXIT_IO, "install", path, errno);
	close(in);
	close(parent);
	return rc;
}

/* Clears immutable/append-only so that forkd can empty a directory it sealed. */
static void clear_seal(int fd) {
	int flags = 0;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL))) {
		flags &= ~(FS_IMMUTABLE_FL | FS_APPEND_FL);
		ioctl(fd, FS_IOC_SETFLAGS, &flags);
	}
}

/* Empties the directory `fd` (consumed) without following anything: each entry is reached by name from its parent's descriptor. */
static int empty_dir(int fd) {
	clear_seal(fd);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	int rc = 0;
	for (struct dirent *e; (errno = 0, e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
		int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0) {
			if (empty_dir(sub) < 0 || unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) < 0) rc = -1;
		} else if ((errno == ENOTDIR || errno == ELOOP) && unlinkat(dirfd(d), e->d_name, 0) == 0) {
			/* not a directory: removed as an entry */
		} else {
			rc = -1;
		}
	}
	if (errno) rc = -1;
	int e = errno;
	closedir(d);
	errno = e;
	return rc;
}

int op_rmtree(int rootfd, const char *path) {
	char buf[PATH_MAX];
	const char *name;
	int parent = open_parent(rootfd, path, buf, sizeof buf, &name);
	if (parent < 0) return errno == ENOENT ? 0 : fail_errno("rmtree", path, errno);
	int rc = 0;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		if (empty_dir(fd) < 0 || unlinkat(parent, name, AT_REMOVEDIR) < 0) rc = fail(EXIT_IO, "rmtree", path, errno);
	} else if (errno == ENOTDIR || errno == ELOOP) {
		if (unlinkat(parent, name, 0) < 0 && errno != ENOENT) rc = fail(EXIT_IO, "rmtree", path, errno);
	} else if (errno != ENOENT) {
		rc = fail(EXIT_IO, "rmtree", path, errno);
	}
	close(parent);
	return rc;
}

/*
 * A mount point of a restore: runc and CRIU bind onto it by path, so a
 * symlink the sandbox left there would move the mount (or fail the restore).
 * What is already the right kind stays, content and all (a real directory,
 * or a regular file or character device for a file); anything else is
 * removed as by rmtree and replaced by an empty one.
 */
int op_mountpoint(int rootfd, const char *path, bool dir) {
	char buf[PATH_MAX];
	const char *name;
	int parent = open_parent(rootfd, path, buf, sizeof buf, &name);
	if (parent < 0) return fail_errno("mountpoint", path, errno);
	struct stat st;
	int rc = 0;
	bool there = fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	bool right = there && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode) || S_ISCHR(st.st_mode));
	if (!there && errno != ENOENT) rc = fail(EXIT_IO, "mountpoint", path, errno);
	else if (!right && there && (rc = op_rmtree(rootfd, path)) != 0) {
		/* rmtree said why */
	} else if (!right) {
		int fd = -1;
		if (dir ? mkdirat(parent, name, 0755) < 0 : (fd = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0) rc = fail_errno("mountpoint", path, errno);
		if (fd >= 0) close(fd);
	}
	close(parent);
	return rc;
}

/* A new symbolic link at PATH to TARGET (never over an existing entry); TARGET is forkd's, never followed here. */
int op_symlink(int rootfd, const char *target, const char *path) {
	char buf[PATH_MAX];
	const char *name;
	int parent = open_parent(rootfd, path, buf, sizeof buf, &name);
	if (parent < 0) return fail_errno("symlink", path, errno);
	int rc = symlinkat(target, parent, name) < 0 ? (errno == EEXIST ? fail(EXIT_REFUSED, "symlink", path, EEXIST) : fail_errno("symlink", path, errno)) : 0;
	close(parent);
	return rc;
}

static int set_immutable(int fd, bool on) {
	int flags = 0;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0) return -1;
	int want = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
	return want == flags ? 0 : ioctl(fd, FS_IOC_SETFLAGS, &want);
}

int op_unseal(int rootfd, const char *path) {
	int fd = open_in_root(rootfd, path, O_RDONLY | O_DIRECTORY);
	/* Missing, or not a real directory: nothing forkd sealed is there (rmtree removes whatever it is). */
	if (fd < 0) return errno == ENOENT || is_refusal(errno) ? 0 : fail_errno("unseal", path, errno);
	int rc = set_immutable(fd, false) < 0 ? fail(EXIT_IO, "unseal", path, errno) : 0;
	close(fd);
	return rc;
}

/* The agent's directory must be a direct child of the root: the root is forkd's, so pinning the child pins the whole path. */
static bool top_level(const char *dir) {
	while (*dir == '/') dir++;
	return !strchr(dir, '/');
}

/* Waits until `name` exists in the directory, at most `ms`: looks again after
 * sleeps that start at 0.25 ms and double up to 2 ms. Not inotify: releasing an
 * inotify instance waits for an SRCU grace period (10-25 ms measured here, at
 * close or at exit), which every start and restore would wait for, while a
 * restored agent's socket is there at the first look. */
static bool wait_entry(int dirfd, const char *name, long ms) {
	struct stat st;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long sleep_us = 250;
	for (;;) {
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) return true;
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left_us = ms * 1000 - ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000);
		if (left_us <= 0) return false;
		long us = sleep_us < left_us ? sleep_us : left_us;
		struct timespec d = { us / 1000000, (us % 1000000) * 1000 };
		nanosleep(&d, NULL);
		if (sleep_us < 2000) sleep_us *= 2;
	}
}

int op_seal_agent(int rootfd, const char *dir, const char *sock, long wait_ms) {
	if (!top_level(dir)) return fail(EXIT_USAGE, "seal-agent", dir, EINVAL);
	int fd = open_in_root(rootfd, dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0) return fail(errno == ENOENT || is_refusal(errno) ? EXIT_REFUSED : EXIT_IO, "seal-agent", dir, errno);
	int rc = 0;
	struct stat a, b, s;
	int again = -1;
	if (!wait_entry(fd, sock, wait_ms)) {
		rc = fail(EXIT_MISSING, "seal-agent", sock, ENOENT);
	} else if (set_immutable(fd, true) < 0) {
		rc = fail(EXIT_IO, "seal-agent", dir, errno);
	} else if ((again = open_in_root(rootfd, dir, O_PATH | O_DIRECTORY)) < 0 || fstat(fd, &a) < 0 || fstat(again, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		/* Sealed, but it is no longer the directory the root names: it was swapped before the seal took. */
		rc = fail(EXIT_REFUSED, "seal-agent", dir, 0);
	} else if (fstatat(fd, sock, &s, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(s.st_mode)) {
		/* Sealed now, so what is checked here stays so until forkd unseals it. */
		rc = fail(EXIT_REFUSED, "seal-agent", sock, 0);
	}
	if (again >= 0) close(again);
	close(fd);
	return rc;
}

int op_check_agent(int rootfd, const char *dir, const char *sock) {
	if (!top_level(dir)) return fail(EXIT_USAGE, "check-agent", dir, EINVAL);
	int fd = open_in_root(rootfd, dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0) return fail(errno == ENOENT || is_refusal(errno) ? EXIT_REFUSED : EXIT_IO, "check-agent", dir, errno);
	int flags = 0, rc = 0;
	struct stat s;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0) rc = fail(EXIT_IO, "check-agent", dir, errno);
	else if (!(flags & FS_IMMUTABLE_FL)) rc = fail(EXIT_REFUSED, "check-agent (not sealed)", dir, 0);
	else if (fstatat(fd, sock, &s, AT_SYMLINK_NOFOLLOW) < 0) rc = fail(errno == ENOENT ? EXIT_MISSING : EXIT_IO, "check-agent", sock, errno);
	else if (!S_ISSOCK(s.st_mode)) rc = fail(EXIT_REFUSED, "check-agent", sock, 0);
	close(fd);
	return rc;
}
