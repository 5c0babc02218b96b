/* forkd-patch [--sums] LIMIT SRC BASE DST [SRC BASE DST ...]: make each DST,
 * a reflinked copy of BASE (an older CRIU pages image), equal to SRC by
 * rewriting only the 4 KiB pages that differ, so the rest stays shared with
 * BASE. With --sums, pages are compared by their sums (page-sums.h) when BASE
 * has valid ones, and DST gets its own. See README.md. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "page-sums.h"

#define PAGE 4096

static void usage(FILE *f)
{
    fprintf(f,
            "usage: forkd-patch [--sums] LIMIT SRC BASE DST [SRC BASE DST ...]\n"
            "  DST must have BASE's content (a reflink of it: what is not rewritten stays\n"
            "  shared). Compares SRC with BASE in 4 KiB pages, writes the runs that differ\n"
            "  into DST (pwrite), then truncates DST to SRC's size. BASE, not DST, is\n"
            "  read (where it has no valid sums, see --sums).\n"
            "  LIMIT (0..1): give up on a pair once more than this share of SRC differs\n"
            "  (its layout moved; the caller copies it whole instead). DST is then\n"
            "  partly patched and must be replaced.\n"
            "  --sums: where BASE has a valid sums file (.BASE.sums beside it, made by an\n"
            "  earlier --sums run for exactly that file), compare SRC's page sums with\n"
            "  it and never read BASE; write DST's sums (.DST.sums) after patching.\n"
            "  prints one line per pair: {\"bytes\": N, \"written\": N, \"moved\": true|false}\n"
            "  exit: 0 ok, 1 I/O error (message on stderr), 2 usage\n");
}

/* Both files are read a chunk at a time into buffers reused for the whole
 * file, small enough to stay in the CPU's cache and its TLB: on a host
 * whose TLB misses go through the hypervisor (shadow page tables), hashing
 * 100 MiB of tmpfs through a map of it took 80-90 ms, through these 20-27
 * (populated maps measured 40 ms against 60 through read buffers on a host
 * without that cost, before sums). A reflinked BASE is mostly not cached,
 * which is what its sums are for. */
#define CHUNK (256 * 1024)

/* pread(2) of exactly `len` bytes (EINTR retried): 0, or -1 with errno (EIO for a file shorter than its size). */
static int pread_all(int fd, unsigned char *buf, size_t len, off_t off)
{
    while (len) {
        ssize_t r = pread(fd, buf, len, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO;
            return -1;
        }
        buf += r;
        len -= (size_t)r;
        off += r;
    }
    return 0;
}

struct pair {
    const char *src, *base, *dst;
    int sfd, bfd, dfd;
    size_t sl, bl;
    struct page_sum *bsums;       /* NULL: BASE's bytes are compared */
    size_t bcount;
    struct page_sum *dsums;       /* NULL: no sums wanted */
    uint64_t give_up, written;
    int moved;
};

/* The pages of one chunk of SRC at `off` (`n` bytes, in `a`; BASE's bytes there in `b`): runs that differ written to DST. */
static int patch_chunk(struct pair *x, size_t off, const unsigned char *a, const unsigned char *b, size_t n)
{
    size_t run = SIZE_MAX;
    /* One pass past the end (p == n rounded up) flushes the last run. */
    for (size_t p = 0;; p += PAGE) {
        size_t end = p + PAGE < n ? p + PAGE : n;
        size_t page = (off + p) / PAGE;
        int differs = 0;
        if (p < n) {
            struct page_sum h = x->dsums ? page_sum(a + p, end - p) : (struct page_sum){ 0, 0 };
            if (x->dsums)
                x->dsums[page] = h;
            if (off + end > x->bl)
                differs = 1;
            else if (x->bsums)
                differs = page >= x->bcount || h.a != x->bsums[page].a || h.b != x->bsums[page].b;
            else
                differs = memcmp(a + p, b + p, end - p) != 0;
        }
        if (differs && run == SIZE_MAX)
            run = p;
        if (differs && x->written + (end - run) > x->give_up) {
            x->moved = 1;
            return 0;
        }
        if (!differs && run != SIZE_MAX) {
            size_t stop = p < n ? p : n;
            if (pwrite_all(x->dfd, a + run, stop - run, (off_t)(off + run)) < 0) {
                fprintf(stderr, "forkd-patch: write %s: %s\n", x->dst, strerror(errno));
                return -1;
            }
            x->written += stop - run;
            run = SIZE_MAX;
        }
        if (p >= n)
            return 0;
    }
}

