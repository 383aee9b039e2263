/* cmp.h: qsort and bsearch comparators for unsigned integers, ascending. Header only. */
#ifndef CDN_CMP_H
#define CDN_CMP_H

#include <stdint.h>

static inline int cdn_cmp_u32(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return (a > b) - (a < b);
}

static inline int cdn_cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

#endif
