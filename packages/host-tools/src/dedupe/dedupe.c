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
#include "dedupe-ctx.h"
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


/* ---- reading ------------------------------------------------------------ */

int dd_read_full(struct ctx *c, int fd, void *buf, uint64_t len, uint64_t off,
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
    if (dd_read_full(c, c->pfd, win->buf, want, off, "prev") < 0)
        return NULL;
    win->start = off;
    win->len = want;
    return win->buf;
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
int64_t dd_share(struct ctx *c, int sfd, uint64_t soff, uint64_t doff, uint64_t len)
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
    int64_t s = dd_share(c, c->pfd, c->rp * DD_BLOCK, c->rn * DD_BLOCK, c->rlen * DD_BLOCK);
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

    if (!c->hbuilt && dd_build_hash(c) < 0)
        return -1;
    uint64_t p = dd_hash_lookup(c, nb);
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
    if (dd_read_full(c, *c->nfd, a, len, off, "new") < 0 ||
        dd_read_full(c, c->pfd, b, len, off, "prev") < 0)
        return -1;
    c->st->bytes_compared += len;
    if (memcmp(a, b, len) != 0)
        return 0;
    int64_t s = dd_share(c, c->pfd, off, off, len);
    if (s < 0)
        return -1;
    c->st->bytes_shared += (uint64_t)s;
    return 0;
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
        if (dd_read_full(&c, *new_fd, c.nbuf, len, off, "new") < 0)
            goto out;
        for (uint64_t j = 0; j < len / DD_BLOCK; j++) {
            if (step(&c, off / DD_BLOCK + j, c.nbuf + j * DD_BLOCK) < 0)
                goto out;
        }
        st->bytes_compared += len;
    }
    if (flush(&c, 0) < 0 || tail(&c) < 0 || dd_repack(&c) < 0)
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
