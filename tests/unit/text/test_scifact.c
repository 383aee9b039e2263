/* test_scifact.c: BM25 quality on the real BEIR SciFact test split: english analyzer on title +
 * text, k1 0.9, b 0.4, nDCG@10 from the qrels computed here. Relies on cmocka, jansson and
 * $CORDON_SHARED_DATA/scifact (skipped with a SKIP line when absent). */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h> /* own block: it needs setjmp.h, stdarg.h, stddef.h first */

#include "text/textidx.h"

#define MAXD 6000
#define MAXQ 400

typedef struct data {
    char *doc_id[MAXD];
    size_t nd;
    char *q_id[MAXQ], *q_text[MAXQ];
    size_t nq;
    /* qrels as (query index, doc index) pairs with relevance */
    uint32_t qr_q[1000], qr_d[1000];
    int qr_rel[1000];
    size_t nqr;
} data_t;

static char dir[1024];

static long find(char **ids, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ids[i], id))
            return (long)i;
    return -1;
}

static void load_corpus(data_t *d, textidx_t *ti)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/corpus.jsonl", dir);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0 && d->nd < MAXD) {
        json_t *o = json_loads(line, 0, NULL);
        assert_non_null(o);
        const char *t = json_string_value(json_object_get(o, "title"));
        const char *x = json_string_value(json_object_get(o, "text"));
        textidx_value_t v[2] = {{"body", t ? t : "", t ? strlen(t) : 0, 0},
                                {"body", x ? x : "", x ? strlen(x) : 0, 0}};
        assert_int_equal(textidx_add_doc(ti, (uint32_t)d->nd, v, 2, NULL), 0);
        d->doc_id[d->nd++] = strdup(json_string_value(json_object_get(o, "_id")));
        json_decref(o);
    }
    free(line);
    fclose(f);
}

static void load_queries(data_t *d)
{
    char p[1200], line[4096];
    snprintf(p, sizeof p, "%s/queries.jsonl", dir);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    while (fgets(line, sizeof line, f) && d->nq < MAXQ) {
        json_t *o = json_loads(line, 0, NULL);
        assert_non_null(o);
        d->q_id[d->nq] = strdup(json_string_value(json_object_get(o, "_id")));
        d->q_text[d->nq++] = strdup(json_string_value(json_object_get(o, "text")));
        json_decref(o);
    }
    fclose(f);
    snprintf(p, sizeof p, "%s/qrels/test.tsv", dir);
    f = fopen(p, "r");
    assert_non_null(f);
    char qs[256], ds[256];
    int rel;
    while (fgets(line, sizeof line, f) && d->nqr < 1000) {
        if (sscanf(line, "%255s %255s %d", qs, ds, &rel) != 3 || rel <= 0)
            continue;
        long qi = find(d->q_id, d->nq, qs), di = find(d->doc_id, d->nd, ds);
        if (qi < 0 || di < 0)
            continue;
        d->qr_q[d->nqr] = (uint32_t)qi;
        d->qr_d[d->nqr] = (uint32_t)di;
        d->qr_rel[d->nqr++] = rel;
    }
    fclose(f);
}

/* nDCG@10 of query q's hits, linear gain (as pytrec_eval); -1 when q has no judgements. */
static double ndcg10(const data_t *d, uint32_t q, const textidx_result_t *r)
{
    int rels[64];
    size_t nr = 0;
    for (size_t i = 0; i < d->nqr && nr < 64; i++)
        if (d->qr_q[i] == q)
            rels[nr++] = d->qr_rel[i];
    if (!nr)
        return -1;
    for (size_t i = 0; i < nr; i++) /* descending, tiny n */
        for (size_t j = i + 1; j < nr; j++)
            if (rels[j] > rels[i]) {
                int t = rels[i];
                rels[i] = rels[j];
                rels[j] = t;
            }
    double dcg = 0, idcg = 0;
    for (size_t i = 0; i < nr && i < 10; i++)
        idcg += rels[i] / log2((double)i + 2);
    for (size_t h = 0; h < r->n && h < 10; h++)
        for (size_t i = 0; i < d->nqr; i++)
            if (d->qr_q[i] == q && d->qr_d[i] == r->hits[h].id)
                dcg += d->qr_rel[i] / log2((double)h + 2);
    return dcg / idcg;
}

static void test_scifact_bm25_ndcg_at_10_reaches_published_quality(void **state)
{
    (void)state;
    const char *base = getenv("CORDON_SHARED_DATA");
    snprintf(dir, sizeof dir, "%s/scifact", base ? base : "../shared/data");
    char probe[1200];
    snprintf(probe, sizeof probe, "%s/corpus.jsonl", dir);
    FILE *f = fopen(probe, "r");
    if (!f) {
        printf("SKIP: %s not found (set CORDON_SHARED_DATA)\n", probe);
        skip();
    }
    fclose(f);
    static data_t d;
    textidx_t *ti;
    textidx_config_t cfg = {0.9f, 0.4f};
    assert_int_equal(textidx_create(&cfg, &ti, NULL), 0);
    assert_int_equal(textidx_add_field(ti, "body", TEXTIDX_TEXT, "english", NULL), 0);
    load_corpus(&d, ti);
    load_queries(&d);
    assert_true(d.nd > 5000 && d.nq >= 300 && d.nqr > 300);
    double sum = 0;
    size_t n = 0;
    for (uint32_t q = 0; q < d.nq; q++) {
        textq_t *tq;
        textidx_result_t r;
        textidx_search_opts_t o = {NULL, 10, 0, NULL, 0};
        assert_int_equal(textq_match("body", d.q_text[q], &tq), 0);
        assert_int_equal(textidx_search(ti, tq, &o, &r, NULL), 0);
        double v = ndcg10(&d, q, &r);
        if (v >= 0) {
            sum += v;
            n++;
        }
        textidx_result_free(&r);
        textq_free(tq);
    }
    printf("scifact: nDCG@10 %.4f over %zu queries\n", sum / (double)n, n);
    assert_true(sum / (double)n >= 0.67);
    for (size_t i = 0; i < d.nd; i++)
        free(d.doc_id[i]);
    for (size_t i = 0; i < d.nq; i++) {
        free(d.q_id[i]);
        free(d.q_text[i]);
    }
    textidx_free(ti);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scifact_bm25_ndcg_at_10_reaches_published_quality),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
