/*
 * forkd-rootfs-ops ROOT OP ARG... [OP ARG...]...
 *
 * Every file operation forkd does on the host inside a sandbox's root, done
 * without following anything the sandbox (or a template's author) made: see
 * resolve.h. ROOT is forkd's own path of the root (a pool volume); paths are
 * inside it. Ops run in order, and the first failure stops the rest:
 *
 *   mkdir PATH MODE            mkdir -p, then chmod MODE (octal) the last one
 *   chmod PATH MODE
 *   install SRC PATH MODE      copy host file SRC to a new PATH (never over an existing entry)
 *   rmtree PATH                rm -rf, clearing forkd's immutable flag; missing is fine
 *   mountpoint PATH dir|file   PATH is a real directory, or a regular file (a character device
 *                              counts), kept as it is; anything else there is replaced by an empty one
 *   symlink TARGET PATH        a new symbolic link (never over an existing entry)
 *   unseal DIR                 clear the immutable flag; missing or not a real directory is fine
 *   seal-agent DIR SOCK MS     wait up to MS ms for DIR/SOCK, make DIR immutable, then check
 *                              that DIR is still the root's DIR and SOCK a socket in it
 *   check-agent DIR SOCK       DIR is a real, immutable directory and SOCK a socket in it
 *   du PATH                    {"totalBytes": N, "exclusiveBytes": N} on stdout ("." = the root)
 *
 * Exit: 0, 1 I/O error, 2 usage, 3 refused (a symlink, a mount crossing, a
 * wrong type, an unsealed or swapped agent directory: the root was tampered
 * with), 4 missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ops.h"
#include "resolve.h"

static int usage(void) {
	fprintf(stderr, "usage: forkd-rootfs-ops ROOT OP ARG... (ops: mkdir chmod install rmtree mountpoint symlink unseal seal-agent check-agent du)\n");
	return EXIT_USAGE;
}

static bool parse_mode(const char *s, mode_t *mode) {
	char *end;
	errno = 0;
	long m = strtol(s, &end, 8);
	if (errno || *end || !*s || m < 0 || m > 07777) return false;
	*mode = (mode_t)m;
	return true;
}

static bool parse_ms(const char *s, long *ms) {
	char *end;
	errno = 0;
	*ms = strtol(s, &end, 10);
	return !errno && !*end && *s && *ms >= 0 && *ms <= 600000;
}

struct op {
	const char *name;
	int args;
};

static const struct op OPS[] = {
	{ "mkdir", 2 }, { "chmod", 2 }, { "install", 3 }, { "rmtree", 1 }, { "mountpoint", 2 }, { "symlink", 2 }, { "unseal", 1 }, { "seal-agent", 3 }, { "check-agent", 2 }, { "du", 1 },
};

static int run(int rootfd, const char *op, char **a) {
	mode_t mode;
	long ms;
	/* Paths the sandbox never chooses, but checked anyway: no "..", no ".". */
	if (strcmp(op, "du") || strcmp(a[0], ".")) {
		const char *path = strcmp(op, "install") && strcmp(op, "symlink") ? a[0] : a[1];
		if (!valid_path(path)) return fail(EXIT_USAGE, op, path, EINVAL);
	}
	if (!strcmp(op, "mkdir")) return parse_mode(a[1], &mode) ? op_mkdir(rootfd, a[0], mode) : usage();
	if (!strcmp(op, "chmod")) return parse_mode(a[1], &mode) ? op_chmod(rootfd, a[0], mode) : usage();
	if (!strcmp(op, "install")) return parse_mode(a[2], &mode) ? op_install(rootfd, a[0], a[1], mode) : usage();
	if (!strcmp(op, "rmtree")) return op_rmtree(rootfd, a[0]);
	if (!strcmp(op, "symlink")) return op_symlink(rootfd, a[0], a[1]);
	if (!strcmp(op, "mountpoint")) return !strcmp(a[1], "dir") || !strcmp(a[1], "file") ? op_mountpoint(rootfd, a[0], !strcmp(a[1], "dir")) : usage();
	if (!strcmp(op, "unseal")) return op_unseal(rootfd, a[0]);
	if (!strcmp(op, "seal-agent")) return parse_ms(a[2], &ms) && !strchr(a[1], '/') ? op_seal_agent(rootfd, a[0], a[1], ms) : usage();
	if (!strcmp(op, "check-agent")) return !strchr(a[1], '/') ? op_check_agent(rootfd, a[0], a[1]) : usage();
	if (!strcmp(op, "du")) return op_du(rootfd, a[0]);
	return usage();
}

int main(int argc, char **argv) {
	if (argc < 3) return usage();
	/* The root is forkd's own path (a pool volume), not the sandbox's to choose; still, not through a final symlink. */
	int rootfd = open(argv[1], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0) return fail(EXIT_IO, "open root", argv[1], errno);
	for (int i = 2; i < argc;) {
		const struct op *op = NULL;
		for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++)
			if (!strcmp(argv[i], OPS[k].name)) op = &OPS[k];
		if (!op || i + op->args >= argc) return usage();
		int rc = run(rootfd, op->name, &argv[i + 1]);
		if (rc) return rc;
		i += 1 + op->args;
	}
	return 0;
}
