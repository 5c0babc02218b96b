/*
 * Disk usage of a sandbox's root, as `btrfs filesystem du -s` reports it
 * (bytes of data extents; "exclusive" = not marked shared by FIEMAP), but
 * walked by descriptors: `btrfs filesystem du` re-opens each entry by its
 * full path string after a stat that follows links, so a running sandbox
 * that swaps a directory for a symlink between the two sends it walking
 * (and opening) host paths.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops.h"
#include "resolve.h"

struct du {
	uint64_t total, shared;
	/* Inodes with more than one link, counted once (open addressing on dev:ino). */
	uint64_t *seen;
	size_t cap, n;
};

static bool seen_before(struct du *u, const struct stat *st) {
	uint64_t key = ((uint64_t)st->st_dev << 40) ^ (uint64_t)st->st_ino;
	if (!key) key = 1;
	if (u->n * 2 >= u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 1024;
		uint64_t *t = calloc(cap, sizeof *t);
		if (!t) return false;
		for (size_t i = 0; i < u->cap; i++)
			if (u->seen[i])
				for (size_t j = u->seen[i] % cap;; j = (j + 1) % cap)
					if (!t[j]) {
						t[j] = u->seen[i];
						break;
					}
		free(u->seen);
		u->seen = t;
		u->cap = cap;
	}
	for (size_t j = key % u->cap;; j = (j + 1) % u->cap) {
		if (u->seen[j] == key) return true;
		if (!u->seen[j]) {
			u->seen[j] = key;
			u->n++;
			return false;
		}
	}
}

#define SKIP_FLAGS (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_DATA_INLINE)

static void file_space(struct du *u, int fd) {
	union {
		struct fiemap fm;
		char b[16384];
	} buf;
	struct fiemap *fm = &buf.fm;
	unsigned count = (sizeof buf - sizeof *fm) / sizeof(struct fiemap_extent);
	memset(fm, 0, sizeof *fm);
	for (bool last = false; !last;) {
		fm->fm_length = ~0ULL;
		fm->fm_extent_count = count;
		if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0 || fm->fm_mapped_extents == 0) return;
		struct fiemap_extent *e = fm->fm_extents;
		for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
			if (e[i].fe_flags & FIEMAP_EXTENT_LAST) last = true;
			if ((e[i].fe_flags & SKIP_FLAGS) || e[i].fe_length == 0) continue;
			u->total += e[i].fe_length;
			if (e[i].fe_flags & FIEMAP_EXTENT_SHARED) u->shared += e[i].fe_length;
		}
		struct fiemap_extent *l = &e[fm->fm_mapped_extents - 1];
		fm->fm_start = l->fe_logical + l->fe_length;
	}
}

/* A regular file reached by name from its directory: O_PATH first (opening a planted device or FIFO would run its driver or block), then re-opened through the descriptor. */
static void add_file(struct du *u, int dirfd, const char *name) {
	int p = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (p < 0) return;
	struct stat st;
	if (fstat(p, &st) == 0 && S_ISREG(st.st_mode) && !(st.st_nlink > 1 && seen_before(u, &st))) {
		char proc[64];
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", p);
		int fd = open(proc, O_RDONLY | O_NOATIME | O_CLOEXEC);
		if (fd < 0) fd = open(proc, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			file_space(u, fd);
			close(fd);
		}
	}
	close(p);
}

static void walk(struct du *u, int fd, int depth) {
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
		if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) {
			int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				if (depth < 4096) walk(u, sub, depth + 1);
				else close(sub);
				continue;
			}
		}
		if (e->d_type == DT_REG || e->d_type == DT_UNKNOWN) add_file(u, dirfd(d), e->d_name);
	}
	closedir(d);
}

int op_du(int rootfd, const char *path) {
	int fd = strcmp(path, ".") ? open_in_root(rootfd, path, O_RDONLY | O_DIRECTORY) : openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) return fail(is_refusal(errno) ? EXIT_REFUSED : errno == ENOENT ? EXIT_MISSING : EXIT_IO, "du", path, errno);
	struct du u = { 0 };
	walk(&u, fd, 0);
	free(u.seen);
	printf("{\"totalBytes\": %llu, \"exclusiveBytes\": %llu}\n", (unsigned long long)u.total, (unsigned long long)(u.total - u.shared));
	return 0;
}
