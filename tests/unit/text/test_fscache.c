/* test_fscache.c: the statistics cache of a text field. A search over a readable set kept from
 * an earlier one scores exactly as an index holding only that set (so a kept entry never
 * outlives a write, and never serves another set); equal sets share an entry; the cache stays
 * within its limits; a failed allocation fails the search and keeps nothing half made; threads
 * searching different sets get each their own answers. Relies on cmocka, textidx, fscache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h> /* own block: it needs setjmp.h, stdarg.h, stddef.h first */

#include <pthread.h>

#include "base/err.h"
#include "base/mem.h"
#include "text/fscache.h"
#include "text/textidx.h"

#define NDOCS 600
#define VOCAB 10

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static textidx_t *new_index(void)
{
    textidx_t *ti;
    assert_int_equal(textidx_create(NULL, &ti, NULL), 0);
    assert_int_equal(textidx_add_field(ti, "body", TEXTIDX_TEXT, "whitespace", NULL), 0);
    return ti;
}

/* Doc d's text: its length and words drawn from d's own seed, so two indexes agree on it. */
static void doc_text(uint32_t d, uint32_t version, char *buf, size_t cap)
{
    uint64_t s = (d + 1) * 0x2545F4914F6CDD1Dull + version * 0x9E3779B97F4A7C15ull;
    size_t o = 0;
    int n = 2 + (int)(s % 25);
    for (int i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        o += (size_t)snprintf(buf + o, cap - o, "%sw%d", i ? " " : "", (int)(s % VOCAB));
    }
}

static void add(textidx_t *ti, uint32_t d, uint32_t version)
{
    char buf[512];
    doc_text(d, version, buf, sizeof buf);
    textidx_value_t v = {"body", buf, strlen(buf), 0};
    assert_int_equal(textidx_add_doc(ti, d, &v, 1, NULL), 0);
}

static fscache_stats_t stats_of(const textidx_t *ti)
{
    fscache_stats_t s;
    fscache_stats(textidx_text_field(ti, "body")->stats, &s);
    return s;
}

/* big's search over r (statistics over r) against small's (every doc of small is in r):
 * the same hits with scores equal to the bit. */
static void same_as_small(textidx_t *big, textidx_t *small, const roaring_bitmap_t *r,
                          const char *query)
{
    textq_t *q;
    textidx_result_t a, b;
    assert_int_equal(textq_match("body", query, &q), 0);
    textidx_search_opts_t ob = {.allowed = r, .k = 15, .stats_over = r};
    textidx_search_opts_t os = {.k = 15};
    assert_int_equal(textidx_search(big, q, &ob, &b, NULL), 0);
    assert_int_equal(textidx_search(small, q, &os, &a, NULL), 0);
    assert_int_equal(a.n, b.n);
    for (size_t i = 0; i < a.n; i++) {
        assert_int_equal(a.hits[i].id, b.hits[i].id);
        if (memcmp(&a.hits[i].score, &b.hits[i].score, sizeof(float)))
            fail_msg("query \"%s\" rank %zu: %.9g against %.9g", query, i, (double)b.hits[i].score,
                     (double)a.hits[i].score);
    }
    textidx_result_free(&a);
    textidx_result_free(&b);
    textq_free(q);
}

/* big holds every doc, small and r every `every`-th one: the readable docs of a subject. */
static void build_pair(textidx_t **big, textidx_t **small, roaring_bitmap_t **r, uint32_t every)
{
    *big = new_index();
    *small = new_index();
    *r = roaring_bitmap_create();
    for (uint32_t d = 0; d < NDOCS; d++) {
        add(*big, d, 0);
        if (d % every == 0) {
            add(*small, d, 0);
            roaring_bitmap_add(*r, d);
        }
    }
}

