/* test_persist.c: save/load round trip gives identical results without re-analysis, and a
 * truncated or altered file is refused as corrupt. Relies on cmocka, textidx, a temp dir. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include <cmocka.h> /* own block: it needs setjmp.h, stdarg.h, stddef.h first */

#include "text/textidx.h"

static char path[256];

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static const char *const words[] = {"alpha", "beta",  "gamma",   "delta", "epsilon", "zeta",
                                    "eta",   "theta", "iota",    "kappa", "lambda",  "mu",
                                    "nu",    "xi",    "omicron", "pi",    "rho",     "sigma"};
#define NW (sizeof words / sizeof *words)

static textidx_t *build(void)
{
    textidx_t *ti;
    textidx_config_t cfg = {0.9f, 0.4f};
    assert_int_equal(textidx_create(&cfg, &ti, NULL), 0);
    assert_int_equal(textidx_add_field(ti, "body", TEXTIDX_TEXT, "english", NULL), 0);
    assert_int_equal(textidx_add_field(ti, "title", TEXTIDX_TEXT, "standard", NULL), 0);
    assert_int_equal(textidx_add_field(ti, "tag", TEXTIDX_KEYWORD, NULL, NULL), 0);
    assert_int_equal(textidx_add_field(ti, "n", TEXTIDX_NUMBER, NULL, NULL), 0);
    for (uint32_t d = 0; d < 400; d++) {
        char body[512], title[64];
        size_t o = 0;
        int len = 3 + (int)rnd(30);
        for (int i = 0; i < len; i++)
            o += (size_t)snprintf(body + o, sizeof body - o, "%s ", words[rnd(NW)]);
        snprintf(title, sizeof title, "%s %s", words[rnd(NW)], words[rnd(NW)]);
        const char *tag = d % 3 ? "odd" : "three";
        textidx_value_t v[] = {{"body", body, o, 0},
                               {"title", title, strlen(title), 0},
                               {"tag", tag, strlen(tag), 0},
                               {"n", NULL, 0, (double)(d % 17)}};
        assert_int_equal(textidx_add_doc(ti, d, v, 4, NULL), 0);
    }
    for (uint32_t d = 0; d < 400; d += 7) /* deletes must survive too */
        assert_int_equal(textidx_delete_doc(ti, d), 0);
    return ti;
}

static void queries(textq_t **qs)
{
    assert_int_equal(textq_match("body", "alpha gamma sigma", &qs[0]), 0);
    assert_int_equal(textq_phrase("body", "beta gamma", 1, &qs[1]), 0);
    assert_int_equal(textq_bool(&qs[2]), 0);
    textq_t *a, *b;
    assert_int_equal(textq_match("title", "delta", &a), 0);
    assert_int_equal(textq_range("n", "3", 1, "9", 1, &b), 0);
    textq_bool_add(qs[2], TEXTQ_MUST, a);
    textq_bool_add(qs[2], TEXTQ_FILTER, b);
    assert_int_equal(textq_term("tag", "three", &qs[3]), 0);
}

/* Asks x and y the same queries, with and without a filter, pruned and exhaustive: the same
 * hits, scores and totals. map (400 entries, or NULL for none) is how y numbers x's docs. */
/* (score, id) pairs, best first and ties by id: the order two indexes whose ids differ in
 * order agree on. */
typedef struct scored {
    float score;
    uint32_t id;
} scored_t;

