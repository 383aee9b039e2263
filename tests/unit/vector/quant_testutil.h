/* quant_testutil.h: what the 8-bit and 1-bit code tests share: a writer thread that appends
 * rows' codes in batches while searches run. Relies on vector/quant.h; static, one copy per test.
 */
#ifndef CDN_QUANT_TESTUTIL_H
#define CDN_QUANT_TESTUTIL_H

#include "vector/quant.h"

typedef struct appender {
    quant_t *q;
    const vec_view_t *v;
    uint32_t batch; /* rows encoded per call */
    int rc;
} appender_t;

/* Thread body: encodes rows 0..v->count-1 of a->v, a->batch at a time, stopping at an error. */
static inline void *append_rows(void *arg)
{
    appender_t *a = arg;
    for (uint32_t first = 0; first < a->v->count && a->rc == 0; first += a->batch) {
        uint32_t n = a->v->count - first < a->batch ? a->v->count - first : a->batch;
        a->rc = quant_encode_rows(a->q, a->v, first, n, NULL);
    }
    return NULL;
}

#endif
