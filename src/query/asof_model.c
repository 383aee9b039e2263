/* asof_model.c: the permission model of a past revision (asof_int.h): whole models rebuilt
 * from the history's checkpoints and records and kept in a small cache, and the slice of
 * fragments a question about one subject needs. Relies on query/engine (the model log's
 * record kinds), query/asof_cache and store/history. */
#include "base/mem.h"
#include "query/asof_int.h"

#include <string.h>

static int apply_record(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    void **c = ctx; /* {model, err} */
    char *text;
    (void)key;
    (void)klen;
    if (vlen < 2)
        return CDN_ERR_CORRUPT;
    if (!(text = cdn_strndup((const char *)val + 1, vlen - 1)))
        return CDN_ERR_NOMEM;
    int rc = engine_model_record_apply(c[0], ((const char *)val)[0], text, c[1]);
    cdn_free(text);
    return rc ? CDN_ERR_CORRUPT : CDN_OK;
}

/* Replays the records in (from, mrev] into m. */
static int replay_into(store_txn_t *t, authz_model_t *m, uint64_t from, uint64_t mrev,
                       cdn_err_t *err)
{
    cdn_err_t inner = {0, ""};
    void *ctx[2] = {m, &inner};
    int rc = mrev > from ? history_model_scan(t, from, mrev, apply_record, ctx) : CDN_OK;
    if (rc)
        return cdn_err_set(err, rc == CDN_ERR_NOMEM ? rc : CDN_ERR_CORRUPT,
                           "the permission history does not replay to revision %llu: %s",
                           (unsigned long long)mrev, inner.msg[0] ? inner.msg : cdn_strerror(rc));
    return CDN_OK;
}

/* The model after the checkpoint at or before mrev (*srev: its revision; 0 and an empty model
 * when there is none). */
static int load_checkpoint(store_txn_t *t, uint64_t mrev, uint64_t *srev, authz_model_t **out,
                           cdn_err_t *err)
{
    authz_model_t *m;
    const char *json;
    size_t n;
    int rc = authz_model_new(&m, err);
    *srev = 0;
    if (rc)
        return rc;
    if (mrev && history_snap_at(t, mrev, srev, &json, &n) == CDN_OK) {
        char *doc = cdn_strndup(json, n);
        rc = doc ? authz_import(m, doc, err) : cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
        cdn_free(doc);
    }
    if (rc) {
        authz_model_free(m);
        return rc;
    }
    *out = m;
    return CDN_OK;
}

/* Puts m (the model after mrev) in the cache with one reference for the caller, in the least
 * recently used free slot; when every slot is in use the caller owns it alone. */
static void cache_put(asof_t *a, uint64_t mrev, authz_model_t *m, model_ref_t *ref)
{
    entry_t *slot = NULL;
    pthread_mutex_lock(&a->lock);
    for (int i = 0; i < ASOF_CACHE; i++) {
        entry_t *x = &a->ent[i];
        if (x->valid && x->mrev == mrev && !slot) { /* another thread built it meanwhile */
            x->refs++;
            x->used = ++a->tick;
            *ref = (model_ref_t){x->m, x};
            pthread_mutex_unlock(&a->lock);
            authz_model_free(m);
            return;
        }
    }
    for (int i = 0; i < ASOF_CACHE; i++) {
        entry_t *x = &a->ent[i];
        if (!x->refs && (!slot || !x->valid || (slot->valid && x->used < slot->used)))
            slot = x;
    }
    if (slot) {
        if (slot->valid)
            authz_model_free(slot->m);
        *slot = (entry_t){mrev, m, 1, 1, ++a->tick};
    }
    *ref = (model_ref_t){m, slot};
    pthread_mutex_unlock(&a->lock);
}

/* The model after model record mrev: a copy of the nearest cached model before it, or of the
 * last checkpoint (kept in the cache too), moved on by the records in between. */
int asof_model_at(asof_t *a, store_txn_t *t, uint64_t rev, model_ref_t *ref, cdn_err_t *err)
{
    uint64_t mrev, srev;
    const char *json;
    size_t n;
    model_ref_t base = {NULL, NULL};
    uint64_t base_rev = 0;
    int rc = history_model_last(t, rev, &mrev);
    if (rc && rc != CDN_ERR_NOT_FOUND)
        return cdn_err_set(err, rc, "the permission history does not read");
    pthread_mutex_lock(&a->lock);
    for (int i = 0; i < ASOF_CACHE; i++) {
        entry_t *x = &a->ent[i];
        if (x->valid && x->mrev == mrev) {
            x->refs++;
            x->used = ++a->tick;
            *ref = (model_ref_t){x->m, x};
            pthread_mutex_unlock(&a->lock);
            return CDN_OK;
        }
        if (x->valid && x->mrev < mrev && (!base.ent || x->mrev > base_rev)) {
            base = (model_ref_t){x->m, x};
            base_rev = x->mrev;
        }
    }
    if (base.ent)
        base.ent->refs++;
    pthread_mutex_unlock(&a->lock);
    if (!mrev || history_snap_at(t, mrev, &srev, &json, &n) != CDN_OK)
        srev = 0;
    if (!base.ent || base_rev < srev) { /* the checkpoint is nearer: start from it */
        authz_model_t *cp;
        if (base.ent)
            asof_model_release(a, &base);
        if ((rc = load_checkpoint(t, mrev, &srev, &cp, err)) != 0)
            return rc;
        if (srev == mrev) {
            cache_put(a, mrev, cp, ref);
            return CDN_OK;
        }
        cache_put(a, srev, cp, &base);
        base_rev = srev;
    }
    authz_model_t *m;
    rc = authz_model_clone(base.m, &m, err);
    asof_model_release(a, &base);
    if (rc == CDN_OK && (rc = replay_into(t, m, base_rev, mrev, err)) != 0)
        authz_model_free(m);
    if (rc)
        return rc;
    cache_put(a, mrev, m, ref);
    return CDN_OK;
}

