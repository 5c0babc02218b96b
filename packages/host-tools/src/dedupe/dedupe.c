/* Per-file work of forkd-dedupe: find runs of equal 4 KiB blocks between a
 * PREV and a NEW file and hand them to the kernel with FIDEDUPERANGE, which
 * re-checks the bytes itself and only shares ranges that are really equal.
 * Nothing here writes file data.
 *
 * NEW is read sequentially in 1 MiB chunks. PREV is read through two small
 * caches ("windows"): one for same-offset lookups, one for moved pages, so
 * the common case (idle process, same layout) stays a pair of sequential
 * 1 MiB reads. A window that is read sequentially doubles its read size from
 * 4 KiB up to 1 MiB; a jump starts it again at 4 KiB. */
#include "dedupe.h"
#include "extents.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define WIN_MIN DD_BLOCK

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

/* ---- reading ------------------------------------------------------------ */

static int read_full(struct ctx *c, int fd, void *buf, uint64_t len, uint64_t off,
                     const char *which)
{
    unsigned char *p = buf;
    while (len) {
        ssize_t n = pread(fd, p, len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "forkd-dedupe: %s (%s): read at %llu: %s\n", c->name,
                    which, (unsigned long long)off, strerror(errno));
            return -1;
        }
        if (n == 0) {
            fprintf(stderr, "forkd-dedupe: %s (%s): file shrank while reading\n",
                    c->name, which);
            return -1;
        }
        p += n;
        off += (uint64_t)n;
        len -= (uint64_t)n;
    }
    return 0;
}

/* Pointer to PREV block b (b < pblocks) through window w, or NULL on error. */
static const unsigned char *prev_block(struct ctx *c, int w, uint64_t b)
{
    struct window *win = &c->win[w];
    uint64_t off = b * DD_BLOCK;
    if (win->len && off >= win->start && off - win->start < win->len)
        return win->buf + (off - win->start);

    uint64_t want = WIN_MIN;
    if (win->len && off == win->start + win->len)
        want = win->len * 2;                 /* sequential: grow */
    if (want > DD_CHUNK)
        want = DD_CHUNK;
    uint64_t avail = c->pblocks * DD_BLOCK - off;
    if (want > avail)
        want = avail;
    win->len = 0;
    if (read_full(c, c->pfd, win->buf, want, off, "prev") < 0)
        return NULL;
    win->start = off;
    win->len = want;
    return win->buf;
}

/* ---- hash table of PREV blocks ---------------------------------------- */

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* 64-bit hash of one block (xxh64-style rounds; collisions only cost a memcmp) */
static uint64_t block_hash(const unsigned char *p)
{
    uint64_t a = P1 + P2, b = P2, d = 0, e = -P1;
    for (unsigned i = 0; i < DD_BLOCK; i += 32) {
        a = rotl64(a + rd64(p + i) * P2, 31) * P1;
        b = rotl64(b + rd64(p + i + 8) * P2, 31) * P1;
        d = rotl64(d + rd64(p + i + 16) * P2, 31) * P1;
        e = rotl64(e + rd64(p + i + 24) * P2, 31) * P1;
    }
    uint64_t h = rotl64(a, 1) + rotl64(b, 7) + rotl64(d, 12) + rotl64(e, 18);
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h ? h : 1;   /* 0 marks an empty slot */
}

static int build_hash(struct ctx *c)
{
    c->hbuilt = 1;
    uint64_t slots = 16;
    while (slots < c->pblocks * 2)
        slots <<= 1;
    c->hkey = calloc(slots, sizeof *c->hkey);
    c->hval = malloc(slots * sizeof *c->hval);
    if (!c->hkey || !c->hval) {
        fprintf(stderr, "forkd-dedupe: %s: out of memory for hash table\n", c->name);
        return -1;
    }
    c->hmask = slots - 1;

    /* reuse the moved-page window's buffer, then invalidate it */
    struct window *win = &c->win[1];
    win->len = 0;
    for (uint64_t off = 0; off < c->pblocks * DD_BLOCK; off += DD_CHUNK) {
        uint64_t len = c->pblocks * DD_BLOCK - off;
        if (len > DD_CHUNK)
            len = DD_CHUNK;
        if (read_full(c, c->pfd, win->buf, len, off, "prev") < 0)
            return -1;
        for (uint64_t j = 0; j < len / DD_BLOCK; j++) {
            uint64_t h = block_hash(win->buf + j * DD_BLOCK);
            uint64_t s = h & c->hmask;
            while (c->hkey[s] && c->hkey[s] != h)
                s = (s + 1) & c->hmask;
            if (!c->hkey[s]) {          /* keep the first block with this hash */
                c->hkey[s] = h;
                c->hval[s] = off / DD_BLOCK + j;
            }
        }
    }
    return 0;
}

