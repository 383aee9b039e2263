/* search_text.c: BM25 search through the text index with the subject's allowed set, and the
 * filters of a search. Relies on text/textidx, text/textq and query/chunkrec. */
#include "base/mem.h"
#include "query/chunkrec.h"
#include "query/search_int.h"
#include "text/textq.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* Rewrites the values of every {"ids": {"values": [...]}} in j from chunk ids (strings, or
 * numbers taken as their decimal text) to the rows that hold them now; ids that name no
 * chunk are dropped. The text layer only knows rows, and a caller must never name rows. */
static int map_ids(store_txn_t *t, const coll_t *c, json_t *j)
{
    const char *k;
    json_t *v, *vals;
    size_t i;
    int rc = CDN_OK;
    if (json_is_array(j)) {
        json_array_foreach(j, i, v) if (rc == CDN_OK) rc = map_ids(t, c, v);
        return rc;
    }
    if (!json_is_object(j))
        return CDN_OK;
    vals = json_object_get(json_object_get(j, "ids"), "values");
    if (json_is_array(vals)) {
        json_t *rows = json_array();
        if (!rows)
            return CDN_ERR_NOMEM;
        json_array_foreach(vals, i, v)
        {
            unsigned char key[COLL_KEY_MAX];
            char num[32];
            const char *id = json_string_value(v);
            const void *rec;
            size_t klen, rlen;
            uint32_t row;
            if (!id && json_is_integer(v)) {
                snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
                id = num;
            }
            klen = id ? coll_chunk_key(c->cfg.id, id, key, sizeof key) : 0;
            if (klen && store_get(t, STORE_CHUNKS, key, klen, &rec, &rlen) == CDN_OK &&
                chunkrec_row(rec, rlen, &row) == CDN_OK)
                json_array_append_new(rows, json_integer(row));
        }
        json_object_set_new(json_object_get(j, "ids"), "values", rows);
    }
    json_object_foreach(j, k, v) if (rc == CDN_OK) rc = map_ids(t, c, v);
    return rc;
}

static int parse_es(engine_t *e, const coll_t *c, const char *what, const char *text, textq_t **out,
                    cdn_err_t *err)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    const char *unknown;
    store_txn_t *t;
    int rc;
    if (!j)
        return cdn_err_set(err, CDN_ERR_INVALID, "%s is not valid JSON (column %d: %s)", what,
                           je.column, je.text);
    if ((rc = store_txn_begin(e->store, 0, &t, err)) == CDN_OK) {
        rc = map_ids(t, c, j);
        store_txn_abort(t);
    }
    if (rc == CDN_OK)
        rc = textq_parse_es(j, out, err);
    json_decref(j);
    if (rc == CDN_OK && (unknown = textidx_unknown_field(c->text, *out)) != NULL) {
        rc = cdn_err_set(err, CDN_ERR_INVALID,
                         "%s: field \"%.64s\" is not a text or metadata field of collection "
                         "\"%s\" (it would match nothing); declare it at creation "
                         "(meta_fields; cordon load --create --keyword %.64s, or --number, "
                         "--date, --bool)",
                         what, unknown, c->cfg.name, unknown);
        textq_free(*out);
        *out = NULL;
    }
    return rc;
}

static int build_query(engine_t *e, const coll_t *c, const search_knn_t *q, textq_t **out,
                       cdn_err_t *err)
{
    if (q->text)
        return textq_match("_all", q->text, out) ? cdn_err_set(err, CDN_ERR_NOMEM, "out of memory")
                                                 : CDN_OK;
    return parse_es(e, c, "query", q->query_json, out, err);
}

/* Runs tq (which it frees) over the allowed rows for k hits into res, BM25 statistics over
 * stats_over (NULL = every live row). */
static int run_tree(coll_t *c, textq_t *tq, const roaring_bitmap_t *allowed,
                    const roaring_bitmap_t *stats_over, size_t k, int exhaustive,
                    uint64_t count_min, textidx_result_t *res, cdn_err_t *err)
{
    textidx_search_opts_t o = {.allowed = allowed,
                               .k = k,
                               .exhaustive = exhaustive,
                               .stats_over = stats_over,
                               .count_min = count_min};
    int rc;
    memset(res, 0, sizeof *res);
    rc = textidx_search(c->text, tq, &o, res, err);
    textq_free(tq);
    return rc;
}

