/* Every read is bounded by end: a message cut short or lying about a length is malformed, never read past. */
#include "pb.h"

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*p >= end)
            return -1;
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

int pb_next(const uint8_t **p, const uint8_t *end, struct pb_field *f)
{
    if (*p >= end)
        return 0;
    uint64_t key;
    if (varint(p, end, &key) != 0 || key >> 3 == 0 || key >> 3 > 536870911)
        return -1;
    f->num = (uint32_t)(key >> 3);
    f->wire = (int)(key & 7);
    f->varint = 0;
    f->data = NULL;
    f->len = 0;
    size_t skip;
    switch (f->wire) {
    case PB_VARINT:
        return varint(p, end, &f->varint) == 0 ? 1 : -1;
    case PB_FIXED64:
        skip = 8;
        break;
    case PB_FIXED32:
        skip = 4;
        break;
    case PB_BYTES: {
        uint64_t len;
        if (varint(p, end, &len) != 0 || len > (uint64_t)(end - *p))
            return -1;
        f->data = *p;
        f->len = (size_t)len;
        skip = (size_t)len;
        break;
    }
    default:
        return -1; /* groups: not in CRIU's messages */
    }
    if (skip > (size_t)(end - *p))
        return -1;
    *p += skip;
    return 1;
}