/* PREV block whose hash equals that of nb, or UINT64_MAX. */
static uint64_t hash_lookup(const struct ctx *c, const unsigned char *nb)
{
    uint64_t h = block_hash(nb);
    uint64_t s = h & c->hmask;
    while (c->hkey[s]) {
        if (c->hkey[s] == h)
            return c->hval[s];
        s = (s + 1) & c->hmask;
    }
    return UINT64_MAX;
}

/* ---- FIDEDUPERANGE ----------------------------------------------------- */

/* Errors that will not go away for the next range: give up on the file. */
static int fatal_errno(int e)
{
    return e == EXDEV || e == EOPNOTSUPP || e == EROFS || e == EPERM ||
           e == EACCES || e == EBADF || e == EISDIR || e == ENOSYS || e == ENOTTY;
}

static int reopen_rw(struct ctx *c)
{
    struct stat a, b;
    int fd = openat(c->ndir, c->name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &a) < 0 || fstat(*c->nfd, &b) < 0 || a.st_ino != b.st_ino ||
        a.st_dev != b.st_dev) {
        close(fd);
        return -1;
    }
    close(*c->nfd);
    *c->nfd = fd;
    return 0;
}

static void record(struct ctx *c, uint64_t off, uint64_t len)
{
    if (c->nsh && c->sh[c->nsh - 1].off + c->sh[c->nsh - 1].len == off) {
        c->sh[c->nsh - 1].len += len;
        return;
    }
    if (c->nsh == c->capsh) {
        size_t cap = c->capsh ? c->capsh * 2 : 64;
        struct ival *t = realloc(c->sh, cap * sizeof *t);
        if (!t) {
            c->sh_lost = 1;
            return;
        }
        c->sh = t;
        c->capsh = cap;
    }
    c->sh[c->nsh].off = off;
    c->sh[c->nsh].len = len;
    c->nsh++;
}

/* Ask the kernel to share SRC[soff, soff+len) into NEW[doff, ...), SRC being
 * PREV (sfd == c->pfd, shared ranges are recorded) or the repack file.
 * Ranges the kernel refuses (data differs, transient errors) are skipped.
 * Returns the bytes shared, or -1 for an error that makes the whole file
 * hopeless. */
static int64_t share(struct ctx *c, int sfd, uint64_t soff, uint64_t doff, uint64_t len)
{
    uint64_t buf[(sizeof(struct file_dedupe_range) +
                  sizeof(struct file_dedupe_range_info) + 7) / 8];
    struct file_dedupe_range *r = (struct file_dedupe_range *)buf;
    int64_t shared = 0;

    while (len) {
        uint64_t n = len < DD_MAX_RANGE ? len : DD_MAX_RANGE;
        memset(buf, 0, sizeof buf);
        r->src_offset = soff;
        r->src_length = n;
        r->dest_count = 1;
        r->info[0].dest_fd = *c->nfd;
        r->info[0].dest_offset = doff;
        c->st->ranges++;

        int err = 0;
        if (ioctl(sfd, FIDEDUPERANGE, r) < 0)
            err = errno;
        else if (r->info[0].status < 0)
            err = -r->info[0].status;

        if (err) {
            if ((err == EPERM || err == EACCES || err == EBADF) && !c->reopened) {
                /* dest not writable for us: retry once with an O_RDWR fd */
                c->reopened = 1;
                c->st->ranges--;
                if (reopen_rw(c) == 0) {
                    if (c->o->verbose)
                        fprintf(stderr, "forkd-dedupe: %s: %s, retrying with O_RDWR\n",
                                c->name, strerror(err));
                    continue;
                }
            }
            if (fatal_errno(err)) {
                fprintf(stderr, "forkd-dedupe: %s: FIDEDUPERANGE: %s\n", c->name,
                        strerror(err));
                return -1;
            }
            if (c->o->verbose)
                fprintf(stderr, "forkd-dedupe: %s: range %llu+%llu skipped: %s\n",
                        c->name, (unsigned long long)doff, (unsigned long long)n,
                        strerror(err));
            c->st->ranges_skipped++;
        } else if (r->info[0].status == FILE_DEDUPE_RANGE_DIFFERS ||
                   r->info[0].bytes_deduped == 0) {
            if (c->o->verbose)
                fprintf(stderr, "forkd-dedupe: %s: range %llu+%llu: data differs\n",
                        c->name, (unsigned long long)doff, (unsigned long long)n);
            c->st->ranges_skipped++;
        } else {
            uint64_t d = r->info[0].bytes_deduped;
            if (d > n)
                d = n;
            shared += (int64_t)d;
            if (sfd == c->pfd)
                record(c, doff, d);
        }
        soff += n;
        doff += n;
        len -= n;
    }
    return shared;
}