static void test_a_set_is_counted_once_and_equal_sets_share_it(void **state)
{
    (void)state;
    textidx_t *big, *small;
    roaring_bitmap_t *r;
    build_pair(&big, &small, &r, 7);
    same_as_small(big, small, r, "w1 w2 w3");
    fscache_stats_t s = stats_of(big);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.hits, 0);
    assert_int_equal(s.entries, 1);
    assert_true(s.bytes > 0);
    same_as_small(big, small, r, "w4 w2");
    roaring_bitmap_t *copy = roaring_bitmap_copy(r); /* another object, the same docs */
    same_as_small(big, small, copy, "w1 w2 w3");
    s = stats_of(big);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.hits, 2);
    assert_int_equal(s.entries, 1);
    /* one doc more is another set */
    roaring_bitmap_add(copy, 1);
    add(small, 1, 0);
    same_as_small(big, small, copy, "w1 w2 w3");
    s = stats_of(big);
    assert_int_equal(s.misses, 2);
    assert_int_equal(s.entries, 2);
    /* the whole field's statistics are its own: nothing kept for them */
    roaring_bitmap_t *all = roaring_bitmap_create();
    roaring_bitmap_add_range(all, 0, NDOCS);
    textq_t *q;
    textidx_result_t res;
    assert_int_equal(textq_match("body", "w1", &q), 0);
    textidx_search_opts_t o = {.allowed = all, .k = 5, .stats_over = all};
    assert_int_equal(textidx_search(big, q, &o, &res, NULL), 0);
    textidx_result_free(&res);
    textq_free(q);
    assert_int_equal(stats_of(big).entries, 2);
    roaring_bitmap_free(all);
    roaring_bitmap_free(copy);
    roaring_bitmap_free(r);
    textidx_free(big);
    textidx_free(small);
}

/* Writes between searches: every add, delete and re-add changes N, df or avgdl of the set, and
 * a search after it must score with the new figures, never with kept ones. */
static void test_no_kept_statistics_outlive_a_write(void **state)
{
    (void)state;
    static const char *queries[] = {"w0 w1", "w2 w3 w4", "w5 w9 w0 w7", "w8"};
    textidx_t *big, *small;
    roaring_bitmap_t *r;
    uint32_t version[NDOCS] = {0};
    int live[NDOCS];
    build_pair(&big, &small, &r, 5);
    for (uint32_t d = 0; d < NDOCS; d++)
        live[d] = 1;
    for (int step = 0; step < 300; step++) {
        same_as_small(big, small, r, queries[step % 4]);
        uint32_t d = rnd(NDOCS);
        int readable = roaring_bitmap_contains(r, d);
        if (live[d]) { /* delete: a readable doc leaves both, a hidden one only big */
            textidx_delete_doc(big, d);
            if (readable)
                textidx_delete_doc(small, d);
            live[d] = 0;
        } else { /* back with other words */
            version[d]++;
            add(big, d, version[d]);
            if (readable)
                add(small, d, version[d]);
            live[d] = 1;
        }
    }
    fscache_stats_t s = stats_of(big);
    assert_true(s.misses >= 300); /* a write before every search: each one computed anew */
    assert_true(s.entries <= FSCACHE_ENTRIES);
    roaring_bitmap_free(r);
    textidx_free(big);
    textidx_free(small);
}

/* More sets than the cache keeps, searched in turn and again: answers right, limits held. */
static void test_the_cache_keeps_within_its_limits(void **state)
{
    (void)state;
    enum { SETS = FSCACHE_ENTRIES + 9 };
    textidx_t *big = new_index(), *small[SETS];
    roaring_bitmap_t *r[SETS];
    for (int i = 0; i < SETS; i++) {
        small[i] = new_index();
        r[i] = roaring_bitmap_create();
    }
    for (uint32_t d = 0; d < NDOCS; d++) {
        add(big, d, 0);
        for (int i = 0; i < SETS; i++)
            if (rnd(3) == 0) {
                add(small[i], d, 0);
                roaring_bitmap_add(r[i], d);
            }
    }
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < SETS; i++) {
            same_as_small(big, small[i], r[i], "w1 w6 w3");
            fscache_stats_t s = stats_of(big);
            assert_true(s.entries <= FSCACHE_ENTRIES);
            assert_true(s.bytes <= FSCACHE_BYTES);
        }
    fscache_stats_t s = stats_of(big);
    assert_int_equal(s.entries, FSCACHE_ENTRIES);
    /* round-robin over more sets than it holds: the least recently used is always gone */
    assert_int_equal(s.misses, 3 * SETS);
    same_as_small(big, small[SETS - 1], r[SETS - 1], "w2");
    assert_int_equal(stats_of(big).hits, 1);
    for (int i = 0; i < SETS; i++) {
        textidx_free(small[i]);
        roaring_bitmap_free(r[i]);
    }
    textidx_free(big);
}

