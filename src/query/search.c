/* search.c: permission-filtered search and reads as a subject: the allowed set, the plan for
 * the query's kind, the re-check of every hit. Relies on acl/, the vector plan
 * (search_vector.c), text and hybrid search (search_text.c, search_hybrid.c). The collection's
 * read lock is held for the whole search, so it sees one revision and never half a write. */
#include "query/search.h"
#include "base/mem.h"
#include "base/testhook.h"
#include "query/chunkrec.h"
#include "query/search_int.h"

#include <math.h>
#include <string.h>

static int check_query(const coll_t *c, const search_knn_t *q, cdn_err_t *err)
{
    int rc;
    if (q->text && q->query_json)
        return cdn_err_set(err, CDN_ERR_INVALID, "give a text query or a query object, not both");
    if (!q->vector && !q->text && !q->query_json)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "the query is empty: give a vector, a text "
                           "query, or both");
    if (q->k > SEARCH_K_MAX)
        return cdn_err_set(err, CDN_ERR_INVALID, "k is %zu; the limit is %d", q->k, SEARCH_K_MAX);
    if (!q->vector)
        return CDN_OK;
    if (!c->cfg.dim)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "collection \"%s\" has no vectors; use a text query", c->cfg.name);
    if ((rc = vec_check(q->vector, c->cfg.dim, c->cfg.metric, "knn.query_vector", err)) != 0)
        return rc;
    if ((unsigned)q->strategy > SEARCH_POSTFILTER)
        return cdn_err_set(err, CDN_ERR_INVALID, "unknown strategy %d", (int)q->strategy);
    return CDN_OK;
}

/* Re-checks every hit against the view and turns rows into ids; h[i].dist holds the score
 * the caller sees (higher is better). A score that is not a finite number cannot be ranked:
 * vec_check keeps every stored and query vector in bounds, so none should reach here, but if
 * one does its hit is dropped and the result no longer claims to be complete. */
static int search_finish(const coll_t *c, const uint32_t *view, size_t nview, const topk_hit_t *h,
                         size_t n, search_result_t *out)
{
    out->hits = cdn_calloc(n ? n : 1, sizeof *out->hits);
    if (!out->hits)
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const char *id = coll_row_id(c, h[i].id);
        if (!id || !acl_index_check(c->acl, h[i].id, view, nview)) {
            out->rejected++; /* an index path let through what the view does not hold */
            continue;
        }
        if (!isfinite(h[i].dist)) {
            out->complete = 0;
            continue;
        }
        search_hit_t *o = &out->hits[out->n_hits];
        if (!(o->id = cdn_strdup(id)))
            return CDN_ERR_NOMEM;
        o->score = h[i].dist;
        o->row = h[i].id;
        out->n_hits++;
    }
    return CDN_OK;
}

/* Reads every hit's stored record (and vector) in one read transaction, under the collection's
 * read lock. A write commits to the store before it reaches memory, so the store may be ahead
 * of what the search saw: then out->ahead is set and nothing is read, and the caller retries
 * once the writer has applied it. */
/* Ranking order: score descending, equal scores by id (bytewise ascending). */
static int hit_order(const void *a, const void *b)
{
    const search_hit_t *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return strcmp(x->id, y->id);
}

/* 1 when hit h is in the page q asks bodies for; *seen counts hits past the key so far. */
static int in_page(const search_knn_t *q, const search_hit_t *h, size_t *seen)
{
    if (q->after_id && (h->score > q->after_score ||
                        (h->score == q->after_score && strcmp(h->id, q->after_id) <= 0)))
        return 0;
    size_t at = (*seen)++;
    return at >= q->page_from && (!q->page_k || at - q->page_from < q->page_k);
}

