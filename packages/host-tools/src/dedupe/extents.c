/* List a file's Btrfs data extents straight from its subvolume tree, so we
 * know which file ranges point into the same on-disk extent (FIEMAP merges
 * physically adjacent extents and cannot tell). Read-only. */
#include "extents.h"

#include <endian.h>
#include <errno.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

/* FIEMAP_FLAG_SYNC: write back delalloc and wait for ordered extents, so the
 * file extent items exist before we search for them. */
static int flush(int fd)
{
    struct fiemap fm;
    memset(&fm, 0, sizeof fm);
    fm.fm_length = FIEMAP_MAX_OFFSET;
    fm.fm_flags = FIEMAP_FLAG_SYNC;
    fm.fm_extent_count = 0;
    return ioctl(fd, FS_IOC_FIEMAP, &fm);
}

ssize_t btrfs_file_extents(int fd, struct extent **out)
{
    struct btrfs_ioctl_search_args a;
    struct stat st;
    struct extent *v = NULL;
    size_t n = 0, cap = 0;

    if (fstat(fd, &st) < 0 || flush(fd) < 0)
        return -1;

    memset(&a, 0, sizeof a);
    a.key.tree_id = 0;                     /* the subvolume of fd */
    a.key.min_objectid = a.key.max_objectid = (uint64_t)st.st_ino;
    a.key.min_type = a.key.max_type = BTRFS_EXTENT_DATA_KEY;
    a.key.min_offset = 0;
    a.key.max_offset = UINT64_MAX;
    a.key.min_transid = 0;
    a.key.max_transid = UINT64_MAX;

    for (;;) {
        a.key.nr_items = 4096;
        if (ioctl(fd, BTRFS_IOC_TREE_SEARCH, &a) < 0)
            goto fail;
        if (a.key.nr_items == 0)
            break;

        uint64_t last = 0;
        size_t pos = 0;
        for (uint32_t i = 0; i < a.key.nr_items; i++) {
            struct btrfs_ioctl_search_header sh;
            if (pos + sizeof sh > sizeof a.buf)
                break;
            memcpy(&sh, a.buf + pos, sizeof sh);
            pos += sizeof sh;
            const char *item = a.buf + pos;
            pos += sh.len;
            last = sh.offset;
            if (sh.objectid != (uint64_t)st.st_ino || sh.type != BTRFS_EXTENT_DATA_KEY ||
                sh.len < sizeof(struct btrfs_file_extent_item) || pos > sizeof a.buf)
                continue;

            struct btrfs_file_extent_item fi;
            memcpy(&fi, item, sizeof fi);
            if (fi.type != BTRFS_FILE_EXTENT_REG && fi.type != BTRFS_FILE_EXTENT_PREALLOC)
                continue;
            uint64_t disk = le64toh(fi.disk_bytenr);
            if (disk == 0)
                continue;                  /* hole */
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                struct extent *t = realloc(v, cap * sizeof *v);
                if (!t) {
                    errno = ENOMEM;
                    goto fail;
                }
                v = t;
            }
            v[n].logical = sh.offset;
            v[n].len = le64toh(fi.num_bytes);
            v[n].disk = disk;
            v[n].shared = 0;
            n++;
        }
        if (last == UINT64_MAX)
            break;
        a.key.min_offset = last + 1;
    }
    *out = v;
    return (ssize_t)n;

fail:
    free(v);
    return -1;
}
