/* test_store.c: handing the database file's pages back (store_release_pages): the pages a scan
 * mapped stop counting as resident, and every record still reads back intact. Relies on cmocka,
 * LMDB through store.h, and /proc/self/smaps. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "testutil.h"

#define NREC 3000
#define VLEN 1000

/* Resident kB of the mapping of dir/data.mdb. */
static long mapped_kb(const char *dir)
{
    char want[128];
    snprintf(want, sizeof want, "%s/data.mdb", dir);
    return tu_smaps_kb("Rss:", 0, 0, want);
}

static void fill(unsigned char *v, uint32_t i)
{
    for (size_t j = 0; j < VLEN; j++)
        v[j] = (unsigned char)(i * 31 + j);
}

/* Reads every record back and checks it; returns how many matched. */
static int read_all(store_t *s)
{
    store_txn_t *t;
    unsigned char key[4], want[VLEN];
    int ok = 0;
    assert_int_equal(store_txn_begin(s, 0, &t, NULL), 0);
    for (uint32_t i = 0; i < NREC; i++) {
        const void *v;
        size_t vlen;
        store_be32(key, i);
        fill(want, i);
        ok += store_get(t, STORE_CHUNKS, key, 4, &v, &vlen) == 0 && vlen == VLEN &&
              !memcmp(v, want, VLEN);
    }
    store_txn_abort(t);
    return ok;
}

static void test_released_pages_stop_counting_and_records_read_back(void **state)
{
    (void)state;
    char dir[64];
    store_t *s;
    store_txn_t *t;
    unsigned char key[4], val[VLEN];
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    assert_int_equal(store_open(dir, 0, &s, NULL), 0);
    assert_int_equal(store_txn_begin(s, 1, &t, NULL), 0);
    for (uint32_t i = 0; i < NREC; i++) {
        store_be32(key, i);
        fill(val, i);
        assert_int_equal(store_put(t, STORE_CHUNKS, key, 4, val, VLEN), 0);
    }
    assert_int_equal(store_txn_commit(t, NULL), 0);
    assert_int_equal(read_all(s), NREC); /* maps the file's pages */
    long before = mapped_kb(dir);
    store_release_pages(s);
    long after = mapped_kb(dir);
    print_message("data.mdb resident: %ld kB after the reads, %ld kB after the release\n", before,
                  after);
    assert_true(before >= 1024); /* about 3 MB of records were read through the map */
    assert_true(after < before / 8);
    assert_int_equal(read_all(s), NREC); /* nothing lost: the pages come back on reading */
    store_close(s);
    tu_rmrf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_released_pages_stop_counting_and_records_read_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