int search_filter_locked(engine_t *e, coll_t *c, const char *filter_json, roaring_bitmap_t *allowed,
                         cdn_err_t *err)
{
    textq_t *tq = NULL;
    int rc = parse_es(e, c, "filter", filter_json, &tq, err);
    /* Filter context: a set, not a ranking (the filter of a bitmap of every readable row
     * once ranked them all, a quarter of a delegated search's time). */
    if (rc == CDN_OK && !roaring_bitmap_is_empty(allowed))
        rc = textidx_filter(c->text, tq, allowed, err);
    textq_free(tq);
    return rc;
}

int search_bm25_locked(engine_t *e, coll_t *c, const search_knn_t *q,
                       const roaring_bitmap_t *allowed, const roaring_bitmap_t *readable,
                       size_t window, topk_hit_t **hits, size_t *n, search_result_t *out,
                       cdn_err_t *err)
{
    textq_t *tq = NULL;
    textidx_result_t res;
    int rc = build_query(e, c, q, &tq, err);
    /* a total capped at total_max needs only that many matches counted (then it is shown as
     * "at least"); an exact one is counted apart (search_count_locked) */
    uint64_t count_min = q->want_total ? q->total_max : 0;
    if (rc || (rc = run_tree(c, tq, allowed, readable, window, 0, count_min, &res, err)) != 0)
        return rc;
    *hits = cdn_malloc((res.n ? res.n : 1) * sizeof **hits);
    for (size_t i = 0; *hits && i < res.n; i++)
        (*hits)[i] = (topk_hit_t){res.hits[i].id, res.hits[i].score};
    *n = res.n;
    out->total = res.total;
    out->total_exact = res.total_exact;
    out->complete = res.complete;
    out->work += res.stats.scored;
    snprintf(out->plan, sizeof out->plan, "%s", res.plan ? res.plan : "bm25");
    textidx_result_free(&res);
    return *hits ? CDN_OK : cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
}

int search_count_locked(engine_t *e, coll_t *c, const search_knn_t *q,
                        const roaring_bitmap_t *allowed, const topk_hit_t *hits, size_t nhits,
                        uint64_t *total, cdn_err_t *err)
{
    uint64_t n = roaring_bitmap_get_cardinality(allowed);
    roaring_bitmap_t *all;
    textidx_result_t res;
    textq_t *tq = NULL;
    int rc;
    if (n == 0) {
        *total = 0;
        return CDN_OK;
    }
    if ((rc = build_query(e, c, q, &tq, err)) != 0)
        return rc;
    /* Statistics do not change which documents match: the collection-wide ones cost least. */
    if ((rc = run_tree(c, tq, allowed, NULL, nhits ? (size_t)n : 1, 1, 0, &res, err)) != 0)
        return rc;
    if (!nhits) {
        *total = res.total;
        textidx_result_free(&res);
        return CDN_OK;
    }
    if (!(all = roaring_bitmap_create())) {
        textidx_result_free(&res);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < res.n; i++)
        roaring_bitmap_add(all, res.hits[i].id);
    for (size_t i = 0; i < nhits; i++)
        roaring_bitmap_add(all, hits[i].id);
    *total = roaring_bitmap_get_cardinality(all);
    roaring_bitmap_free(all);
    textidx_result_free(&res);
    return CDN_OK;
}

int search_count_unmatched_locked(engine_t *e, coll_t *c, const search_knn_t *q,
                                  const topk_hit_t *hits, size_t nhits, uint64_t *n, cdn_err_t *err)
{
    roaring_bitmap_t *b = roaring_bitmap_create();
    textq_t *tq = NULL;
    int rc;
    *n = 0;
    if (!b)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < nhits; i++)
        roaring_bitmap_add(b, hits[i].id);
    uint64_t all = roaring_bitmap_get_cardinality(b);
    if ((rc = build_query(e, c, q, &tq, err)) == CDN_OK)
        rc = textidx_filter(c->text, tq, b, err);
    textq_free(tq);
    if (rc == CDN_OK)
        *n = all - roaring_bitmap_get_cardinality(b);
    roaring_bitmap_free(b);
    return rc;
}
