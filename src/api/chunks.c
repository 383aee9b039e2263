/* chunks.c: the public API's chunk writes, reads and searches (include/cordon.h).
 * Relies on query/write and query/search; converts between public and internal types. */
#include "api/api.h"
#include "base/err.h"
#include "base/mem.h"
#include "query/search.h"
#include "query/write.h"

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
    *w = (write_chunk_t){c->id,       c->vector,        names,      values,
                         c->n_fields, c->metadata_json, c->allowed, c->n_allowed,
                         c->denied,   c->n_denied};
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
        w[i] = (write_acl_t){changes[i].id, changes[i].allowed, changes[i].n_allowed,
                             changes[i].denied, changes[i].n_denied};
    rc = write_set_acl(db->e, coll, w, n, revision, &e);
    cdn_free(w);
    return api_ret(rc, &e, err);
}

int api_check_subject(const cordon_subject *s, cdn_err_t *e)
{
    if (!s)
        return cdn_err_set(e, CDN_ERR_INVALID, "a subject is required: say who is asking");
    if (!s->subject_id && s->n_principals && !s->principals)
        return cdn_err_set(e, CDN_ERR_INVALID, "subject principals is NULL");
    return CDN_OK;
}

int cordon_search(cordon_t *db, const char *coll, const cordon_subject *subject,
                  const cordon_query *q, cordon_result **out, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    search_result_t r;
    search_knn_t k;
    cordon_result *o;
    int rc;
    if (!db || !coll || !q || !out)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_search needs a query and out"), &e,
                       err);
    if ((rc = api_check_subject(subject, &e)) != 0)
        return api_ret(rc, &e, err);
    engine_asker_t who = {subject->subject_id, subject->principals, subject->n_principals};
    k = (search_knn_t){q->vector,
                       q->k,
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
                       q->filter_json};
    rc = search_knn(db->e, coll, &who, &k, &r, &e);
    if (rc)
        return api_ret(rc, &e, err);
    if (!(o = cdn_calloc(1, sizeof *o))) {
        search_result_free(&r);
        return api_ret(cdn_err_set(&e, CDN_ERR_NOMEM, "out of memory"), &e, err);
    }
    /* search_hit_t and cordon_hit are the same shape: hand the array over. */
    _Static_assert(sizeof(search_hit_t) == sizeof(cordon_hit), "hit layouts must match");
    o->hits = (cordon_hit *)r.hits;
    o->n_hits = r.n_hits;
    o->complete = r.complete;
    memcpy(o->plan, r.plan, sizeof o->plan);
    o->readable = r.readable;
    o->revision = r.revision;
    o->candidates = db->e->report_work ? r.work : r.candidates;
    *out = o;
    return api_ret(CDN_OK, &e, err);
}

void cordon_result_free(cordon_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_hits; i++)
        cdn_free(r->hits[i].id);
    cdn_free(r->hits);
    cdn_free(r);
}