void asof_model_release(asof_t *a, model_ref_t *ref)
{
    if (!ref->ent) {
        authz_model_free(ref->m);
        return;
    }
    pthread_mutex_lock(&a->lock);
    ref->ent->refs--;
    pthread_mutex_unlock(&a->lock);
}

/* The model a question about one subject needs: a slice (authz.h) of the model's fragments
 * as they stood after rev, a handful of reads; before the fragments start, the whole model
 * then (model_at). */
int asof_subject_model(asof_t *a, store_txn_t *t, const char *subject, uint64_t rev, uint64_t at_us,
                       model_ref_t *ref, int *whole, cdn_err_t *err)
{
    int rc;
    authz_slice_t *s;
    char kind;
    const char *id;
    *whole = !a->has_frags || rev < a->frag_start;
    if (*whole)
        return asof_model_at(a, t, rev, ref, err);
    if ((rc = authz_slice_new(subject, &s, err)) != 0)
        return rc;
    asof_frag_use_t *uses = NULL;
    size_t nuses = 0, capuses = 0;
    uint64_t snap = 0;
    if (store_revision_get(t, &snap) != CDN_OK)
        snap = 0; /* no version lists: every fragment is sought */
    while (rc == CDN_OK && authz_slice_need(s, &kind, &id)) {
        const char *text = NULL;
        size_t n;
        uint64_t vrev;
        int gone, hit = 0;
        asof_frag_use_t u = {0, NULL};
        if (kind != AUTHZ_ENT_SUBJECT &&
            asof_cache_version(a->cache, t, snap, kind, id, rev, &vrev, &gone)) {
            if (!vrev || gone) { /* it did not exist then: nothing to read */
                rc = authz_slice_give_json(s, NULL, err);
                continue;
            }
            hit = asof_cache_frag_get(a->cache, kind, id, vrev, &u);
        }
        if (!hit && (rc = history_ent_at(t, kind, id, rev, &text, &n, &vrev)) != 0) {
            rc = cdn_err_set(err, rc, "the permission history does not read");
            break;
        }
        if ((hit || text) && nuses == capuses) {
            void *p = uses;
            if (cdn_grow(&p, &capuses, nuses + 1, sizeof *uses)) {
                rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
                break;
            }
            uses = p;
        }
        if (text && (rc = asof_cache_frag_parse(a->cache, kind, id, vrev, text, n, &u, err)) != 0)
            break;
        if (hit || text)
            uses[nuses++] = u;
        rc = authz_slice_give_json(s, u.frag, err);
    }
    *ref = (model_ref_t){NULL, NULL};
    if (rc == CDN_OK)
        rc = authz_slice_model(s, &ref->m, err);
    authz_slice_free(s);
    asof_cache_frag_release(a->cache, uses, nuses);
    cdn_free(uses);
    /* Validity windows are judged at the moment asked, or the revision's own. */
    if (rc == CDN_OK && authz_model_has_windows(ref->m)) {
        if (!at_us && (rc = history_time_of(t, rev, &at_us)) != 0) {
            authz_model_free(ref->m);
            return cdn_err_set(err, rc, "the permission history does not read");
        }
        authz_model_set_time(ref->m, (int64_t)at_us);
    }
    return rc;
}

int asof_is_authorized(asof_t *a, const authz_request_t *req, uint64_t rev, uint64_t at_us,
                       authz_decision_t *out, cdn_err_t *err)
{
    store_txn_t *t;
    model_ref_t ref;
    int whole, rc = store_txn_begin(a->e->store, 0, &t, err);
    if (rc)
        return rc;
    rc = req->subject ? asof_subject_model(a, t, req->subject, rev, at_us, &ref, &whole, err)
                      : asof_model_at(a, t, rev, &ref, err);
    store_txn_abort(t);
    if (rc)
        return rc;
    authz_request_t r = *req;
    r.cache = AUTHZ_CACHE_BYPASS; /* a past model's decisions are not worth keeping */
    rc = authz_is_authorized(ref.m, &r, out, err);
    asof_model_release(a, &ref);
    return rc;
}
