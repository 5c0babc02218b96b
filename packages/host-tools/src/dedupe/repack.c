#include "dedupe-ctx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- repack -------------------------------------------------------------
 *
 * Btrfs keeps a whole on-disk extent allocated while any part of it is still
 * referenced. NEW was written as large extents (up to 128 MiB); after dedupe
 * most of such an extent is no longer referenced by NEW, but the pages that
 * differ from PREV still point into it and pin all of it, so nothing is
 * freed. Fix: copy those unshared ranges into an anonymous O_TMPFILE in NEW's
 * directory (fresh, tightly sized extents) and FIDEDUPERANGE them back into
 * NEW. NEW itself is still only changed by FIDEDUPERANGE, which verifies the
 * bytes are equal; the old extent then has no references left and is freed.
 * Only extents that are partly shared are repacked, so the extra write is at
 * most the data that really differs. */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int add_range(struct ival **v, size_t *n, size_t *cap, uint64_t off, uint64_t len)
{
    if (*n && (*v)[*n - 1].off + (*v)[*n - 1].len == off) {
        (*v)[*n - 1].len += len;
        return 0;
    }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        struct ival *t = realloc(*v, nc * sizeof *t);
        if (!t)
            return -1;
        *v = t;
        *cap = nc;
    }
    (*v)[*n].off = off;
    (*v)[*n].len = len;
    (*n)++;
    return 0;
}

static int write_full(int fd, const unsigned char *p, uint64_t len, uint64_t off)
{
    while (len) {
        ssize_t n = pwrite(fd, p, len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        off += (uint64_t)n;
        len -= (uint64_t)n;
    }
    return 0;
}

int dd_repack(struct ctx *c)
{
    if (c->next <= 0 || c->nsh == 0 || c->sh_lost)
        return 0;
    size_t ne = (size_t)c->next;
    uint64_t end = c->nblocks * DD_BLOCK;        /* whole blocks only */

    /* 1. bytes of each extent item that are now shared */
    size_t k = 0;
    for (size_t i = 0; i < ne; i++) {
        struct extent *e = &c->ext[i];
        uint64_t lo = e->logical, hi = e->logical + e->len;
        while (k < c->nsh && c->sh[k].off + c->sh[k].len <= lo)
            k++;
        for (size_t j = k; j < c->nsh && c->sh[j].off < hi; j++) {
            uint64_t a = c->sh[j].off > lo ? c->sh[j].off : lo;
            uint64_t b = c->sh[j].off + c->sh[j].len < hi ? c->sh[j].off + c->sh[j].len : hi;
            e->shared += b - a;
        }
    }

    /* 2. on-disk extents that are partly shared */
    uint64_t *touched = malloc(ne * sizeof *touched);
    size_t nt = 0;
    struct ival *todo = NULL;
    size_t nd = 0, capd = 0;
    int tmp = -1, rc = -1;
    if (!touched)
        goto oom;
    for (size_t i = 0; i < ne; i++)
        if (c->ext[i].shared)
            touched[nt++] = c->ext[i].disk;
    qsort(touched, nt, sizeof *touched, cmp_u64);

    /* 3. their ranges that are still unshared */
    k = 0;
    for (size_t i = 0; i < ne; i++) {
        struct extent *e = &c->ext[i];
        uint64_t lo = e->logical, hi = e->logical + e->len;
        if (hi > end)
            hi = end;
        while (k < c->nsh && c->sh[k].off + c->sh[k].len <= lo)
            k++;
        if (lo >= hi || !bsearch(&e->disk, touched, nt, sizeof *touched, cmp_u64))
            continue;
        uint64_t at = lo;
        for (size_t j = k; j < c->nsh && c->sh[j].off < hi && at < hi; j++) {
            if (c->sh[j].off > at && add_range(&todo, &nd, &capd, at, c->sh[j].off - at) < 0)
                goto oom;
            if (c->sh[j].off + c->sh[j].len > at)
                at = c->sh[j].off + c->sh[j].len;
        }
        if (at < hi && add_range(&todo, &nd, &capd, at, hi - at) < 0)
            goto oom;
    }
    if (nd == 0) {
        rc = 0;
        goto out;
    }

    /* 4. copy them into a fresh anonymous file, then share them back */
    tmp = openat(c->ndir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (tmp < 0) {
        fprintf(stderr, "forkd-dedupe: %s: repack skipped: O_TMPFILE: %s\n", c->name,
                strerror(errno));
        rc = 0;
        goto out;
    }
    uint64_t toff = 0;
    for (size_t i = 0; i < nd; i++) {
        for (uint64_t done = 0; done < todo[i].len; done += DD_CHUNK) {
            uint64_t n = todo[i].len - done < DD_CHUNK ? todo[i].len - done : DD_CHUNK;
            if (dd_read_full(c, *c->nfd, c->nbuf, n, todo[i].off + done, "new") < 0)
                goto out;
            if (write_full(tmp, c->nbuf, n, toff + done) < 0) {
                fprintf(stderr, "forkd-dedupe: %s: repack skipped: write: %s\n", c->name,
                        strerror(errno));
                rc = 0;
                goto out;
            }
        }
        toff += todo[i].len;
    }
    if (fdatasync(tmp) < 0) {
        fprintf(stderr, "forkd-dedupe: %s: repack skipped: fdatasync: %s\n", c->name,
                strerror(errno));
        rc = 0;
        goto out;
    }
    toff = 0;
    for (size_t i = 0; i < nd; i++) {
        int64_t s = dd_share(c, tmp, toff, todo[i].off, todo[i].len);
        if (s < 0)
            goto out;
        c->st->bytes_repacked += (uint64_t)s;
        toff += todo[i].len;
    }
    rc = 0;
    goto out;

oom:
    fprintf(stderr, "forkd-dedupe: %s: repack skipped: out of memory\n", c->name);
    rc = 0;
out:
    if (tmp >= 0)
        close(tmp);
    free(touched);
    free(todo);
    return rc;
}
