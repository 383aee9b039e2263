/* test_bm25.c: BM25 top-k against an exhaustive reference scorer written here, over random
 * corpora, random permission sets, deletes and updates, with and without pruning.
 * Relies on cmocka, textidx and CRoaring; the reference never calls the index's scoring code. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h> /* own block: it needs setjmp.h, stdarg.h, stddef.h first */

#include "base/mem.h"
#include "text/textidx.h"

#define MAXDOCS 600
#define MAXLEN 40
#define VOCAB 60

/* The test's own copy of the corpus: word ids per doc; len 0 = absent/deleted. */
typedef struct corpus {
    int words[MAXDOCS][MAXLEN];
    int len[MAXDOCS];
    int live[MAXDOCS];
    uint32_t ndocs;
} corpus_t;

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* Zipf-ish word choice so that some terms are common (long posting lists, pruning matters). */
static int pick_word(void)
{
    uint32_t r = rnd(1000);
    return r < 400 ? (int)rnd(5) : r < 700 ? 5 + (int)rnd(15) : 20 + (int)rnd(VOCAB - 20);
}

static void doc_text(const corpus_t *c, uint32_t d, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < c->len[d]; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%sw%d", i ? " " : "", c->words[d][i]);
}

static void add_doc(textidx_t *ti, corpus_t *c, uint32_t d)
{
    char buf[MAXLEN * 8];
    c->len[d] = 1 + (int)rnd(MAXLEN - 1);
    for (int i = 0; i < c->len[d]; i++)
        c->words[d][i] = pick_word();
    c->live[d] = 1;
    doc_text(c, d, buf, sizeof buf);
    textidx_value_t v = {"body", buf, strlen(buf), 0};
    assert_int_equal(textidx_add_doc(ti, d, &v, 1, NULL), 0);
}

typedef struct ref_hit {
    uint32_t id;
    double score;
} ref_hit_t;

