/* forkd-dedupe: share identical ranges of a new snapshot's files with the
 * previous snapshot's files through FIDEDUPERANGE (see README.md). */
#ifndef FORKD_DEDUPE_H
#define FORKD_DEDUPE_H

#include <stdint.h>

#define DD_BLOCK      4096u              /* page / Btrfs sector size */
#define DD_CHUNK      (1u << 20)         /* read size for NEW files */
#define DD_MAX_RANGE  (16u << 20)        /* bytes per FIDEDUPERANGE call */

struct dd_opts {
    int moved;      /* also match pages that moved (hash table of PREV) */
    int repack;     /* move NEW's unshared ranges out of half-shared extents */
    int verbose;    /* per-file diagnostics on stderr */
};

struct dd_stats {
    uint64_t files;          /* files present in both directories */
    uint64_t bytes_compared; /* bytes of NEW files examined */
    uint64_t bytes_shared;   /* bytes the kernel reported as deduplicated */
    uint64_t bytes_moved;    /* part of bytes_shared at a different offset */
    uint64_t bytes_repacked; /* NEW bytes moved to fresh extents (repack) */
    uint64_t ranges;         /* FIDEDUPERANGE calls */
    uint64_t ranges_skipped; /* calls that shared nothing (data differed, error) */
};

/* Deduplicate NEW (new_dir/name, already open read-only as new_fd) against
 * PREV (prev_fd, open read-only). May replace *new_fd with a read-write
 * descriptor if the kernel insists on one. Returns 0, or -1 after printing
 * a message to stderr (I/O error, or the filesystem cannot deduplicate). */
int dd_file(int prev_fd, int *new_fd, int new_dir, const char *name,
            const struct dd_opts *o, struct dd_stats *st);

#endif
