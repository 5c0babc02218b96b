#include "dedupe-ctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int dd_build_hash(struct ctx *c)
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
        if (dd_read_full(c, c->pfd, win->buf, len, off, "prev") < 0)
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
uint64_t dd_hash_lookup(const struct ctx *c, const unsigned char *nb)
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
