/* Just enough protobuf to read CRIU's RPC messages (CRIU's images/rpc.proto). */
#ifndef FORKD_CRIU_VERSION_PB_H
#define FORKD_CRIU_VERSION_PB_H

#include <stddef.h>
#include <stdint.h>

enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_BYTES = 2, PB_FIXED32 = 5 };

struct pb_field {
    uint32_t num;
    int wire;
    uint64_t varint;     /* PB_VARINT */
    const uint8_t *data; /* PB_BYTES (strings, nested messages) */
    size_t len;
};

/* Reads the field at *p (before end) into f and moves *p past it: 1, 0 at the end, -1 if malformed. */
int pb_next(const uint8_t **p, const uint8_t *end, struct pb_field *f);

/* An int32 field's value (negatives are ten-byte varints). */
static inline int32_t pb_int32(const struct pb_field *f)
{
    return (int32_t)(uint32_t)f->varint;
}

#endif
