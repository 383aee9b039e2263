/* model.c: the permission model inside the engine: its durable operation log, replay at open,
 * and turning a subject into the principals a search filters by.
 * Relies on authz/ for the model and store/ for STORE_MODEL_LOG (revision -> kind + JSON). */
#include "base/mem.h"
#include "query/engine.h"

#include <stdio.h>
#include <string.h>

/* Log record kinds: one op, or a whole-model import (which makes older records moot). */
#define LOG_OP 'O'
#define LOG_IMPORT 'I'

struct replay_ctx {
    engine_t *e;
    cdn_err_t *err;
};

static int replay_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct replay_ctx *r = ctx;
    char *text;
    int rc;
    (void)key;
    if (klen != 8 || vlen < 2)
        return cdn_err_set(r->err, CDN_ERR_CORRUPT, "permission model log record is corrupt");
    if (!(text = cdn_strndup((const char *)val + 1, vlen - 1)))
        return cdn_err_set(r->err, CDN_ERR_NOMEM, "out of memory replaying the model");
    rc = ((const char *)val)[0] == LOG_IMPORT ? authz_import(r->e->model, text, r->err)
                                              : authz_apply(r->e->model, text, r->err);
    cdn_free(text);
    if (rc)
        return cdn_err_set(r->err, CDN_ERR_CORRUPT, "permission model log does not replay at "
                           "revision %llu", (unsigned long long)store_rd64(key));
    return CDN_OK;
}

int engine_model_load(engine_t *e, store_txn_t *t, cdn_err_t *err)
{
    struct replay_ctx r = {e, err};
    return store_scan_prefix(t, STORE_MODEL_LOG, "", 0, replay_one, &r);
}

/* Persists one log record at the next revision; on failure the model in memory is ahead of
 * the store, so it is marked broken (checks fail closed) until the directory is reopened. */
static int persist(engine_t *e, char kind, const char *json, uint64_t *rev, cdn_err_t *err)
{
    size_t n = strlen(json);
    unsigned char key[8];
    char *val = cdn_malloc(n + 1);
    store_txn_t *t = NULL;
    uint64_t r = atomic_load(&e->revision) + 1;
    int rc = val ? CDN_OK : CDN_ERR_NOMEM;
    if (rc == CDN_OK) {
        val[0] = kind;
        memcpy(val + 1, json, n);
        store_be64(key, r);
        rc = store_txn_begin(e->store, 1, &t, err);
    }
    if (rc == CDN_OK && kind == LOG_IMPORT)
        rc = store_del_prefix(t, STORE_MODEL_LOG, "", 0); /* the import replaces all before */
    if (rc == CDN_OK)
        rc = store_put(t, STORE_MODEL_LOG, key, 8, val, n + 1);
    if (rc == CDN_OK)
        rc = store_revision_set(t, r);
    if (rc == CDN_OK) {
        rc = store_txn_commit(t, err);
        t = NULL;
    }
    store_txn_abort(t);
    cdn_free(val);
    if (rc) {
        atomic_store(&e->model_broken, 1);
        return cdn_err_set(err, rc, "the permission model change could not be stored (%s); "
                           "reopen the data directory", cdn_strerror(rc));
    }
    atomic_store(&e->revision, r);
    *rev = r;
    return CDN_OK;
}

int engine_model_apply(engine_t *e, const char *op_json, uint64_t *rev, cdn_err_t *err)
{
    int rc;
    pthread_mutex_lock(&e->write_lock);
    /* authz_apply validates fully before changing anything, so a bad op leaves no trace. */
    rc = authz_apply(e->model, op_json, err);
    if (rc == CDN_OK)
        rc = persist(e, LOG_OP, op_json, rev, err);
    pthread_mutex_unlock(&e->write_lock);
    return rc;
}

int engine_model_import(engine_t *e, const char *doc_json, uint64_t *rev, cdn_err_t *err)
{
    int rc;
    pthread_mutex_lock(&e->write_lock);
    rc = authz_import(e->model, doc_json, err);
    if (rc == CDN_OK)
        rc = persist(e, LOG_IMPORT, doc_json, rev, err);
    pthread_mutex_unlock(&e->write_lock);
    return rc;
}

int engine_subject_resolve(engine_t *e, const char *subject_id, const char *const *principals,
                           size_t n, const char *coll, const char *action,
                           engine_subject_t *out, cdn_err_t *err)
{
    char resource[256];
    authz_request_t req = {0};
    authz_decision_t d;
    int rc;
    memset(out, 0, sizeof *out);
    if (!subject_id) {
        coll_t *c;
        int asserted;
        if ((rc = engine_coll_get(e, coll, &c, err)) != 0)
            return rc;
        asserted = c->cfg.asserted;
        coll_unref(c);
        if (!asserted)
            return cdn_err_set(err, CDN_ERR_DENIED,
                               "collection \"%s\" does not accept asserted principals: search as "
                               "a subject of the permission model (subject_id), or create the "
                               "collection with asserted_principals",
                               coll);
        out->principals = principals;
        out->n = n;
        return CDN_OK;
    }
    if (atomic_load(&e->model_broken))
        return cdn_err_set(err, CDN_ERR_INTERNAL, "the permission model missed a write; reopen "
                           "the data directory");
    snprintf(resource, sizeof resource, "collection:%s", coll);
    req.subject = subject_id;
    req.resource = resource;
    req.action = action;
    if ((rc = authz_is_authorized(e->model, &req, &d, NULL)) != 0)
        return cdn_err_set(err, rc, "authorization failed: %s", cdn_strerror(rc));
    /* Unknown subject or no permission reads as a missing collection: hidden equals missing. */
    if (!d.authorized)
        return cdn_err_set(err, CDN_ERR_NOT_FOUND, "no such collection \"%s\"", coll);
    if ((rc = authz_view(e->model, subject_id, &out->view, err)) != 0)
        return rc == CDN_ERR_NOT_FOUND
                   ? cdn_err_set(err, CDN_ERR_NOT_FOUND, "no such collection \"%s\"", coll)
                   : rc;
    out->principals = out->view->principals;
    out->n = out->view->n;
    return CDN_OK;
}

void engine_subject_release(engine_subject_t *s)
{
    if (s->view)
        authz_view_release(s->view);
    s->view = NULL;
}
