/* Page sums: a 128-bit hash of each 4 KiB page of a pages image, kept beside
 * the image so the next snapshot's forkd-patch compares against them instead
 * of reading the image (a reflinked image shares extents, not page cache:
 * reading it is a disk read of the whole image at every snapshot). */
#ifndef FORKD_PAGE_SUMS_H
#define FORKD_PAGE_SUMS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct page_sum {
    uint64_t a, b;
};

/* Two independent 64-bit multiply-rotate hashes of the bytes and their
 * length (xxHash64's round and avalanche with different seeds). */
struct page_sum page_sum(const unsigned char *p, size_t len);

/* The sums of an image, read from `path`; valid only for the file whose
 * inode, size and modification time they record (`st`). NULL when missing,
 * malformed or stale: the caller then compares bytes. Free with free(). */
struct page_sum *sums_load(const char *path, const struct stat *st, size_t *count);

/* Writes `count` sums for the file described by `st` to `path` (through a
 * temporary and a rename). With `base` (the sums loaded from `base_path`,
 * `base_count` of them), the file starts as a reflink of base_path and only
 * the header and the sums that differ are written: a snapshot of an idle
 * sandbox adds a block or two, not 4 bytes per KiB of memory. 0, or -1 with
 * errno. */
int sums_store(const char *path, const struct stat *st, const struct page_sum *sums, size_t count, const char *base_path, const struct page_sum *base, size_t base_count);

/* pwrite(2) until all of it is written (EINTR retried). 0, or -1 with errno. */
int pwrite_all(int fd, const void *buf, size_t len, off_t off);

/* The sums file of an image: ".NAME.sums" beside it (a dot file: never exported). */
int sums_path(char *out, size_t n, const char *image);

#endif