/* SRC against BASE, chunk by chunk; DST truncated to SRC's size and given its sums. */
static int patch_all(struct pair *x, int have_bpath, const char *bpath)
{
    static unsigned char a[CHUNK], b[CHUNK];
    for (size_t off = 0; off < x->sl && !x->moved; off += CHUNK) {
        size_t n = x->sl - off < CHUNK ? x->sl - off : CHUNK;
        size_t bn = off >= x->bl ? 0 : x->bl - off < n ? x->bl - off : n;
        if (pread_all(x->sfd, a, n, (off_t)off) < 0 || (!x->bsums && bn && pread_all(x->bfd, b, bn, (off_t)off) < 0)) {
            fprintf(stderr, "forkd-patch: read %s: %s\n", errno == EIO ? "(a file shrank)" : x->src, strerror(errno));
            return -1;
        }
        if (patch_chunk(x, off, a, b, n) < 0)
            return -1;
    }
    if (x->moved)
        return 0;
    if (ftruncate(x->dfd, (off_t)x->sl) < 0) {
        fprintf(stderr, "forkd-patch: truncate %s: %s\n", x->dst, strerror(errno));
        return -1;
    }
    /* Only an optimisation: without them the next run compares bytes. */
    char path[4096];
    struct stat ds;
    if (x->dsums && (fstat(x->dfd, &ds) < 0 || sums_path(path, sizeof path, x->dst) < 0 || !have_bpath ||
                     sums_store(path, &ds, x->dsums, (x->sl + PAGE - 1) / PAGE, bpath, x->bsums, x->bcount) < 0))
        fprintf(stderr, "forkd-patch: sums of %s not written: %s\n", x->dst, strerror(errno));
    return 0;
}

static int patch_one(const char *src, const char *base, const char *dst, double limit, int with_sums, uint64_t *bytes, uint64_t *written, int *moved)
{
    int ret = -1;
    struct pair x = { .src = src, .base = base, .dst = dst };
    x.sfd = open(src, O_RDONLY | O_CLOEXEC);
    x.bfd = open(base, O_RDONLY | O_CLOEXEC);
    x.dfd = open(dst, O_WRONLY | O_CLOEXEC);
    struct stat ss, bs;
    char bpath[4096];

    *bytes = 0;
    *written = 0;
    *moved = 0;
    if (x.sfd < 0 || x.bfd < 0 || x.dfd < 0 || fstat(x.sfd, &ss) < 0 || fstat(x.bfd, &bs) < 0) {
        fprintf(stderr, "forkd-patch: %s: %s\n", x.sfd < 0 ? src : x.bfd < 0 ? base : dst, strerror(errno));
        goto out;
    }
    x.sl = (size_t)ss.st_size;
    x.bl = (size_t)bs.st_size;
    *bytes = x.sl;
    int have_bpath = with_sums && sums_path(bpath, sizeof bpath, base) == 0;
    /* With BASE's sums, BASE is never read. */
    if (have_bpath)
        x.bsums = sums_load(bpath, &bs, &x.bcount);
    if (with_sums && (x.dsums = malloc(((x.sl + PAGE - 1) / PAGE) * sizeof *x.dsums + 1)) == NULL) {
        fprintf(stderr, "forkd-patch: out of memory\n");
        goto out;
    }
    posix_fadvise(x.sfd, 0, 0, POSIX_FADV_SEQUENTIAL);
    if (!x.bsums)
        posix_fadvise(x.bfd, 0, 0, POSIX_FADV_SEQUENTIAL);
    x.give_up = (uint64_t)((double)x.sl * limit);
    ret = patch_all(&x, have_bpath, bpath);
    *written = x.written;
    *moved = x.moved;
out:
    free(x.bsums);
    free(x.dsums);
    if (x.sfd >= 0)
        close(x.sfd);
    if (x.bfd >= 0)
        close(x.bfd);
    if (x.dfd >= 0)
        close(x.dfd);
    return ret;
}

int main(int argc, char **argv)
{
    int with_sums = argc > 1 && strcmp(argv[1], "--sums") == 0;
    argv += with_sums;
    argc -= with_sums;
    if (argc < 5 || (argc - 2) % 3 != 0) {
        usage(stderr);
        return 2;
    }
    char *end;
    double limit = strtod(argv[1], &end);
    if (*end || limit < 0 || limit > 1) {
        usage(stderr);
        return 2;
    }
    int status = 0;
    for (int i = 2; i + 2 < argc; i += 3) {
        uint64_t bytes, written;
        int moved;
        if (patch_one(argv[i], argv[i + 1], argv[i + 2], limit, with_sums, &bytes, &written, &moved) < 0) {
            status = 1;
            continue;
        }
        printf("{\"bytes\": %" PRIu64 ", \"written\": %" PRIu64 ", \"moved\": %s}\n",
               bytes, written, moved ? "true" : "false");
    }
    return status;
}
