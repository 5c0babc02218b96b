/* The per-file state forkd-dedupe's units share (dedupe.c: matching and
 * sharing; repack.c: moving what stayed unshared out of half-shared
 * extents). Internal to the tool. */
#ifndef FORKD_DEDUPE_CTX_H
#define FORKD_DEDUPE_CTX_H

#include <stdint.h>
#include <sys/types.h>

#include "dedupe.h"
#include "extents.h"

struct window {
    unsigned char *buf;     /* DD_CHUNK bytes */
    uint64_t start, len;    /* cached byte range of PREV; len == 0: empty */
};

struct ctx {
    int pfd;
    int *nfd;
    int ndir;
    const char *name;
    int reopened;           /* NEW was reopened O_RDWR */
    const struct dd_opts *o;
    struct dd_stats *st;

    uint64_t psize, nsize;
    uint64_t pblocks, nblocks;      /* whole blocks only */

    unsigned char *nbuf;            /* current NEW chunk */
    struct window win[2];           /* [0] same offset, [1] moved */

    /* hash of every whole PREV block -> first block index with that hash;
     * built on the first block that does not match in place */
    uint64_t *hkey, *hval, hmask;
    int hbuilt;

    int run;                        /* pending run of equal blocks */
    uint64_t rn, rp, rlen;          /* NEW block, PREV block, length (blocks) */
    int64_t last_delta;             /* PREV - NEW of the last run */

    /* for repack: NEW's extents before we touched it, and the NEW ranges
     * the kernel has since shared (in file order) */
    struct extent *ext;
    ssize_t next;                   /* < 0: unknown, no repack */
    struct ival { uint64_t off, len; } *sh;
    size_t nsh, capsh;
    int sh_lost;                    /* out of memory: list incomplete */
};

/* Reads exactly len bytes at off, or prints why not (which: "prev"/"new") and returns -1. */
int dd_read_full(struct ctx *c, int fd, void *buf, uint64_t len, uint64_t off, const char *which);

/* FIDEDUPERANGE of SRC[soff, soff+len) into NEW at doff; see dedupe.c. */
int64_t dd_share(struct ctx *c, int sfd, uint64_t soff, uint64_t doff, uint64_t len);

/* Hashes every whole PREV block (once, on the first block that does not match in place); 0 or -1. */
int dd_build_hash(struct ctx *c);

/* The PREV block whose hash equals block nb's, or UINT64_MAX: a candidate, the kernel checks the bytes. */
uint64_t dd_hash_lookup(const struct ctx *c, const unsigned char *nb);

/* Repacks NEW's unshared ranges of half-shared extents (opts.repack); 0 or -1. */
int dd_repack(struct ctx *c);

#endif