static int cmp_ref(const void *a, const void *b)
{
    const ref_hit_t *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Exhaustive BM25 (Lucene idf, no (k1+1) factor) over live docs, counting in the statistics
 * every live doc, scoring only allowed ones. Returns the number of matches. */
static size_t reference(const corpus_t *c, const int *q, int nq, const roaring_bitmap_t *allowed,
                        double k1, double b, ref_hit_t *out)
{
    double N = 0, sum = 0;
    int df[VOCAB] = {0};
    for (uint32_t d = 0; d < c->ndocs; d++) {
        if (!c->live[d])
            continue;
        N++;
        sum += c->len[d];
        int seen[VOCAB] = {0};
        for (int i = 0; i < c->len[d]; i++)
            if (!seen[c->words[d][i]]++)
                df[c->words[d][i]]++;
    }
    double avgdl = N ? sum / N : 1;
    size_t n = 0;
    for (uint32_t d = 0; d < c->ndocs; d++) {
        if (!c->live[d] || (allowed && !roaring_bitmap_contains(allowed, d)))
            continue;
        double s = 0;
        int any = 0;
        for (int j = 0; j < nq; j++) {
            int tf = 0;
            for (int i = 0; i < c->len[d]; i++)
                tf += c->words[d][i] == q[j];
            if (!tf)
                continue;
            any = 1;
            double idf = log(1 + (N - df[q[j]] + 0.5) / (df[q[j]] + 0.5));
            s += idf * tf / (tf + k1 * (1 - b + b * c->len[d] / avgdl));
        }
        if (any)
            out[n++] = (ref_hit_t){d, s};
    }
    qsort(out, n, sizeof *out, cmp_ref);
    return n;
}

static double tol(double s)
{
    return 1e-5 * (fabs(s) > 1 ? fabs(s) : 1);
}

/* The engine's top-k must equal the reference's up to exact ties: the same score at each rank,
 * each returned id scored the same by the reference, and the same id wherever the reference
 * has no near-tie. Also: no disallowed or deleted doc. */
static void check_query(const textidx_t *ti, const corpus_t *c, const int *q, int nq,
                        const roaring_bitmap_t *allowed, size_t k, int exhaustive)
{
    static ref_hit_t ref[MAXDOCS];
    char qs[256];
    size_t o = 0;
    for (int j = 0; j < nq; j++)
        o += (size_t)snprintf(qs + o, sizeof qs - o, "%sw%d", j ? " " : "", q[j]);
    size_t nref = reference(c, q, nq, allowed, ti->cfg.k1, ti->cfg.b, ref);
    textq_t *tq;
    textidx_result_t res;
    textidx_search_opts_t opts = {allowed, k, exhaustive, NULL, 0};
    assert_int_equal(textq_match("body", qs, &tq), 0);
    assert_int_equal(textidx_search(ti, tq, &opts, &res, NULL), 0);
    size_t want = nref < k ? nref : k;
    assert_int_equal(res.n, want);
    if (exhaustive || res.total_exact)
        assert_int_equal(res.total, nref);
    else
        assert_true(res.total <= nref);
    for (size_t i = 0; i < res.n; i++) {
        uint32_t id = res.hits[i].id;
        assert_true(id < c->ndocs && c->live[id]);
        assert_true(!allowed || roaring_bitmap_contains(allowed, id));
        assert_true(fabs(res.hits[i].score - ref[i].score) <= tol(ref[i].score));
        int tied = (i > 0 && fabs(ref[i - 1].score - ref[i].score) <= 2 * tol(ref[i].score)) ||
                   (i + 1 < nref && fabs(ref[i + 1].score - ref[i].score) <= 2 * tol(ref[i].score));
        if (!tied)
            assert_int_equal(id, ref[i].id);
        for (size_t j = 0; j < nref; j++)
            if (ref[j].id == id)
                assert_true(fabs(ref[j].score - res.hits[i].score) <= tol(ref[j].score));
    }
    textidx_result_free(&res);
    textq_free(tq);
}

static roaring_bitmap_t *random_allowed(uint32_t n, uint32_t per_mille)
{
    roaring_bitmap_t *b = roaring_bitmap_create();
    for (uint32_t d = 0; d < n; d++)
        if (rnd(1000) < per_mille)
            roaring_bitmap_add(b, d);
    return b;
}

static void random_queries(const textidx_t *ti, const corpus_t *c, int rounds)
{
    static const uint32_t fractions[] = {1000, 500, 100, 10, 2, 0};
    for (int r = 0; r < rounds; r++) {
        int q[6], nq = 1 + (int)rnd(6);
        for (int j = 0; j < nq; j++)
            q[j] = (int)rnd(VOCAB + 3); /* a few words that never occur */
        size_t k = 1 + rnd(20);
        for (size_t f = 0; f < sizeof fractions / sizeof *fractions; f++) {
            roaring_bitmap_t *a = random_allowed(c->ndocs + 10, fractions[f]);
            check_query(ti, c, q, nq, a, k, 0);
            check_query(ti, c, q, nq, a, k, 1);
            roaring_bitmap_free(a);
        }
        check_query(ti, c, q, nq, NULL, k, 0);
        check_query(ti, c, q, nq, NULL, k, 1);
    }
}

static textidx_t *new_index(float k1, float b)
{
    textidx_t *ti;
    textidx_config_t cfg = {k1, b};
    assert_int_equal(textidx_create(&cfg, &ti, NULL), 0);
    assert_int_equal(textidx_add_field(ti, "body", TEXTIDX_TEXT, "standard", NULL), 0);
    return ti;
}

static void test_topk_equals_exhaustive_reference_on_random_corpora(void **state)
{
    (void)state;
    static corpus_t c;
    for (int trial = 0; trial < 4; trial++) {
        rng_state = 0x1234567ull + (uint64_t)trial * 7919;
        memset(&c, 0, sizeof c);
        c.ndocs = 100 + rnd(MAXDOCS - 100);
        textidx_t *ti = new_index(trial % 2 ? 0.9f : 1.2f, trial % 2 ? 0.4f : 0.75f);
        for (uint32_t d = 0; d < c.ndocs; d++)
            add_doc(ti, &c, d);
        random_queries(ti, &c, 12);
        textidx_free(ti);
    }
}

static void test_deletes_and_updates_are_visible_to_the_next_query(void **state)
{
    (void)state;
    static corpus_t c;
    rng_state = 0xfeedull;
    memset(&c, 0, sizeof c);
    c.ndocs = 300;
    textidx_t *ti = new_index(1.2f, 0.75f);
    for (uint32_t d = 0; d < 300; d++)
        add_doc(ti, &c, d);
    /* delete a third; update a third (new id, old one deleted) */
    for (uint32_t d = 0; d < 300; d++) {
        uint32_t r = rnd(3);
        if (r == 0) {
            assert_int_equal(textidx_delete_doc(ti, d), 0);
            c.live[d] = 0;
        } else if (r == 1 && c.ndocs < MAXDOCS) {
            assert_int_equal(textidx_delete_doc(ti, d), 0);
            c.live[d] = 0;
            add_doc(ti, &c, c.ndocs++);
        }
    }
    uint64_t live = 0;
    for (uint32_t d = 0; d < c.ndocs; d++)
        live += (uint64_t)c.live[d];
    assert_int_equal(textidx_doc_count(ti), live);
    assert_true(invidx_dead_postings(&ti->tf[0].ix) > 0);
    random_queries(ti, &c, 10);
    textidx_compact(ti); /* the same answers once dead postings are gone */
    assert_int_equal(invidx_dead_postings(&ti->tf[0].ix), 0);
    random_queries(ti, &c, 10);
    textidx_free(ti);
}

static size_t hits_for(const textidx_t *ti, const char *text, const roaring_bitmap_t *allowed,
                       uint64_t *total)
{
    textq_t *q;
    textidx_result_t res;
    textidx_search_opts_t o = {allowed, 10, 0, NULL, 0};
    assert_int_equal(textq_match("body", text, &q), 0);
    assert_int_equal(textidx_search(ti, q, &o, &res, NULL), 0);
    size_t n = res.n;
    if (total)
        *total = res.total;
    textidx_result_free(&res);
    textq_free(q);
    return n;
}

static void test_deleted_doc_disappears_and_its_id_cannot_be_added_twice(void **state)
{
    (void)state;
    textidx_t *ti = new_index(1.2f, 0.75f);
    textidx_value_t a = {"body", "zebra crossing", 14, 0}, b = {"body", "zebra stripes", 13, 0};
    assert_int_equal(textidx_add_doc(ti, 1, &a, 1, NULL), 0);
    assert_int_equal(textidx_add_doc(ti, 2, &b, 1, NULL), 0);
    assert_int_equal(textidx_add_doc(ti, 2, &b, 1, NULL), CDN_ERR_EXISTS);
    assert_int_equal(hits_for(ti, "crossing", NULL, NULL), 1);
    assert_int_equal(textidx_delete_doc(ti, 1), 0);
    assert_int_equal(hits_for(ti, "crossing", NULL, NULL), 0);
    assert_int_equal(hits_for(ti, "zebra", NULL, NULL), 1);
    /* the update path: same text under a new id is found again */
    assert_int_equal(textidx_add_doc(ti, 3, &a, 1, NULL), 0);
    assert_int_equal(hits_for(ti, "crossing", NULL, NULL), 1);
    textidx_free(ti);
}

/* An add that runs out of memory half way through a document's terms (some posting lists took
 * it, others could not) is taken back whole by the delete textidx_add_doc runs: no term finds
 * it, the other documents' answers and counts stay, and the id can be added again. */
static void test_an_add_that_fails_half_way_is_taken_back(void **state)
{
    (void)state;
    textidx_t *ti = new_index(1.2f, 0.75f);
    textidx_value_t base = {"body", "zebra crossing near the river", 29, 0};
    for (uint32_t d = 0; d < 40; d++)
        assert_int_equal(textidx_add_doc(ti, d, &base, 1, NULL), 0);
    const char *text = "zebra lion tiger river ocean crossing mountain valley desert forest";
    textidx_value_t v = {"body", text, strlen(text), 0};
    int failures = 0, added = 0;
    for (long n = 0; n < 200 && !added; n++) {
        cdn_mem_fail_after(n);
        int rc = textidx_add_doc(ti, 100, &v, 1, NULL);
        cdn_mem_fail_after(-1);
        if (rc == CDN_OK) {
            added = 1;
            break;
        }
        failures++;
        assert_int_equal(rc, CDN_ERR_NOMEM);
        assert_int_equal(textidx_doc_count(ti), 40);
        assert_int_equal(hits_for(ti, "lion", NULL, NULL), 0);
        uint64_t total = 0;
        hits_for(ti, "zebra", NULL, &total);
        assert_int_equal(total, 40);
    }
    assert_true(added && failures > 3);
    assert_int_equal(textidx_doc_count(ti), 41);
    assert_int_equal(hits_for(ti, "lion", NULL, NULL), 1);
    assert_int_equal(textidx_delete_doc(ti, 100), 0);
    assert_int_equal(hits_for(ti, "lion", NULL, NULL), 0);
    textidx_compact(ti);
    assert_int_equal(hits_for(ti, "crossing", NULL, NULL), 10);
    textidx_free(ti);
}

static void test_totals_count_only_readable_docs(void **state)
{
    (void)state;
    textidx_t *ti = new_index(1.2f, 0.75f);
    textidx_value_t v = {"body", "secret plan", 11, 0};
    for (uint32_t d = 0; d < 50; d++)
        assert_int_equal(textidx_add_doc(ti, d, &v, 1, NULL), 0);
    roaring_bitmap_t *a = roaring_bitmap_create();
    roaring_bitmap_add(a, 7);
    roaring_bitmap_add(a, 9);
    roaring_bitmap_add(a, 1000); /* not a doc: must not count */
    uint64_t total;
    assert_int_equal(hits_for(ti, "plan", a, &total), 2);
    assert_int_equal(total, 2);
    roaring_bitmap_clear(a);
    assert_int_equal(hits_for(ti, "plan", a, &total), 0);
    assert_int_equal(total, 0);
    roaring_bitmap_free(a);
    textidx_free(ti);
}

static void test_k_zero_counts_every_readable_match(void **state)
{
    (void)state;
    textidx_t *ti = new_index(1.2f, 0.75f);
    textidx_value_t a = {"body", "red apple", 9, 0}, b = {"body", "green apple", 11, 0};
    for (uint32_t d = 0; d < 30; d++)
        assert_int_equal(textidx_add_doc(ti, d, d % 3 ? &a : &b, 1, NULL), 0);
    roaring_bitmap_t *al = roaring_bitmap_create();
    roaring_bitmap_add_range(al, 0, 10);
    textq_t *q;
    textidx_result_t res;
    textidx_search_opts_t o = {al, 0, 0, NULL, 0};
    assert_int_equal(textq_match("body", "apple green", &q), 0);
    assert_int_equal(textidx_search(ti, q, &o, &res, NULL), 0);
    assert_int_equal(res.n, 0);
    assert_int_equal(res.total, 10);
    assert_true(res.total_exact);
    textidx_result_free(&res);
    textq_free(q);
    roaring_bitmap_free(al);
    textidx_free(ti);
}

/* Every (tf, dl) added to an impact bound stays dominated by one of its entries, which stay
 * a frontier: sorted by dl with tf rising, none dominating another. */
static void test_impact_bound_dominates_every_posting(void **state)
{
    (void)state;
    rng_state = 0x9a3ull;
    for (int trial = 0; trial < 200; trial++) {
        invidx_impact_t f[INVIDX_IMPACTS] = {{0, 0}};
        uint32_t tf[300], dl[300];
        int n = 1 + (int)rnd(300);
        for (int i = 0; i < n; i++) {
            tf[i] = 1 + rnd(trial % 2 ? 4 : 40);
            dl[i] = tf[i] + rnd(200);
            invidx_impact_add(f, tf[i], dl[i]);
            for (int j = 0; j <= i; j++) {
                int covered = 0;
                for (int e = 0; e < INVIDX_IMPACTS && f[e].tf; e++)
                    covered |= f[e].tf >= tf[j] && f[e].dl <= dl[j];
                assert_true(covered);
            }
        }
        for (int e = 1; e < INVIDX_IMPACTS && f[e].tf; e++)
            assert_true(f[e].dl > f[e - 1].dl && f[e].tf > f[e - 1].tf);
    }
}

/* A large corpus (lists of many blocks, so pruning skips whole windows) and long queries: the
 * pruned top-k equals the exhaustive one to the bit, and a count asked to reach count_min is
 * exact or at least count_min. Words are Zipf-like (w with weight about 1 / (w + 1)) over nw
 * words, or uniform. */
static void pruned_equal_exhaustive(uint32_t ndocs, uint32_t nw, int zipf)
{
    textidx_t *ti = new_index(1.2f, 0.75f);
    char buf[64 * 8], qs[40 * 8];
    rng_state = 0x51ull ^ ndocs;
    for (uint32_t d = 0; d < ndocs; d++) {
        size_t o = 0;
        int len = 1 + (int)rnd(60);
        for (int i = 0; i < len; i++) {
            uint32_t w = zipf ? (uint32_t)(exp((double)rnd(10000) / 10000.0 * log((double)nw)) - 1)
                              : (uint32_t)rnd(nw);
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%sw%u", i ? " " : "", w);
        }
        textidx_value_t v = {"body", buf, o, 0};
        assert_int_equal(textidx_add_doc(ti, d, &v, 1, NULL), 0);
    }
    for (uint32_t d = 0; d < ndocs; d += 37)
        assert_int_equal(textidx_delete_doc(ti, d), 0);
    textidx_compact(ti); /* no dead postings: a search without a filter runs unfiltered */
    static const uint32_t per_mille[] = {1000, 300, 20};
    uint64_t read_pruned = 0, read_all = 0, pushed_pruned = 0, pushed_all = 0;
    for (int r = 0; r < 240; r++) {
        int nq = r % 3 == 0 ? 17 + (int)rnd(20) : 1 + (int)rnd(8);
        size_t o = 0, k = 1 + rnd(30);
        for (int j = 0; j < nq; j++)
            o += (size_t)snprintf(qs + o, sizeof qs - o, "%sw%u", j ? " " : "",
                                  r / 2 % 2 ? rnd(20) : rnd(nw));
        /* odd rounds have no filter: the block-at-a-time path for up to 8 terms */
        roaring_bitmap_t *a = r % 2 ? NULL : random_allowed(ndocs, per_mille[r / 2 % 3]);
        textq_t *tq;
        textidx_result_t rp, rx;
        uint64_t count_min = r % 4 ? 100 + rnd(3000) : 0;
        textidx_search_opts_t op = {a, k, 0, a, count_min}, ox = {a, k, 1, a, 0};
        assert_int_equal(textq_match("body", qs, &tq), 0);
        assert_int_equal(textidx_search(ti, tq, &op, &rp, NULL), 0);
        assert_int_equal(textidx_search(ti, tq, &ox, &rx, NULL), 0);
        assert_true(rx.total_exact);
        assert_int_equal(rp.n, rx.n);
        for (size_t i = 0; i < rp.n; i++) {
            assert_int_equal(rp.hits[i].id, rx.hits[i].id);
            assert_true(rp.hits[i].score == rx.hits[i].score);
        }
        if (!a && nq == 2) { /* docs offered to the heap by two-word queries */
            pushed_pruned += rp.stats.scored;
            pushed_all += rx.stats.scored;
        }
        read_pruned += rp.stats.postings;
        read_all += rx.stats.postings;
        if (rp.total_exact)
            assert_int_equal(rp.total, rx.total);
        else
            assert_true(rp.total >= count_min && rp.total <= rx.total);
        textidx_result_free(&rp);
        textidx_result_free(&rx);
        textq_free(tq);
        if (a)
            roaring_bitmap_free(a);
    }
    /* A window's candidates that can no longer beat the k-th score are not offered to the heap:
     * a tenth of the matches at most (offering every survivor of the bounds was 15 - 75%). */
    assert_true(pushed_all > 0 && pushed_pruned * 10 < pushed_all);
    if (zipf) /* the windows did skip postings (uniform words' bounds are all alike) */
        assert_true(read_pruned * 2 < read_all);
    textidx_free(ti);
}

/* Zipf words over 20,000 docs, whose common words' windows span few doc ids, and uniform words
 * over 40,000, whose lists are short and whose windows span thousands of ids. */
static void test_pruned_windows_equal_exhaustive_on_long_lists(void **state)
{
    (void)state;
    pruned_equal_exhaustive(20000, 400, 1);
    pruned_equal_exhaustive(40000, 1500, 0);
}

typedef struct shared {
    const textidx_t *ti;
    uint32_t expect[8][5];
    int bad;
} shared_t;

static const char *const conc_q[8] = {
    "running horses", "studies of stars", "the runner ran",       "horse studied",
    "stars running",  "ran studies",      "runners horses stars", "study"};

static void conc_run(const textidx_t *ti, int i, uint32_t *out)
{
    textq_t *q;
    textidx_result_t r;
    textidx_search_opts_t o = {NULL, 5, 0, NULL, 0};
    memset(out, 0xff, 5 * sizeof *out);
    if (textq_match("body", conc_q[i], &q) || textidx_search(ti, q, &o, &r, NULL))
        return;
    for (size_t h = 0; h < r.n; h++)
        out[h] = r.hits[h].id;
    textidx_result_free(&r);
    textq_free(q);
}

static void *conc_worker(void *arg)
{
    shared_t *s = arg;
    for (int it = 0; it < 3000; it++) {
        uint32_t got[5];
        conc_run(s->ti, it % 8, got);
        if (memcmp(got, s->expect[it % 8], sizeof got))
            __atomic_store_n(&s->bad, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* Searches share the analyzer's stemmer (libstemmer keeps scratch state per stemmer); the
 * analyzer's mutex must keep concurrent query analysis from mixing words. */
static void test_concurrent_searches_return_the_same_hits(void **state)
{
    (void)state;
    textidx_t *ti;
    assert_int_equal(textidx_create(NULL, &ti, NULL), 0);
    assert_int_equal(textidx_add_field(ti, "body", TEXTIDX_TEXT, "english", NULL), 0);
    static const char *const w[] = {"running", "horses",  "studies", "stars", "runner", "ran",
                                    "horse",   "studied", "study",   "star",  "runs",   "stable"};
    rng_state = 99;
    for (uint32_t d = 0; d < 300; d++) {
        char buf[256];
        size_t o = 0;
        for (int i = 0; i < 8; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s ", w[rnd(12)]);
        textidx_value_t v = {"body", buf, o, 0};
        assert_int_equal(textidx_add_doc(ti, d, &v, 1, NULL), 0);
    }
    shared_t s = {ti, {{0}}, 0};
    for (int i = 0; i < 8; i++)
        conc_run(ti, i, s.expect[i]);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, conc_worker, &s), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(s.bad, 0);
    textidx_free(ti);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topk_equals_exhaustive_reference_on_random_corpora),
        cmocka_unit_test(test_impact_bound_dominates_every_posting),
        cmocka_unit_test(test_pruned_windows_equal_exhaustive_on_long_lists),
        cmocka_unit_test(test_deletes_and_updates_are_visible_to_the_next_query),
        cmocka_unit_test(test_deleted_doc_disappears_and_its_id_cannot_be_added_twice),
        cmocka_unit_test(test_an_add_that_fails_half_way_is_taken_back),
        cmocka_unit_test(test_totals_count_only_readable_docs),
        cmocka_unit_test(test_k_zero_counts_every_readable_match),
        cmocka_unit_test(test_concurrent_searches_return_the_same_hits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
