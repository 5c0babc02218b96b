/*
 * Path resolution inside a sandbox's root that never follows a link the
 * sandbox made: every lookup is openat2(2) relative to a descriptor of the
 * root with RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV, and every final component is acted on with *at() calls
 * on the parent's descriptor (AT_SYMLINK_NOFOLLOW, O_NOFOLLOW), so nothing
 * is looked up by a path string twice.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes (the server maps them to its error codes). */
enum {
	EXIT_IO = 1,      /* an I/O error */
	EXIT_USAGE = 2,   /* bad arguments */
	EXIT_REFUSED = 3, /* a symlink, a mount, a non-directory where forkd needs one: the root was tampered with */
	EXIT_MISSING = 4, /* the path (or the agent's socket) does not exist (yet) */
};

/* Set by the failing call: the exit code and the message printed. */
int fail(int code, const char *op, const char *path, int err);

/* A path inside the root, checked: relative or absolute, no "." / ".." / empty components, < PATH_MAX. */
bool valid_path(const char *path);

/*
 * Opens `path` inside the root (`rootfd`) with `flags` (O_PATH, O_DIRECTORY,
 * ...). -1 with errno: ELOOP for a symlink anywhere on the way, EXDEV for a
 * mount crossing.
 */
int open_in_root(int rootfd, const char *path, int flags);

/*
 * The parent directory of `path` (an O_PATH descriptor) and its last
 * component in `name` (pointing into `path`'s copy in `buf`).
 */
int open_parent(int rootfd, const char *path, char *buf, size_t bufsz, const char **name);

/* errno of a refused resolution: a link, a mount crossing, a non-directory where a directory was needed. */
bool is_refusal(int err);