static int cmp_scored(const void *pa, const void *pb)
{
    const scored_t *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* The same queries on x and on y (x saved with its doc ids as map[id]) give the same hits and
 * scores. With any_order the map need not keep the ids' order, and ties among equal scores then
 * come out in another order: every match is asked for and the two lists compared by
 * (score, x's id). */
static void same_results(const textidx_t *x, const textidx_t *y, const uint32_t *map, int any_order)
{
    textq_t *qs[4];
    uint32_t x_of[400];
    queries(qs);
    roaring_bitmap_t *allowed = roaring_bitmap_create(), *y_allowed = roaring_bitmap_create();
    for (uint32_t d = 0; d < 400; d++)
        if (map && map[d] != UINT32_MAX)
            x_of[map[d]] = d;
    for (uint32_t d = 0; d < 400; d += 2)
        if (!map || map[d] != UINT32_MAX) {
            roaring_bitmap_add(allowed, d);
            roaring_bitmap_add(y_allowed, map ? map[d] : d);
        }
    /* Pruned totals are lower bounds that depend on where blocks fall (a saved index drops its
     * dead postings): equal totals are asked of the exhaustive pass. */
    for (int i = 0; i < 4; i++)
        for (int a = 0; a < 4; a++) {
            size_t k = any_order ? 400 : 15;
            textidx_search_opts_t ox = {a & 1 ? allowed : NULL, k, a >> 1, NULL, 0};
            textidx_search_opts_t oy = {a & 1 ? y_allowed : NULL, k, a >> 1, NULL, 0};
            textidx_result_t rx, ry;
            assert_int_equal(textidx_search(x, qs[i], &ox, &rx, NULL), 0);
            assert_int_equal(textidx_search(y, qs[i], &oy, &ry, NULL), 0);
            assert_true(rx.n > 0);
            assert_int_equal(rx.n, ry.n);
            if (a >> 1) {
                if (!map)
                    assert_true(rx.total_exact && ry.total_exact);
                assert_int_equal(rx.total, ry.total);
            }
            scored_t sx[400], sy[400];
            for (size_t h = 0; h < rx.n; h++) {
                sx[h] = (scored_t){rx.hits[h].score, rx.hits[h].id};
                sy[h] = (scored_t){ry.hits[h].score, map ? x_of[ry.hits[h].id] : ry.hits[h].id};
            }
            if (any_order) {
                qsort(sx, rx.n, sizeof *sx, cmp_scored);
                qsort(sy, ry.n, sizeof *sy, cmp_scored);
            }
            for (size_t h = 0; h < rx.n; h++) {
                assert_int_equal(sx[h].id, sy[h].id);
                assert_true(sx[h].score == sy[h].score);
            }
            textidx_result_free(&rx);
            textidx_result_free(&ry);
        }
    for (int i = 0; i < 4; i++)
        textq_free(qs[i]);
    roaring_bitmap_free(allowed);
    roaring_bitmap_free(y_allowed);
}

static void test_save_load_round_trip_gives_identical_results(void **state)
{
    (void)state;
    textidx_t *ti = build(), *back;
    uint64_t rev = 0;
    assert_int_equal(textidx_save(ti, path, 4242, NULL), 0);
    assert_int_equal(textidx_load(path, &back, &rev, NULL), 0);
    assert_int_equal(rev, 4242);
    assert_int_equal(textidx_doc_count(back), textidx_doc_count(ti));
    assert_true(back->cfg.k1 == 0.9f && back->cfg.b == 0.4f);
    same_results(ti, back, NULL, 0);
    /* the loaded index keeps working: updates and deletes */
    textidx_value_t v = {"body", "omega omega", 11, 0};
    assert_int_equal(textidx_add_doc(back, 5000, &v, 1, NULL), 0);
    assert_int_equal(textidx_delete_doc(back, 1), 0);
    textq_t *q;
    textidx_result_t r;
    textidx_search_opts_t o = {NULL, 5, 0, NULL, 0};
    assert_int_equal(textq_match("body", "omega", &q), 0);
    assert_int_equal(textidx_search(back, q, &o, &r, NULL), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.hits[0].id, 5000);
    textidx_result_free(&r);
    textq_free(q);
    textidx_free(ti);
    textidx_free(back);
}

/* textidx_save_mapped: the index saved with its live docs renumbered 0..live-1 (a compaction)
 * loads into one that answers every query with the same hits, scores and totals under the new
 * ids, filters on keyword and number fields included; a map that leaves out a live doc is
 * refused. */
static void test_saved_renumbered_gives_the_same_results_under_new_ids(void **state)
{
    (void)state;
    textidx_t *ti = build(), *back;
    uint32_t map[400], n_new = 0;
    uint64_t rev = 0;
    for (uint32_t d = 0; d < 400; d++) /* build() deleted every seventh */
        map[d] = d % 7 ? n_new++ : UINT32_MAX;
    uint32_t keep = map[8];
    map[8] = UINT32_MAX;
    assert_int_equal(textidx_save_mapped(ti, path, n_new, map, 400, NULL), CDN_ERR_INVALID);
    map[8] = keep;
    assert_int_equal(textidx_save_mapped(ti, path, n_new, map, 400, NULL), 0);
    assert_int_equal(textidx_load(path, &back, &rev, NULL), 0);
    assert_int_equal(rev, n_new);
    assert_int_equal(textidx_doc_count(back), textidx_doc_count(ti));
    same_results(ti, back, map, 0);
    textidx_free(back);
    /* Any one-to-one numbering: the kept docs reversed and interleaved (a compaction numbers
     * rows by ACL), which the posting lists must be sorted by as they are written. */
    for (uint32_t d = 0; d < 400; d++)
        if (map[d] != UINT32_MAX)
            map[d] = map[d] % 2 ? map[d] / 2 : n_new - 1 - map[d] / 2;
    assert_int_equal(textidx_save_mapped(ti, path, n_new, map, 400, NULL), 0);
    assert_int_equal(textidx_load(path, &back, &rev, NULL), 0);
    assert_int_equal(textidx_doc_count(back), textidx_doc_count(ti));
    same_results(ti, back, map, 1);
    textidx_free(ti);
    textidx_free(back);
}

static uint8_t *slurp(size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    uint8_t *p = malloc(*n);
    assert_int_equal(fread(p, 1, *n, f), *n);
    fclose(f);
    return p;
}

static void spit(const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void test_file_holds_terms_not_document_text(void **state)
{
    (void)state;
    textidx_t *ti;
    assert_int_equal(textidx_create(NULL, &ti, NULL), 0);
    assert_int_equal(textidx_add_field(ti, "body", TEXTIDX_TEXT, "english", NULL), 0);
    const char *text = "Running studies of horses";
    textidx_value_t v = {"body", text, strlen(text), 0};
    assert_int_equal(textidx_add_doc(ti, 3, &v, 1, NULL), 0);
    assert_int_equal(textidx_save(ti, path, 1, NULL), 0);
    size_t n;
    uint8_t *p = slurp(&n);
    assert_null(memmem(p, n, "Running", 7)); /* loading cannot re-analyze: no text is kept */
    assert_non_null(memmem(p, n, "studi", 5));
    free(p);
    textidx_free(ti);
}

static void test_truncated_or_altered_file_is_corrupt(void **state)
{
    (void)state;
    textidx_t *ti = build(), *back;
    uint64_t rev;
    cdn_err_t err;
    assert_int_equal(textidx_save(ti, path, 7, NULL), 0);
    size_t n;
    uint8_t *orig = slurp(&n);
    size_t cuts[] = {0, 10, 39, 40, n / 2, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        spit(orig, cuts[i]);
        assert_int_equal(textidx_load(path, &back, &rev, &err), CDN_ERR_CORRUPT);
    }
    size_t flips[] = {0, 9, 30, 45, n / 3, n - 1};
    for (size_t i = 0; i < sizeof flips / sizeof *flips; i++) {
        uint8_t *p = malloc(n);
        memcpy(p, orig, n);
        p[flips[i]] ^= 0x5a;
        spit(p, n);
        assert_int_equal(textidx_load(path, &back, &rev, &err), CDN_ERR_CORRUPT);
        free(p);
    }
    unlink(path);
    assert_int_equal(textidx_load(path, &back, &rev, &err), CDN_ERR_IO);
    free(orig);
    textidx_free(ti);
}

/* Altered payloads with a recomputed checksum reach the decoder: it must refuse or load a
 * usable index, never read out of bounds (this test earns its keep under ASan). */
static void test_decoder_survives_altered_payload_with_valid_checksum(void **state)
{
    (void)state;
    textidx_t *ti = build(), *back;
    uint64_t rev;
    assert_int_equal(textidx_save(ti, path, 7, NULL), 0);
    size_t n;
    uint8_t *orig = slurp(&n);
    uint8_t *p = malloc(n);
    int refused = 0;
    for (int it = 0; it < 150; it++) {
        memcpy(p, orig, n);
        for (int k = 0; k < 1 + it % 3; k++)
            p[40 + rnd((uint32_t)(n - 40))] ^= (uint8_t)(1 + rnd(255));
        uint64_t sum = XXH64(p + 40, n - 40, 0);
        memcpy(p + 32, &sum, 8);
        spit(p, n);
        int rc = textidx_load(path, &back, &rev, NULL);
        assert_true(rc == CDN_OK || rc == CDN_ERR_CORRUPT);
        if (rc == CDN_OK) {
            textq_t *qs[4];
            queries(qs);
            for (int i = 0; i < 4; i++) {
                textidx_search_opts_t o = {NULL, 10, 0, NULL, 0};
                textidx_result_t r;
                if (textidx_search(back, qs[i], &o, &r, NULL) == CDN_OK)
                    textidx_result_free(&r);
                textq_free(qs[i]);
            }
            textidx_free(back);
        }
        refused += rc == CDN_ERR_CORRUPT;
    }
    assert_true(refused > 0);
    free(p);
    free(orig);
    textidx_free(ti);
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/cordon-test-text-%ld.idx", (long)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_save_load_round_trip_gives_identical_results),
        cmocka_unit_test(test_saved_renumbered_gives_the_same_results_under_new_ids),
        cmocka_unit_test(test_file_holds_terms_not_document_text),
        cmocka_unit_test(test_truncated_or_altered_file_is_corrupt),
        cmocka_unit_test(test_decoder_survives_altered_payload_with_valid_checksum),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(path);
    return rc;
}
