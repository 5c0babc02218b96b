/* forkd-dedupe PREV_DIR NEW_DIR: make a new CRIU snapshot share storage with
 * the previous one. See README.md. */
#include "dedupe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: forkd-dedupe [--all] [--moved|--no-moved] [--no-repack] [-v] PREV_DIR NEW_DIR\n"
            "  Shares identical 4 KiB blocks of NEW_DIR/pages-*.img with the file of\n"
            "  the same name in PREV_DIR (FIDEDUPERANGE; file data is never written).\n"
            "  --all       every regular file, not only pages-*.img\n"
            "  --moved     also match blocks that moved (default)\n"
            "  --no-moved  same-offset matching only\n"
            "  --no-repack leave NEW's unshared ranges in their original extents (which\n"
            "              then stay allocated in full; see README)\n"
            "  -v          per-file details on stderr\n"
            "  prints {\"files\": N, \"bytesCompared\": N, \"bytesShared\": N, \"ms\": N}\n"
            "  exit: 0 ok (even if nothing was shared), 1 I/O error, 2 usage\n");
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Sorted names of NEW_DIR's entries (caller frees), or NULL on error. */
static char **list_dir(int dirfd, const char *path, size_t *count)
{
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    char **names = NULL;
    size_t n = 0, cap = 0;

    if (!d) {
        fprintf(stderr, "forkd-dedupe: %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno) {
                fprintf(stderr, "forkd-dedupe: %s: readdir: %s\n", path, strerror(errno));
                goto fail;
            }
            break;
        }
        /* Dot files are forkd's own beside the images (forkd-patch's page sums), never pages. */
        if ((e->d_type != DT_REG && e->d_type != DT_UNKNOWN) || e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            char **t = realloc(names, cap * sizeof *names);
            if (!t)
                goto oom;
            names = t;
        }
        if (!(names[n] = strdup(e->d_name)))
            goto oom;
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    *count = n;
    return names ? names : calloc(1, sizeof *names);

oom:
    fprintf(stderr, "forkd-dedupe: out of memory\n");
fail:
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return NULL;
}

int main(int argc, char **argv)
{
    struct dd_opts o = { .moved = 1, .repack = 1, .verbose = 0 };
    struct dd_stats st;
    const char *pos[2];
    int npos = 0, all = 0, rc = 0;

    memset(&st, 0, sizeof st);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--all"))
            all = 1;
        else if (!strcmp(a, "--moved"))
            o.moved = 1;
        else if (!strcmp(a, "--no-moved"))
            o.moved = 0;
        else if (!strcmp(a, "--no-repack"))
            o.repack = 0;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose"))
            o.verbose = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--")) {
            for (i++; i < argc; i++) {
                if (npos == 2) {
                    usage(stderr);
                    return 2;
                }
                pos[npos++] = argv[i];
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "forkd-dedupe: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else {
            if (npos == 2) {
                usage(stderr);
                return 2;
            }
            pos[npos++] = a;
        }
    }
    if (npos != 2) {
        usage(stderr);
        return 2;
    }

    uint64_t t0 = now_ms();
    int pdir = open(pos[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pdir < 0) {
        fprintf(stderr, "forkd-dedupe: %s: %s\n", pos[0], strerror(errno));
        return 1;
    }
    int ndir = open(pos[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ndir < 0) {
        fprintf(stderr, "forkd-dedupe: %s: %s\n", pos[1], strerror(errno));
        return 1;
    }
    size_t count = 0;
    char **names = list_dir(ndir, pos[1], &count);
    if (!names)
        return 1;

    for (size_t i = 0; i < count; i++) {
        const char *name = names[i];
        struct stat ns, ps;
        int pfd = -1, nfd = -1;

        if (!all && fnmatch("pages-*.img", name, 0) != 0)
            goto next;
        if (fstatat(ndir, name, &ns, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno != ENOENT) {
                fprintf(stderr, "forkd-dedupe: %s/%s: %s\n", pos[1], name, strerror(errno));
                rc = 1;
            }
            goto next;
        }
        if (!S_ISREG(ns.st_mode))
            goto next;
        pfd = openat(pdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (pfd < 0) {
            if (errno != ENOENT && errno != ELOOP) {
                fprintf(stderr, "forkd-dedupe: %s/%s: %s\n", pos[0], name, strerror(errno));
                rc = 1;
            }
            goto next;
        }
        if (fstat(pfd, &ps) < 0 || !S_ISREG(ps.st_mode))
            goto next;
        if (ps.st_dev == ns.st_dev && ps.st_ino == ns.st_ino)
            goto next;      /* same file */
        nfd = openat(ndir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0) {
            fprintf(stderr, "forkd-dedupe: %s/%s: %s\n", pos[1], name, strerror(errno));
            rc = 1;
            goto next;
        }

        st.files++;
        uint64_t sh = st.bytes_shared, cmp = st.bytes_compared, mv = st.bytes_moved;
        uint64_t rp = st.bytes_repacked;
        uint64_t t = now_ms();
        if (dd_file(pfd, &nfd, ndir, name, &o, &st) < 0)
            rc = 1;
        if (o.verbose)
            fprintf(stderr, "forkd-dedupe: %s: compared %" PRIu64 ", shared %" PRIu64
                    " (moved %" PRIu64 "), repacked %" PRIu64 ", %" PRIu64 " ms\n", name,
                    st.bytes_compared - cmp, st.bytes_shared - sh,
                    st.bytes_moved - mv, st.bytes_repacked - rp, now_ms() - t);
    next:
        if (pfd >= 0)
            close(pfd);
        if (nfd >= 0)
            close(nfd);
        free(names[i]);
    }
    free(names);
    close(pdir);
    close(ndir);

    if (o.verbose)
        fprintf(stderr, "forkd-dedupe: %" PRIu64 " FIDEDUPERANGE calls, %" PRIu64
                " shared nothing\n", st.ranges, st.ranges_skipped);
    printf("{\"files\": %" PRIu64 ", \"bytesCompared\": %" PRIu64 ", \"bytesShared\": %" PRIu64
           ", \"ms\": %" PRIu64 "}\n",
           st.files, st.bytes_compared, st.bytes_shared, now_ms() - t0);
    if (fflush(stdout) != 0)
        rc = 1;
    return rc;
}
