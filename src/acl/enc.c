/* enc.c: writes packed ACLs in the byte form of enc.h and measures it.
 * Relies on nothing but libc. */
#include "acl/enc.h"

static uint8_t *varint_put(uint8_t *p, uint32_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

size_t acl_enc_write(const uint32_t *packed, uint8_t *out)
{
    const uint32_t *ids[2] = {packed + 2, packed + 2 + packed[0]};
    uint8_t *p = varint_put(varint_put(out, packed[0]), packed[1]);
    for (int w = 0; w < 2; w++)
        for (uint32_t i = 0; i < packed[w]; i++)
            p = varint_put(p, ids[w][i] - (i ? ids[w][i - 1] : 0));
    return (size_t)(p - out);
}

size_t acl_enc_size(const uint8_t *enc)
{
    acl_dec_t d;
    const uint8_t *p;
    acl_dec_open(&d, enc);
    p = d.p;
    for (uint64_t i = 0; i < (uint64_t)d.n[0] + d.n[1]; i++)
        while (*p++ & 0x80)
            continue;
    return (size_t)(p - enc);
}
