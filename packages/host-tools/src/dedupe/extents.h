/* Btrfs file extent items of one file (BTRFS_IOC_TREE_SEARCH). */
#ifndef FORKD_EXTENTS_H
#define FORKD_EXTENTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct extent {
    uint64_t logical;       /* file offset */
    uint64_t len;           /* bytes of the file it covers */
    uint64_t disk;          /* disk_bytenr of the whole on-disk extent */
    uint64_t shared;        /* scratch for the caller */
};

/* Flushes fd's dirty data, then lists its data extents (holes and inline
 * extents left out) in file order. Returns the count and sets *out (free()
 * it), or -1 with errno set: ENOTTY / EOPNOTSUPP (not Btrfs), EPERM (needs
 * CAP_SYS_ADMIN), ENOMEM, ... */
ssize_t btrfs_file_extents(int fd, struct extent **out);

#endif