static int read_bodies(engine_t *e, coll_t *c, const search_knn_t *q, search_result_t *out,
                       cdn_err_t *err)
{
    store_txn_t *t = NULL;
    uint64_t stored = 0;
    size_t seen = 0;
    int rc;
    if (!out->n_hits)
        return CDN_OK;
    /* A window wider than the page (paging, ties at its edge) reads only the page's records:
     * decoding records was half a BM25 search's cost when ties widened the window. */
    qsort(out->hits, out->n_hits, sizeof *out->hits, hit_order);
    if ((rc = store_txn_begin(e->store, 0, &t, err)) != 0)
        return rc;
    if ((rc = store_revision_get(t, &stored)) == CDN_OK && stored > out->revision)
        out->ahead = 1;
    for (size_t i = 0; rc == CDN_OK && !out->ahead && i < out->n_hits; i++) {
        search_hit_t *h = &out->hits[i];
        if (!in_page(q, h, &seen))
            continue;
        unsigned char key[COLL_KEY_MAX];
        size_t klen = coll_chunk_key(c->cfg.id, h->id, key, sizeof key), vlen;
        const void *v;
        uint32_t row = 0;
        if (!klen || store_get(t, STORE_CHUNKS, key, klen, &v, &vlen) != CDN_OK ||
            chunkrec_decode(v, vlen, &row, &h->body) != CDN_OK || row != h->row) {
            rc =
                cdn_err_set(err, CDN_ERR_INTERNAL, "chunk \"%s\" of a result has no record", h->id);
            break;
        }
        if (c->vf && !q->bodies_without_vectors) {
            if (!(h->vec = cdn_malloc(c->cfg.dim * sizeof(float))))
                rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
            else
                memcpy(h->vec, vecfile_base(c->vf) + (size_t)row * vecfile_stride(c->vf),
                       c->cfg.dim * sizeof(float));
        }
    }
    store_txn_abort(t);
    return rc;
}

static int knn_locked(engine_t *e, coll_t *c, const engine_subject_t *who, const search_knn_t *q,
                      const float *query, search_result_t *out, cdn_err_t *err)
{
    size_t k = q->k ? q->k : 10, nhits = 0, nview = 0;
    /* readable: the subject's rows, shared with the ACL index's memo (never changed here);
     * allowed: the candidates, readable itself or, under a filter, a narrowed copy. */
    acl_allowed_t *shared = NULL;
    const roaring_bitmap_t *readable, *allowed;
    roaring_bitmap_t *narrowed = NULL;
    uint32_t *view = NULL;
    topk_hit_t *hits = NULL;
    int text = q->text || q->query_json, rc;
    /* The engine-wide write counter, for consistency tokens (min_revision): it counts writes a
     * subject cannot see too, the one part of a response hidden chunks change (query.md). */
    out->revision = atomic_load(&e->revision);
    out->dim = c->cfg.dim;
    if (atomic_load(&c->dropped)) /* by a drop that committed since the lookup */
        return cdn_err_set(err, CDN_ERR_NOT_FOUND, "no such collection \"%s\"", c->cfg.name);
    if (c->broken)
        return cdn_err_set(err, CDN_ERR_INTERNAL,
                           "collection \"%s\" missed a write in memory; "
                           "reopen the data directory",
                           c->cfg.name);
    if ((rc = engine_subject_ids(e, who, &view, &nview, err)) != 0)
        return rc;
    if ((rc = acl_index_allowed_shared(c->acl, view, nview, &shared)) != 0) {
        cdn_free(view);
        return cdn_err_set(err, rc, "out of memory");
    }
    allowed = readable = acl_allowed_set(shared);
    out->readable = roaring_bitmap_get_cardinality(readable);
    /* BM25 statistics cover the readable set whatever a filter keeps of it (as a filter does
     * not change statistics in Elasticsearch): the filter narrows a copy. */
    if (q->filter_json && !(narrowed = roaring_bitmap_copy(readable)))
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    if (rc == CDN_OK && narrowed) {
        rc = search_filter_locked(e, c, q->filter_json, narrowed, err);
        allowed = narrowed;
    }
    if (rc)
        goto done;
    out->candidates = roaring_bitmap_get_cardinality(allowed);
    if (text) {
        rc = search_hybrid_locked(e, c, q, query, allowed, c->cfg.bm25_global ? NULL : readable, k,
                                  out, &hits, &nhits, err);
    } else if (!(hits = cdn_malloc(k * sizeof *hits))) {
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    } else {
        rc = search_vector_locked(e, c, q, query, allowed, k, hits, &nhits, out);
        for (size_t i = 0; i < nhits; i++)
            hits[i].dist = vec_score_from_dist(c->cfg.metric, hits[i].dist);
        if (rc)
            cdn_err_set(err, rc, "search failed: %s", cdn_strerror(rc));
    }
    if (rc == CDN_OK && !q->want_total) {
        out->total = 0; /* the text side counts its matches as it ranks: shown only if asked */
    } else if (rc == CDN_OK) {
        size_t counted = q->total_hits && q->total_hits < nhits ? q->total_hits : nhits;
        if (!text)
            out->total = counted;
        else if (q->total_max && out->total >= q->total_max) {
            /* the ranking already met that many matches: no need to count the rest */
            out->total = q->total_max;
            out->total_capped = 1;
        } else if (q->vector && out->total_exact) {
            /* the text side counted its matches exactly: the union with the vector side's
             * hits needs only which of those few the text query does not match (counting
             * the union anew scored every match of the query) */
            uint64_t extra = 0;
            rc = search_count_unmatched_locked(e, c, q, hits, counted, &extra, err);
            out->total += extra;
        } else if (q->vector || !out->total_exact)
            rc = search_count_locked(e, c, q, allowed, hits, q->vector ? counted : 0, &out->total,
                                     err);
    }
    if (rc == CDN_OK && (rc = search_finish(c, view, nview, hits, nhits, out)) != 0)
        cdn_err_set(err, rc, "search failed: %s", cdn_strerror(rc));
    if (rc == CDN_OK && q->with_bodies)
        rc = read_bodies(e, c, q, out, err);
done:
    if (narrowed) /* this CRoaring does not take NULL */
        roaring_bitmap_free(narrowed);
    acl_allowed_release(shared);
    cdn_free(view);
    cdn_free(hits);
    return rc;
}

