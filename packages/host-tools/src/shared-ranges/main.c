/* forkd-shared-ranges A B: the byte ranges at which files A and B hold the
 * same bytes because they refer to the same data on disk (a reflink of one
 * into the other, or pages forkd-patch left shared), found from the files'
 * extent items without reading their data. See README.md. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/btrfs_tree.h>
#include "../btrfs-search.h"

/* One file extent item: [logical, logical+len) holds the data at `offset`
 * bytes into the (possibly compressed) extent starting at disk_bytenr. */
struct ext {
    uint64_t logical, len, disk_bytenr, offset;
    uint8_t compression, type;
};

struct exts {
    struct ext *v;
    size_t n, cap;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: forkd-shared-ranges A B\n"
            "  A and B: regular files on one Btrfs filesystem. Syncs both, reads their\n"
            "  extent items (BTRFS_IOC_TREE_SEARCH) and prints one line \"START LEN\" per\n"
            "  maximal byte range, in order, where both files refer to the same bytes of\n"
            "  the same regular extent at the same offset into it: data Btrfs never\n"
            "  rewrites in place, so the bytes there are equal. Holes, inline and\n"
            "  preallocated extents are never reported.\n"
            "  exit: 0 ok, 1 error (message on stderr), 2 usage\n");
}

static int add_item(const struct btrfs_ioctl_search_header *h, const void *item, void *ctx)
{
    struct exts *e = ctx;
    struct btrfs_file_extent_item fi_copy;
    const struct btrfs_file_extent_item *fi = &fi_copy;
    /* An inline item is shorter than the struct (its data starts at disk_bytenr): never shared here. */
    if (h->len < sizeof(fi_copy))
        return 0;
    memcpy(&fi_copy, item, sizeof(fi_copy));
    if (fi->type != BTRFS_FILE_EXTENT_REG || fi->disk_bytenr == 0 || fi->encryption || fi->other_encoding)
        return 0;
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 256;
        struct ext *v = realloc(e->v, cap * sizeof(*v));
        if (!v)
            return -1;
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n++] = (struct ext){ h->offset, fi->num_bytes, fi->disk_bytenr, fi->offset, fi->compression, fi->type };
    return 0;
}

static int extents_of(const char *path, struct exts *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fdatasync(fd) < 0) {
        fprintf(stderr, "forkd-shared-ranges: %s: %s\n", path, fd < 0 || S_ISREG(st.st_mode) ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    /* Tree 0: the subvolume the file is in; items come in key order, so by logical offset. */
    int r = btrfs_search_each(fd, 0, st.st_ino, BTRFS_EXTENT_DATA_KEY, 0, UINT64_MAX, add_item, e);
    if (r != 0)
        fprintf(stderr, "forkd-shared-ranges: %s: extent items: %s\n", path, r < 0 ? strerror(errno) : "out of memory");
    close(fd);
    return r == 0 ? 0 : -1;
}

static uint64_t end_of(const struct ext *x) { return x->logical + x->len; }

static void emit(uint64_t *open_start, uint64_t *open_end, uint64_t s, uint64_t e)
{
    if (*open_end == s && *open_end > *open_start) {
        *open_end = e;
        return;
    }
    if (*open_end > *open_start)
        printf("%" PRIu64 " %" PRIu64 "\n", *open_start, *open_end - *open_start);
    *open_start = s;
    *open_end = e;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        usage(stderr);
        return 2;
    }
    struct exts a = { 0 }, b = { 0 };
    if (extents_of(argv[1], &a) < 0 || extents_of(argv[2], &b) < 0)
        return 1;
    uint64_t os = 0, oe = 0;
    for (size_t i = 0, j = 0; i < a.n && j < b.n;) {
        const struct ext *x = &a.v[i], *y = &b.v[j];
        uint64_t s = x->logical > y->logical ? x->logical : y->logical;
        uint64_t e = end_of(x) < end_of(y) ? end_of(x) : end_of(y);
        /* The same extent, entered at the same point for the same logical byte: equal bytes. */
        if (s < e && x->disk_bytenr == y->disk_bytenr && x->compression == y->compression &&
            x->offset + (s - x->logical) == y->offset + (s - y->logical))
            emit(&os, &oe, s, e);
        if (end_of(x) <= end_of(y))
            i++;
        else
            j++;
    }
    emit(&os, &oe, UINT64_MAX, UINT64_MAX);
    free(a.v);
    free(b.v);
    return fflush(stdout) == 0 ? 0 : 1;
}
