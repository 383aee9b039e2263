/* chunks.c: the public API's chunk writes, reads and searches (include/cordon.h).
 * Relies on query/write and query/search; converts between public and internal types. */
#include "api/api.h"
#include "base/err.h"
#include "base/mem.h"
#include "query/search.h"
#include "query/write.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Checks what only the public form can get wrong (the field list) and points w at c's parts;
 * names and values have room for c->n_fields. index is c's place in its batch, or
 * WRITE_NO_INDEX. */
static int to_write(const cordon_chunk *c, size_t index, write_chunk_t *w, const char **names,
                    const char **values, cdn_err_t *e)
{
    if (c->n_fields > CORDON_TEXT_FIELDS_MAX || (c->n_fields && !c->fields)) {
        if (index == WRITE_NO_INDEX)
            return cdn_err_set(e, CDN_ERR_INVALID, "bad field list (at most %d)",
                               CORDON_TEXT_FIELDS_MAX);
        return cdn_err_set(e, CDN_ERR_INVALID, "chunk %zu: bad field list (at most %d)", index,
                           CORDON_TEXT_FIELDS_MAX);
    }
    *w = (write_chunk_t){.id = c->id,
                         .vector = c->vector,
                         .field_names = names,
                         .field_values = values,
                         .n_fields = c->n_fields,
                         .metadata_json = c->metadata_json,
                         .allowed = c->allowed,
                         .n_allowed = c->n_allowed,
                         .denied = c->denied,
                         .n_denied = c->n_denied,
                         .tenant = c->tenant,
                         .labels = c->labels,
                         .n_labels = c->n_labels,
                         .object = c->object};
    for (size_t f = 0; f < c->n_fields; f++) {
        names[f] = c->fields[f].name;
        values[f] = c->fields[f].value;
    }
    return CDN_OK;
}

int cordon_chunk_check(cordon_t *db, const char *coll, const cordon_chunk *chunk, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    const char *names[CORDON_TEXT_FIELDS_MAX], *values[CORDON_TEXT_FIELDS_MAX];
    write_chunk_t w;
    int rc;
    if (!db || !coll || !chunk)
        return api_ret(
            cdn_err_set(&e, CDN_ERR_INVALID, "cordon_chunk_check needs a collection and a chunk"),
            &e, err);
    if ((rc = to_write(chunk, WRITE_NO_INDEX, &w, names, values, &e)) == CDN_OK)
        rc = write_check(db->e, coll, &w, &e);
    return api_ret(rc, &e, err);
}

int cordon_put(cordon_t *db, const char *coll, const cordon_chunk *chunks, size_t n,
               uint64_t *revision, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    write_chunk_t *w;
    const char **names;
    const char **values;
    size_t nf = 0, at = 0;
    uint64_t rev = 0;
    int rc = CDN_OK;
    if (!db || !coll || (n && !chunks))
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_put needs a collection and chunks"),
                       &e, err);
    if (n > WRITE_BATCH_MAX)
        return api_ret(cdn_err_set(&e, CDN_ERR_LIMIT, "batch of %zu chunks; the limit is %d", n,
                                   WRITE_BATCH_MAX),
                       &e, err);
    for (size_t i = 0; i < n; i++)
        nf += chunks[i].n_fields <= CORDON_TEXT_FIELDS_MAX ? chunks[i].n_fields : 0;
    w = cdn_calloc(n ? n : 1, sizeof *w);
    names = cdn_calloc(nf ? nf : 1, sizeof *names);
    values = cdn_calloc(nf ? nf : 1, sizeof *values);
    if (!w || !names || !values) {
        rc = cdn_err_set(&e, CDN_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n && rc == CDN_OK; i++) {
        rc = to_write(&chunks[i], i, &w[i], names + at, values + at, &e);
        at += chunks[i].n_fields;
    }
    if (rc == CDN_OK)
        rc = write_put(db->e, coll, w, n, &rev, &e);
    if (rc == CDN_OK && revision)
        *revision = rev;
done:
    cdn_free(w);
    cdn_free(names);
    cdn_free(values);
    return api_ret(rc, &e, err);
}

int cordon_delete(cordon_t *db, const char *coll, const char *const *ids, size_t n, size_t *deleted,
                  uint64_t *revision, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    if (!db || !coll || (n && !ids))
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_delete needs a collection and ids"),
                       &e, err);
    return api_ret(write_delete(db->e, coll, ids, n, deleted, revision, &e), &e, err);
}