/* ---- runs -------------------------------------------------------------- */

/* Issue the pending run. keep: the run goes on after this piece (it reached
 * DD_MAX_RANGE), so continue it at the next block. */
static int flush(struct ctx *c, int keep)
{
    if (!c->run)
        return 0;
    if (!c->rlen) {             /* nothing since the last piece */
        c->run = keep;
        return 0;
    }
    int64_t s = share(c, c->pfd, c->rp * DD_BLOCK, c->rn * DD_BLOCK, c->rlen * DD_BLOCK);
    if (s < 0)
        return -1;
    c->st->bytes_shared += (uint64_t)s;
    if (c->rp != c->rn)
        c->st->bytes_moved += (uint64_t)s;
    c->last_delta = (int64_t)(c->rp - c->rn);
    if (keep) {
        c->rn += c->rlen;
        c->rp += c->rlen;
        c->rlen = 0;
    } else {
        c->run = 0;
    }
    return 0;
}

/* Does NEW block i (contents nb) equal PREV block i+delta? If so start a run.
 * Returns 1 (run started), 0 (no), -1 (read error). */
static int try_delta(struct ctx *c, uint64_t i, const unsigned char *nb, int64_t delta)
{
    int64_t p = (int64_t)i + delta;
    if (p < 0 || (uint64_t)p >= c->pblocks)
        return 0;
    const unsigned char *pb = prev_block(c, delta != 0, (uint64_t)p);
    if (!pb)
        return -1;
    if (memcmp(pb, nb, DD_BLOCK) != 0)
        return 0;
    c->run = 1;
    c->rn = i;
    c->rp = (uint64_t)p;
    c->rlen = 1;
    return 1;
}

#define NO_DELTA INT64_MIN

/* One whole NEW block. Returns 0 or -1. */
static int step(struct ctx *c, uint64_t i, const unsigned char *nb)
{
    int64_t tried = NO_DELTA;
    int r;

    if (c->run) {
        uint64_t p = c->rp + c->rlen;
        int64_t delta = (int64_t)(c->rp - c->rn);
        if (p < c->pblocks) {
            const unsigned char *pb = prev_block(c, delta != 0, p);
            if (!pb)
                return -1;
            if (memcmp(pb, nb, DD_BLOCK) == 0) {
                c->rlen++;
                if (c->rlen * DD_BLOCK >= DD_MAX_RANGE)
                    return flush(c, 1);
                return 0;
            }
        }
        tried = delta;
        if (flush(c, 0) < 0)
            return -1;
    }

    if (tried != 0 && (r = try_delta(c, i, nb, 0)) != 0)
        return r < 0 ? -1 : 0;
    if (!c->o->moved)
        return 0;

    int64_t ld = c->last_delta;
    if (ld != 0 && ld != tried && (r = try_delta(c, i, nb, ld)) != 0)
        return r < 0 ? -1 : 0;

    if (!c->hbuilt && build_hash(c) < 0)
        return -1;
    uint64_t p = hash_lookup(c, nb);
    if (p == UINT64_MAX)
        return 0;
    int64_t delta = (int64_t)p - (int64_t)i;
    if (delta == 0 || delta == tried || delta == ld)
        return 0;
    r = try_delta(c, i, nb, delta);
    return r < 0 ? -1 : 0;
}