int search_knn(engine_t *e, const char *name, const engine_asker_t *who, const search_knn_t *q,
               search_result_t *out, cdn_err_t *err)
{
    engine_read_t r = {0};
    float *query = NULL;
    coll_t *c;
    int rc, current, again, ahead = 0;
    memset(out, 0, sizeof *out);
    if ((rc = engine_coll_get(e, name, &c, err)) != 0)
        return rc;
    if ((rc = check_query(c, q, err)) != 0)
        goto done;
    if (q->vector && !(query = cdn_malloc(c->cfg.dim * sizeof *query))) {
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (query) {
        memcpy(query, q->vector, c->cfg.dim * sizeof *query);
        if (c->cfg.metric == VEC_METRIC_COSINE)
            vec_normalize(query, c->cfg.dim);
    }
    do { /* one permission state per answer (engine.h, engine_read_begin) */
        engine_subject_t s;
        current = 1;
        ahead = 0;
        engine_read_begin(e, &r);
        if ((rc = engine_subject_resolve(e, c, who, "search", &s, err)) == CDN_OK) {
            cdn_hook_run(CDN_HOOK_SUBJECT_RESOLVED);
            if ((rc = engine_coll_rdlock(e, &c, err)) == CDN_OK) {
                rc = knn_locked(e, c, &s, q, query, out, err);
                cdn_hook_run(CDN_HOOK_SEARCH_READ);
                current = engine_subject_current(e, &s, &out->revision) && !out->ahead;
                pthread_rwlock_unlock(&c->lock);
            }
            engine_subject_release(&s);
        }
        if (rc || !current) {
            ahead = out->ahead;
            search_result_free(out);
            memset(out, 0, sizeof *out);
        }
        again = engine_read_end(e, &r, current);
        if (again && ahead) { /* a writer is between its commit and its apply: let it finish */
            pthread_mutex_lock(&e->write_lock);
            pthread_mutex_unlock(&e->write_lock);
        }
    } while (again);
done:
    cdn_free(query);
    coll_unref(c);
    return rc;
}

void search_result_free(search_result_t *r)
{
    for (size_t i = 0; i < r->n_hits; i++) {
        cdn_free(r->hits[i].id);
        json_decref(r->hits[i].body);
        cdn_free(r->hits[i].vec);
    }
    cdn_free(r->hits);
    r->hits = NULL;
    r->n_hits = 0;
}

/* Reads the chunk's record and checks it under the collection's read lock. A write commits to
 * the store before it reaches memory, so a read transaction may be ahead of memory: then
 * *ahead is set and nothing is read; the caller waits for the writer and tries again. */
static int get_locked(engine_t *e, coll_t *c, const unsigned char *key, size_t klen,
                      const char *filter, const uint32_t *view, size_t nview, json_t **obj,
                      float **vec, uint64_t *rev, int *readable, int *ahead, cdn_err_t *err)
{
    store_txn_t *t = NULL;
    uint64_t stored = 0;
    const void *v;
    size_t vlen;
    uint32_t row = 0;
    int rc = klen ? store_txn_begin(e->store, 0, &t, err) : CDN_OK;
    *rev = atomic_load(&e->revision);
    if (rc == CDN_OK && t && (rc = store_revision_get(t, &stored)) == CDN_OK && stored > *rev)
        *ahead = 1;
    else if (rc == CDN_OK && t && store_get(t, STORE_CHUNKS, key, klen, &v, &vlen) == CDN_OK &&
             chunkrec_decode(v, vlen, &row, obj) == CDN_OK)
        *readable = !c->broken && acl_index_check(c->acl, row, view, nview);
    if (*readable && filter) { /* the filter as a search applies it, to this one row */
        roaring_bitmap_t *one = roaring_bitmap_create();
        if (!one)
            rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
        else {
            roaring_bitmap_add(one, row);
            rc = search_filter_locked(e, c, filter, one, err);
            *readable = rc == CDN_OK && roaring_bitmap_contains(one, row);
            roaring_bitmap_free(one);
        }
    }
    if (*readable && c->vf && (*vec = cdn_malloc(c->cfg.dim * sizeof(float))))
        memcpy(*vec, vecfile_base(c->vf) + (size_t)row * vecfile_stride(c->vf),
               c->cfg.dim * sizeof(float));
    else if (*readable && c->vf)
        rc = CDN_ERR_NOMEM;
    store_txn_abort(t);
    return rc;
}

/* One attempt of search_get at one permission state: the view's ids, then the record. With
 * detect_ahead, a store ahead of memory sets *ahead and reads nothing. */
static int get_once(engine_t *e, coll_t **cp, const engine_subject_t *who, const unsigned char *key,
                    size_t klen, const char *filter, json_t **obj, float **vec, uint64_t *rev,
                    int *readable, int detect_ahead, int *ahead, int *current, cdn_err_t *err)
{
    uint32_t *view = NULL;
    size_t nview = 0;
    int rc, ignored = 0;
    *ahead = *readable = 0;
    *current = 1;
    if ((rc = engine_coll_rdlock(e, cp, err)) != 0)
        return rc;
    coll_t *c = *cp;
    rc = engine_subject_ids(e, who, &view, &nview, err);
    if (rc == CDN_OK)
        rc = get_locked(e, c, key, klen, filter, view, nview, obj, vec, rev, readable,
                        detect_ahead ? ahead : &ignored, err);
    *current = engine_subject_current(e, who, rev);
    pthread_rwlock_unlock(&c->lock);
    cdn_free(view);
    if (rc || *ahead || !*current) {
        json_decref(*obj);
        *obj = NULL;
        cdn_free(*vec);
        *vec = NULL;
    }
    return rc;
}

int search_get(engine_t *e, const char *name, const engine_asker_t *who, const char *id,
               const char *filter_json, json_t **obj, float **vec, uint32_t *dim, uint64_t *rev,
               cdn_err_t *err)
{
    unsigned char key[COLL_KEY_MAX];
    engine_read_t r = {0};
    size_t klen;
    coll_t *c;
    int rc, readable = 0, again, waits = 0;
    *obj = NULL;
    *vec = NULL;
    if ((rc = engine_coll_get(e, name, &c, err)) != 0)
        return rc;
    *dim = c->cfg.dim;
    klen = coll_chunk_key(c->cfg.id, id, key, sizeof key);
    do { /* one permission state per answer (engine.h, engine_read_begin) */
        engine_subject_t s;
        int current = 1, ahead = 0;
        engine_read_begin(e, &r);
        if ((rc = engine_subject_resolve(e, c, who, "read", &s, err)) == CDN_OK) {
            cdn_hook_run(CDN_HOOK_SUBJECT_RESOLVED);
            rc = get_once(e, &c, &s, key, klen, filter_json, obj, vec, rev, &readable, waits < 100,
                          &ahead, &current, err);
            engine_subject_release(&s);
        }
        again = engine_read_end(e, &r, rc != CDN_OK || (current && !ahead));
        if (again && ahead) { /* a writer is between its commit and its apply: let it finish
                                 (outside the gate, which a model writer may be waiting for) */
            waits++;
            pthread_mutex_lock(&e->write_lock);
            pthread_mutex_unlock(&e->write_lock);
        }
    } while (again);
    if (rc == CDN_OK && !readable) /* hidden equals missing: the same code and message */
        rc = cdn_err_set(err, CDN_ERR_NOT_FOUND, "no chunk \"%s\" in collection \"%s\"", id, name);
    if (rc) {
        json_decref(*obj);
        *obj = NULL;
        cdn_free(*vec);
        *vec = NULL;
    }
    coll_unref(c);
    return rc;
}

int search_exists(engine_t *e, const char *name, const char *const *ids, size_t n,
                  unsigned char *out, cdn_err_t *err)
{
    store_txn_t *t;
    coll_t *c;
    uint32_t id;
    int rc;
    if ((rc = engine_coll_get(e, name, &c, err)) != 0)
        return rc;
    id = c->cfg.id;
    coll_unref(c);
    if ((rc = store_txn_begin(e->store, 0, &t, err)) != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        unsigned char key[COLL_KEY_MAX];
        const void *v;
        size_t vlen, klen = ids[i] ? coll_chunk_key(id, ids[i], key, sizeof key) : 0;
        out[i] = klen && store_get(t, STORE_CHUNKS, key, klen, &v, &vlen) == CDN_OK;
    }
    store_txn_abort(t);
    return CDN_OK;
}

int search_record(engine_t *e, const char *name, const char *id, json_t **obj, float **vec,
                  uint32_t *dim, cdn_err_t *err)
{
    unsigned char key[COLL_KEY_MAX];
    store_txn_t *t;
    const void *v;
    size_t vlen, klen;
    uint32_t row;
    coll_t *c;
    int rc;
    *obj = NULL;
    if (vec)
        *vec = NULL;
    if ((rc = engine_coll_get(e, name, &c, err)) != 0)
        return rc;
    klen = coll_chunk_key(c->cfg.id, id, key, sizeof key);
    /* the vector of the row the record names */
    if ((rc = engine_coll_rdlock(e, &c, err)) != 0) {
        coll_unref(c);
        return rc;
    }
    if ((rc = store_txn_begin(e->store, 0, &t, err)) != 0)
        goto done;
    if (!klen || store_get(t, STORE_CHUNKS, key, klen, &v, &vlen) != CDN_OK)
        rc = cdn_err_set(err, CDN_ERR_NOT_FOUND, "no chunk \"%s\" in collection \"%s\"", id, name);
    else if ((rc = chunkrec_decode(v, vlen, &row, obj)) != 0)
        cdn_err_set(err, rc, "chunk \"%s\" is stored corrupt", id);
    else if (vec && c->vf && row < c->next_row) {
        if (!(*vec = cdn_malloc(c->cfg.dim * sizeof(float))))
            rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
        else
            memcpy(*vec, vecfile_base(c->vf) + (size_t)row * vecfile_stride(c->vf),
                   c->cfg.dim * sizeof(float));
        *dim = c->cfg.dim;
    }
    store_txn_abort(t);
done:
    pthread_rwlock_unlock(&c->lock);
    coll_unref(c);
    if (rc) {
        json_decref(*obj);
        *obj = NULL;
    }
    return rc;
}