int cordon_set_acl(cordon_t *db, const char *coll, const cordon_acl_change *changes, size_t n,
                   uint64_t *revision, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    write_acl_t *w;
    int rc;
    if (!db || !coll || (n && !changes))
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_set_acl needs changes"), &e, err);
    if (n > WRITE_BATCH_MAX)
        return api_ret(cdn_err_set(&e, CDN_ERR_LIMIT, "batch of %zu changes; the limit is %d", n,
                                   WRITE_BATCH_MAX),
                       &e, err);
    if (!(w = cdn_calloc(n ? n : 1, sizeof *w)))
        return api_ret(cdn_err_set(&e, CDN_ERR_NOMEM, "out of memory"), &e, err);
    for (size_t i = 0; i < n; i++)
        w[i] = (write_acl_t){changes[i].id,      changes[i].allowed,  changes[i].n_allowed,
                             changes[i].denied,  changes[i].n_denied, changes[i].labels,
                             changes[i].n_labels};
    rc = write_set_acl(db->e, coll, w, n, revision, &e);
    cdn_free(w);
    return api_ret(rc, &e, err);
}

/* Ranking order for paging: score descending, equal scores by id ascending. */
static int hit_order(const void *a, const void *b)
{
    const search_hit_t *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return strcmp(x->id, y->id);
}

static int after_key(const search_hit_t *h, const cordon_query *q)
{
    if (!q->after_id)
        return 1;
    if (h->score != q->after_score)
        return h->score < q->after_score;
    return strcmp(h->id, q->after_id) > 0;
}

/* Moves the page [skip, skip + k) of r's hits after the search_after key into o. */
static int take_page(search_result_t *r, const cordon_query *q, size_t k, cordon_result *o,
                     size_t *past_key)
{
    size_t skip = q->from;
    *past_key = 0;
    if (!(o->hits = cdn_calloc(k ? k : 1, sizeof *o->hits)))
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < r->n_hits; i++) {
        search_hit_t *h = &r->hits[i];
        if (!after_key(h, q))
            continue;
        (*past_key)++;
        if (skip) {
            skip--;
            continue;
        }
        if (o->n_hits == k)
            continue;
        cordon_hit *c = &o->hits[o->n_hits];
        c->score = h->score;
        if (h->body) {
            if (!(c->record = cdn_calloc(1, sizeof *c->record)))
                return CDN_ERR_NOMEM;
            o->n_hits++;
            c->record->vector = h->vec;
            c->record->dim = h->vec ? r->dim : 0;
            c->record->revision = r->revision;
            h->vec = NULL;
            int rc = api_fill_record(h->body, c->record);
            if (rc)
                return rc;
            if (!(c->record->id = cdn_strdup(h->id)))
                return CDN_ERR_NOMEM;
        } else {
            o->n_hits++;
        }
        c->id = h->id;
        h->id = NULL;
    }
    return CDN_OK;
}

/* k, from and after_score within their limits: CDN_OK, CDN_ERR_INVALID or CDN_ERR_LIMIT. */
static int check_paging(const cordon_query *q, size_t k, cdn_err_t *e)
{
    if (k > CORDON_K_MAX) /* bad input, as the engine has always refused it */
        return cdn_err_set(e, CDN_ERR_INVALID, "k is %zu; the limit is %d", k, CORDON_K_MAX);
    if (q->from > CORDON_K_MAX - k)
        return cdn_err_set(e, CDN_ERR_LIMIT,
                           "from (%zu) + k (%zu) is more than %d: page with after_id "
                           "(search_after) instead",
                           q->from, k, CORDON_K_MAX);
    if (q->after_id && !isfinite(q->after_score))
        return cdn_err_set(e, CDN_ERR_INVALID, "after_score must be a finite number");
    return CDN_OK;
}

/* The engine's top `window` is exact by score but breaks ties by row, not by id, so a hit tied
 * with the page's last one may have been left out of it. Returns the window to try next, or 0
 * when the page is right: the ranking ended inside the window, or a lower score in it shows
 * that no tie crosses the page's end, or the window may grow no further (cap; a hybrid
 * ranking is that of its rank window, which a wider window would change). search_after also
 * widens while the key sits deeper than the window reaches. */
