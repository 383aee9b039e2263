/* store_testutil.h: records of the store tests: record i is STU_VLEN bytes derived from i, under
 * the 4-byte big-endian key i in STORE_CHUNKS. Relies on cmocka (included before) and store.h. */
#ifndef CDN_STORE_TESTUTIL_H
#define CDN_STORE_TESTUTIL_H

#include <string.h>

#include "store/store.h"

#define STU_VLEN 1000

static inline void stu_fill(unsigned char *v, uint32_t i)
{
    for (size_t j = 0; j < STU_VLEN; j++)
        v[j] = (unsigned char)(i * 31 + j);
}

/* Writes records [from, to) in one transaction. */
static inline void stu_put_range(store_t *s, uint32_t from, uint32_t to)
{
    store_txn_t *t;
    unsigned char key[4], v[STU_VLEN];
    assert_int_equal(store_txn_begin(s, 1, &t, NULL), 0);
    for (uint32_t i = from; i < to; i++) {
        store_be32(key, i);
        stu_fill(v, i);
        assert_int_equal(store_put(t, STORE_CHUNKS, key, 4, v, STU_VLEN), 0);
    }
    assert_int_equal(store_txn_commit(t, NULL), 0);
}

/* How many of records [0, n) read back as written. */
static inline uint32_t stu_read_back(store_t *s, uint32_t n)
{
    store_txn_t *t;
    unsigned char key[4], want[STU_VLEN];
    uint32_t ok = 0;
    assert_int_equal(store_txn_begin(s, 0, &t, NULL), 0);
    for (uint32_t i = 0; i < n; i++) {
        const void *v;
        size_t vlen;
        store_be32(key, i);
        stu_fill(want, i);
        ok += store_get(t, STORE_CHUNKS, key, 4, &v, &vlen) == 0 && vlen == STU_VLEN &&
              !memcmp(v, want, STU_VLEN);
    }
    store_txn_abort(t);
    return ok;
}

#endif