/* Both files have the same size that is not a whole number of blocks: the
 * partial last block can only be shared in place. */
static int tail(struct ctx *c)
{
    uint64_t off = c->nblocks * DD_BLOCK, len = c->nsize - off;
    if (c->psize != c->nsize || len == 0)
        return 0;
    unsigned char *a = c->nbuf, *b = c->win[0].buf;
    c->win[0].len = 0;
    if (read_full(c, *c->nfd, a, len, off, "new") < 0 ||
        read_full(c, c->pfd, b, len, off, "prev") < 0)
        return -1;
    c->st->bytes_compared += len;
    if (memcmp(a, b, len) != 0)
        return 0;
    int64_t s = share(c, c->pfd, off, off, len);
    if (s < 0)
        return -1;
    c->st->bytes_shared += (uint64_t)s;
    return 0;
}

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

static int repack(struct ctx *c)
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
            if (read_full(c, *c->nfd, c->nbuf, n, todo[i].off + done, "new") < 0)
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
        int64_t s = share(c, tmp, toff, todo[i].off, todo[i].len);
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

int dd_file(int prev_fd, int *new_fd, int new_dir, const char *name,
            const struct dd_opts *o, struct dd_stats *st)
{
    struct ctx c;
    struct stat ps, ns;
    int rc = -1;

    memset(&c, 0, sizeof c);
    c.pfd = prev_fd;
    c.nfd = new_fd;
    c.ndir = new_dir;
    c.name = name;
    c.o = o;
    c.st = st;

    if (fstat(prev_fd, &ps) < 0 || fstat(*new_fd, &ns) < 0) {
        fprintf(stderr, "forkd-dedupe: %s: stat: %s\n", name, strerror(errno));
        return -1;
    }
    c.psize = (uint64_t)ps.st_size;
    c.nsize = (uint64_t)ns.st_size;
    c.pblocks = c.psize / DD_BLOCK;
    c.nblocks = c.nsize / DD_BLOCK;

    c.next = -1;
    if (o->repack && c.nblocks) {
        c.next = btrfs_file_extents(*new_fd, &c.ext);
        if (c.next < 0 && o->verbose)
            fprintf(stderr, "forkd-dedupe: %s: no extent list, repack off: %s\n", name,
                    strerror(errno));
    }

    c.nbuf = malloc(DD_CHUNK);
    c.win[0].buf = malloc(DD_CHUNK);
    c.win[1].buf = malloc(DD_CHUNK);
    if (!c.nbuf || !c.win[0].buf || !c.win[1].buf) {
        fprintf(stderr, "forkd-dedupe: out of memory\n");
        goto out;
    }

    /* without moved-page matching, NEW blocks past PREV's end cannot match */
    uint64_t limit = c.nblocks;
    if (!o->moved && c.pblocks < limit)
        limit = c.pblocks;

    for (uint64_t off = 0; off < limit * DD_BLOCK; off += DD_CHUNK) {
        uint64_t len = limit * DD_BLOCK - off;
        if (len > DD_CHUNK)
            len = DD_CHUNK;
        if (read_full(&c, *new_fd, c.nbuf, len, off, "new") < 0)
            goto out;
        for (uint64_t j = 0; j < len / DD_BLOCK; j++) {
            if (step(&c, off / DD_BLOCK + j, c.nbuf + j * DD_BLOCK) < 0)
                goto out;
        }
        st->bytes_compared += len;
    }
    if (flush(&c, 0) < 0 || tail(&c) < 0 || repack(&c) < 0)
        goto out;
    rc = 0;

out:
    free(c.nbuf);
    free(c.win[0].buf);
    free(c.win[1].buf);
    free(c.hkey);
    free(c.hval);
    free(c.ext);
    free(c.sh);
    return rc;
}