static size_t next_window(const search_result_t *r, const cordon_result *o, const cordon_query *q,
                          size_t k, size_t window, size_t cap)
{
    if (r->n_hits < window || window >= cap)
        return 0;
    if ((q->after_id && o->n_hits < k) ||
        (o->n_hits && o->hits[o->n_hits - 1].score == r->hits[r->n_hits - 1].score))
        return window > cap / 4 ? cap : window * 4;
    return 0;
}

int cordon_search(cordon_t *db, const char *coll, const cordon_subject *subject,
                  const cordon_query *q, cordon_result **out, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    search_result_t r;
    search_knn_t s;
    cordon_result *o = NULL;
    size_t k, window, rank0, cap, past_key = 0;
    int rc, hybrid = q && q->vector && (q->text || q->query_json);
    if (!db || !coll || !q || !out)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_search needs a query and out"), &e,
                       err);
    if ((rc = api_check_subject(subject, &e)) != 0)
        return api_ret(rc, &e, err);
    k = q->k ? q->k : 10;
    if ((rc = check_paging(q, k, &e)) != 0)
        return api_ret(rc, &e, err);
    engine_asker_t who = {subject->subject_id, subject->principals, subject->n_principals};
    cordon_authorizer_info ai;
    char *filter = NULL;
    if ((rc = api_pdp_filter(db, coll, subject, "search", q->filter_json, &filter, &ai, &e)) != 0)
        return api_ret(rc, &e, err);
    /* hybrid: each side's window (a deeper page widens it with the page); every try keeps it,
     * since a wider one changes the fused scores */
    rank0 = q->rank_window_size ? q->rank_window_size : 100;
    if (rank0 < q->from + k)
        rank0 = q->from + k;
    cap = hybrid ? rank0 : CORDON_K_MAX;
    /* One hit more than the page needs shows whether a tie crosses the page's end. */
    window = q->from + k < cap ? q->from + k + 1 : q->from + k;
    for (;;) {
        s = (search_knn_t){q->vector,
                           window,
                           (search_strategy_t)q->strategy,
                           q->ef_search,
                           q->max_candidates,
                           q->text,
                           q->query_json,
                           (search_fusion_t)q->fusion,
                           q->rank_window_size,
                           q->rank_constant,
                           q->text_weight,
                           q->vector_weight,
                           filter ? filter : q->filter_json,
                           q->count_total,
                           q->with_records,
                           q->from + k,
                           q->total_max,
                           q->after_id,
                           q->after_score,
                           q->from,
                           k,
                           q->records_without_vectors,
                           q->vector_k};
        if (hybrid)
            s.rank_window = rank0;
        if ((rc = search_knn(db->e, coll, &who, &s, &r, &e)) != 0) {
            cdn_free(filter);
            return api_ret(rc, &e, err);
        }
        qsort(r.hits, r.n_hits, sizeof *r.hits, hit_order);
        if (!(o = cdn_calloc(1, sizeof *o))) {
            search_result_free(&r);
            cdn_free(filter);
            return api_ret(cdn_err_set(&e, CDN_ERR_NOMEM, "out of memory"), &e, err);
        }
        if ((rc = take_page(&r, q, k, o, &past_key)) != 0) {
            search_result_free(&r);
            cordon_result_free(o);
            cdn_free(filter);
            return api_ret(cdn_err_set(&e, rc, "out of memory"), &e, err);
        }
        if (!(window = next_window(&r, o, q, k, window, cap)))
            break;
        search_result_free(&r);
        cordon_result_free(o);
        o = NULL;
    }
    cdn_free(filter);
    o->authorizer = ai;
    o->complete = r.complete;
    memcpy(o->plan, r.plan, sizeof o->plan);
    o->readable = r.readable;
    o->revision = r.revision;
    o->candidates = db->e->report_work ? r.work : r.candidates;
    o->total = r.total;
    o->total_capped = r.total_capped;
    uint32_t dim = r.dim;
    search_result_free(&r);
    /* A search the audit cannot record is not answered. */
    if ((rc = api_audit_search(db, coll, subject, q, k, dim, o, &e)) != 0) {
        cordon_result_free(o);
        return api_ret(rc, &e, err);
    }
    *out = o;
    return api_ret(CDN_OK, &e, err);
}

void cordon_result_free(cordon_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_hits; i++) {
        cdn_free(r->hits[i].id);
        cordon_record_free(r->hits[i].record);
    }
    cdn_free(r->hits);
    cdn_free(r);
}
