/* test_fstats.c: BM25 statistics over a document set: N, df and avgdl against counts made here,
 * and a search of a big index scored over a readable set against an index that holds only
 * those documents (same hits, scores equal to the bit, with pruning, deletes, several terms).
 * Relies on cmocka, textidx, fstats and CRoaring. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h> /* own block: it needs setjmp.h, stdarg.h, stddef.h first */

#include "text/fstats.h"
#include "text/textidx.h"

#define NDOCS 800
#define MAXLEN 30
#define VOCAB 12

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static int words[NDOCS][MAXLEN], len[NDOCS], live[NDOCS];

/* Readable docs are short and varied; the others repeat the first words, so that their
 * postings move the terms' block maxima (and with them MaxScore's visiting order). */
static void make_doc(uint32_t d, int hidden, char *buf, size_t cap)
{
    size_t o = 0;
    len[d] = hidden ? 1 + (int)rnd(4) : 3 + (int)rnd(MAXLEN - 3);
    for (int i = 0; i < len[d]; i++) {
        words[d][i] = hidden && rnd(2) ? (int)rnd(3) : (int)rnd(VOCAB);
        o += (size_t)snprintf(buf + o, cap - o, "%sw%d", i ? " " : "", words[d][i]);
    }
}

static textidx_t *new_index(void)
{
    textidx_t *ti;
    assert_int_equal(textidx_create(NULL, &ti, NULL), 0);
    assert_int_equal(textidx_add_field(ti, "body", TEXTIDX_TEXT, "whitespace", NULL), 0);
    return ti;
}

static void add(textidx_t *ti, uint32_t d, const char *text)
{
    textidx_value_t v = {"body", text, strlen(text), 0};
    assert_int_equal(textidx_add_doc(ti, d, &v, 1, NULL), 0);
}

/* big holds every doc, small only the readable ones (same ids); a few of each are deleted. */
static void build(textidx_t *big, textidx_t *small, roaring_bitmap_t *readable, int share)
{
    char buf[MAXLEN * 8];
    for (uint32_t d = 0; d < NDOCS; d++) {
        int r = (int)rnd(100) < share;
        make_doc(d, !r, buf, sizeof buf);
        live[d] = 1;
        add(big, d, buf);
        if (r) {
            add(small, d, buf);
            roaring_bitmap_add(readable, d);
        }
    }
    for (uint32_t d = 0; d < NDOCS; d += 37) {
        live[d] = 0;
        textidx_delete_doc(big, d);
        textidx_delete_doc(small, d);
        roaring_bitmap_remove(readable, d);
    }
}

static void test_statistics_match_counts_over_small_and_large_sets(void **state)
{
    (void)state;
    for (int share = 5; share <= 95; share += 45) {
        textidx_t *big = new_index(), *small = new_index();
        roaring_bitmap_t *r = roaring_bitmap_create();
        build(big, small, r, share);
        roaring_bitmap_add(r, NDOCS + 5); /* a doc the field does not hold counts for nothing */
        const invidx_t *ix = &textidx_text_field(big, "body")->ix;
        fstats_t fs;
        assert_int_equal(fstats_init(&fs, ix, r), 0);
        uint64_t n = 0, sum = 0;
        for (uint32_t d = 0; d < NDOCS; d++)
            if (live[d] && roaring_bitmap_contains(r, d)) {
                n++;
                sum += (uint64_t)len[d];
            }
        assert_int_equal(fs.n_docs, n);
        assert_true(fs.avgdl == (double)sum / (double)n);
        for (int w = 0; w < VOCAB; w++) {
            char t[16];
            uint32_t tid, df = 0;
            snprintf(t, sizeof t, "w%d", w);
            assert_int_equal(invidx_lookup(ix, t, strlen(t), &tid), 0);
            for (uint32_t d = 0; d < NDOCS; d++) {
                int has = 0;
                for (int i = 0; i < len[d] && !has; i++)
                    has = words[d][i] == w;
                df += has && live[d] && roaring_bitmap_contains(r, d);
            }
            assert_int_equal(fstats_df(&fs, tid), df);
        }
        fstats_free(&fs);
        roaring_bitmap_free(r);
        textidx_free(big);
        textidx_free(small);
    }
}

static void test_scores_over_a_readable_set_equal_an_index_of_only_it(void **state)
{
    (void)state;
    static const char *queries[] = {"w0 w1 w2", "w0 w3 w5 w7", "w1 w2 w4 w6 w8 w9", "w2 w0",
                                    "w11 w0 w10 w1 w3"};
    for (int share = 10; share <= 90; share += 40) {
        textidx_t *big = new_index(), *small = new_index();
        roaring_bitmap_t *r = roaring_bitmap_create();
        build(big, small, r, share);
        for (size_t qi = 0; qi < sizeof queries / sizeof *queries; qi++)
            for (size_t k = 1; k <= 41; k += 20) {
                textq_t *q;
                textidx_result_t a, b;
                assert_int_equal(textq_match("body", queries[qi], &q), 0);
                textidx_search_opts_t ob = {.allowed = r, .k = k, .stats_over = r};
                textidx_search_opts_t os = {.k = k};
                assert_int_equal(textidx_search(big, q, &ob, &b, NULL), 0);
                assert_int_equal(textidx_search(small, q, &os, &a, NULL), 0);
                assert_int_equal(a.n, b.n);
                for (size_t i = 0; i < a.n; i++) {
                    assert_int_equal(a.hits[i].id, b.hits[i].id);
                    if (memcmp(&a.hits[i].score, &b.hits[i].score, sizeof(float)))
                        fail_msg("share %d query \"%s\" k %zu rank %zu: %.9g against %.9g", share,
                                 queries[qi], k, i, (double)a.hits[i].score,
                                 (double)b.hits[i].score);
                }
                textidx_result_free(&a);
                textidx_result_free(&b);
                textq_free(q);
            }
        roaring_bitmap_free(r);
        textidx_free(big);
        textidx_free(small);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_statistics_match_counts_over_small_and_large_sets),
        cmocka_unit_test(test_scores_over_a_readable_set_equal_an_index_of_only_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
