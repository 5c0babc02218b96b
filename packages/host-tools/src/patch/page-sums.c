#include "page-sums.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/fs.h>

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static const char MAGIC[8] = { 'F', 'K', 'S', 'U', 'M', 'S', '0', '1' };

struct header {
    char magic[8];
    uint64_t ino, size, mtime_ns, count;
};

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t round64(uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; }
static inline uint64_t merge(uint64_t h, uint64_t v) { return (h ^ round64(0, v)) * P1 + P4; }

static inline uint64_t avalanche(uint64_t h)
{
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    return h ^ (h >> 32);
}

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Both hashes in one pass over the bytes: eight accumulators, shared loads. */
struct page_sum page_sum(const unsigned char *p, size_t len)
{
    const uint64_t s1 = 0, s2 = P5;
    uint64_t a[4] = { s1 + P1 + P2, s1 + P2, s1, s1 - P1 };
    uint64_t b[4] = { s2 + P1 + P2, s2 + P2, s2, s2 - P1 };
    size_t i = 0;
    for (; i + 32 <= len; i += 32) {
        for (int k = 0; k < 4; k++) {
            uint64_t v = load64(p + i + 8 * k);
            a[k] = round64(a[k], v);
            b[k] = round64(b[k], v ^ P3);
        }
    }
    uint64_t ha = rotl(a[0], 1) + rotl(a[1], 7) + rotl(a[2], 12) + rotl(a[3], 18);
    uint64_t hb = rotl(b[0], 1) + rotl(b[1], 7) + rotl(b[2], 12) + rotl(b[3], 18);
    for (int k = 0; k < 4; k++) {
        ha = merge(ha, a[k]);
        hb = merge(hb, b[k]);
    }
    ha += len;
    hb += len;
    for (; i + 8 <= len; i += 8) {
        uint64_t v = load64(p + i);
        ha = rotl(ha ^ round64(0, v), 27) * P1 + P4;
        hb = rotl(hb ^ round64(0, v ^ P3), 27) * P1 + P4;
    }
    for (; i < len; i++) {
        ha = rotl(ha ^ (p[i] * P5), 11) * P1;
        hb = rotl(hb ^ ((p[i] ^ 0x5a) * P5), 11) * P1;
    }
    return (struct page_sum){ avalanche(ha), avalanche(hb) };
}

static uint64_t mtime_ns(const struct stat *st)
{
    return (uint64_t)st->st_mtim.tv_sec * 1000000000ULL + (uint64_t)st->st_mtim.tv_nsec;
}

static int read_all(int fd, void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

struct page_sum *sums_load(const char *path, const struct stat *st, size_t *count)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return NULL;
    struct header h;
    struct stat fs;
    struct page_sum *sums = NULL;
    uint64_t want = ((uint64_t)st->st_size + 4095) / 4096;
    if (fstat(fd, &fs) < 0 || !S_ISREG(fs.st_mode) || read_all(fd, &h, sizeof h) < 0 || memcmp(h.magic, MAGIC, sizeof MAGIC) != 0 ||
        h.ino != (uint64_t)st->st_ino || h.size != (uint64_t)st->st_size || h.mtime_ns != mtime_ns(st) || h.count != want ||
        (uint64_t)fs.st_size != sizeof h + want * sizeof(struct page_sum))
        goto out;
    sums = malloc(want ? want * sizeof *sums : 1);
    if (sums && want && read_all(fd, sums, want * sizeof *sums) < 0) {
        free(sums);
        sums = NULL;
    }
    if (sums)
        *count = want;
out:
    close(fd);
    return sums;
}

int pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

static int same(const struct page_sum *x, const struct page_sum *y)
{
    return x->a == y->a && x->b == y->b;
}

/* The sums into fd: after a reflink of the base's, only the runs that differ (and any past its end). */
static int write_sums(int fd, const struct page_sum *sums, size_t count, const struct page_sum *base, size_t base_count)
{
    for (size_t i = 0; i < count;) {
        if (base && i < base_count && same(&sums[i], &base[i])) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < count && !(base && j < base_count && same(&sums[j], &base[j])))
            j++;
        if (pwrite_all(fd, sums + i, (j - i) * sizeof *sums, (off_t)(sizeof(struct header) + i * sizeof *sums)) < 0)
            return -1;
        i = j;
    }
    return ftruncate(fd, (off_t)(sizeof(struct header) + count * sizeof *sums));
}

int sums_store(const char *path, const struct stat *st, const struct page_sum *sums, size_t count, const char *base_path, const struct page_sum *base, size_t base_count)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    if (base) {
        int bfd = open(base_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (bfd < 0 || ioctl(fd, FICLONE, bfd) < 0)
            base = NULL; /* every sum written */
        if (bfd >= 0)
            close(bfd);
    }
    struct header h;
    memcpy(h.magic, MAGIC, sizeof MAGIC);
    h.ino = (uint64_t)st->st_ino;
    h.size = (uint64_t)st->st_size;
    h.mtime_ns = mtime_ns(st);
    h.count = count;
    int rc = pwrite_all(fd, &h, sizeof h, 0) < 0 || write_sums(fd, sums, count, base, base_count) < 0 ? -1 : 0;
    int e = errno;
    if (close(fd) < 0 && rc == 0)
        rc = -1, e = errno;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -1, e = errno;
    if (rc < 0)
        unlink(tmp);
    errno = e;
    return rc;
}

int sums_path(char *out, size_t n, const char *image)
{
    const char *slash = strrchr(image, '/');
    int dir = slash ? (int)(slash - image + 1) : 0;
    return snprintf(out, n, "%.*s.%s.sums", dir, image, image + dir) < (int)n ? 0 : -1;
}