static void test_a_failed_allocation_fails_the_search_and_keeps_nothing_half_made(void **state)
{
    (void)state;
    textidx_t *big, *small;
    roaring_bitmap_t *r;
    build_pair(&big, &small, &r, 3);
    int failures = 0, done = 0;
    for (long n = 0; n < 100 && !done; n++) {
        textq_t *q;
        textidx_result_t res;
        assert_int_equal(textq_match("body", "w1 w2", &q), 0);
        textidx_search_opts_t o = {.allowed = r, .k = 5, .stats_over = r};
        cdn_mem_fail_after(n);
        int rc = textidx_search(big, q, &o, &res, NULL);
        cdn_mem_fail_after(-1);
        textq_free(q);
        if (rc == CDN_OK) {
            textidx_result_free(&res);
            done = 1;
            break;
        }
        failures++;
        assert_int_equal(rc, CDN_ERR_NOMEM);
        /* kept only once whole (a later allocation of the search may still fail) */
        assert_true(stats_of(big).entries <= 1);
    }
    assert_true(done);
    assert_true(failures >= 3); /* the entry, its statistics and its copy of the set */
    assert_int_equal(stats_of(big).entries, 1);
    same_as_small(big, small, r, "w1 w2");
    assert_true(stats_of(big).hits >= 1);
    roaring_bitmap_free(r);
    textidx_free(big);
    textidx_free(small);
}

/* Threads searching as different readers at once (more sets than the cache holds, so entries
 * are evicted while others use them) each get the answer a lone search gives. */
#define THREADS 4
#define SEARCHES 600 /* each */
#define TSETS (FSCACHE_ENTRIES + 4)
#define TQUERIES 3
static const char *tqueries[TQUERIES] = {"w0 w1 w2", "w3 w8", "w9 w4 w5 w6"};

typedef struct shared {
    textidx_t *ti;
    roaring_bitmap_t *r[TSETS];
    bm25_hit_t want[TSETS][TQUERIES][10];
    size_t nwant[TSETS][TQUERIES];
    int bad;
} shared_t;

static void search_into(textidx_t *ti, const roaring_bitmap_t *r, int qi, bm25_hit_t *out,
                        size_t *n)
{
    textq_t *q;
    textidx_result_t res;
    textidx_search_opts_t o = {.allowed = r, .k = 10, .stats_over = r};
    *n = 0;
    if (textq_match("body", tqueries[qi], &q))
        return;
    if (textidx_search(ti, q, &o, &res, NULL) == CDN_OK) {
        memcpy(out, res.hits, res.n * sizeof *out);
        *n = res.n;
        textidx_result_free(&res);
    }
    textq_free(q);
}

static void *searcher(void *arg)
{
    shared_t *sh = arg;
    static _Thread_local uint64_t s;
    s = (uint64_t)(uintptr_t)&s | 1;
    for (int i = 0; i < SEARCHES; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        int set = (int)(s % TSETS), qi = (int)((s >> 20) % TQUERIES);
        bm25_hit_t got[10];
        size_t n;
        search_into(sh->ti, sh->r[set], qi, got, &n);
        if (n != sh->nwant[set][qi] || memcmp(got, sh->want[set][qi], n * sizeof *got))
            __atomic_store_n(&sh->bad, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void test_concurrent_searches_get_their_own_sets_answers(void **state)
{
    (void)state;
    static shared_t sh;
    sh.ti = new_index();
    for (uint32_t d = 0; d < NDOCS; d++)
        add(sh.ti, d, 0);
    for (int i = 0; i < TSETS; i++) {
        sh.r[i] = roaring_bitmap_create();
        for (uint32_t d = 0; d < NDOCS; d++)
            if (rnd(TSETS + 1) <= (uint32_t)i) /* none holds every doc */
                roaring_bitmap_add(sh.r[i], d);
    }
    /* the answers of lone searches, each set's from an index whose cache held no other set */
    for (int i = 0; i < TSETS; i++) {
        textidx_t *fresh = new_index();
        for (uint32_t d = 0; d < NDOCS; d++)
            add(fresh, d, 0);
        for (int qi = 0; qi < TQUERIES; qi++) {
            search_into(fresh, sh.r[i], qi, sh.want[i][qi], &sh.nwant[i][qi]);
            assert_true(sh.nwant[i][qi] > 0);
        }
        textidx_free(fresh);
    }
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, searcher, &sh), 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    assert_int_equal(sh.bad, 0);
    fscache_stats_t s = stats_of(sh.ti);
    assert_int_equal(s.hits + s.misses, THREADS * SEARCHES);
    assert_true(s.hits > 0);
    assert_true(s.entries <= FSCACHE_ENTRIES);
    for (int i = 0; i < TSETS; i++)
        roaring_bitmap_free(sh.r[i]);
    textidx_free(sh.ti);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_set_is_counted_once_and_equal_sets_share_it),
        cmocka_unit_test(test_no_kept_statistics_outlive_a_write),
        cmocka_unit_test(test_the_cache_keeps_within_its_limits),
        cmocka_unit_test(test_a_failed_allocation_fails_the_search_and_keeps_nothing_half_made),
        cmocka_unit_test(test_concurrent_searches_get_their_own_sets_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
