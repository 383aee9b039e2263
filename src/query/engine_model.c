/* engine_model.c: the permission model inside the engine: its durable operation log, replay at
 * open, and turning a subject into the principals a search filters by.
 * Relies on authz/ for the model and store/ for STORE_MODEL_LOG (revision -> kind + JSON). */
#include "base/mem.h"
#include "base/testhook.h"
#include "query/engine.h"
#include "store/history.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* Log record kinds: one op, several applied as one (a JSON array), or a whole-model import
 * (which makes older records moot). */
#define LOG_OP 'O'
#define LOG_BATCH 'B'
#define LOG_IMPORT 'I'

/* Applies the JSON array of operations in text as one change (authz_apply_batch). */
static int batch_text(authz_model_t *m, const char *text, cdn_err_t *err)
{
    json_error_t je;
    json_t *ops = json_loads(text, 0, &je);
    int rc = json_is_array(ops)
                 ? authz_apply_batch(m, ops, err)
                 : cdn_err_set(err, CDN_ERR_INVALID, "give a JSON array of model operations: %s",
                               ops ? "not an array" : je.text);
    json_decref(ops);
    return rc;
}

int engine_model_record_apply(authz_model_t *m, char kind, const char *text, cdn_err_t *err)
{
    return kind == LOG_IMPORT  ? authz_import(m, text, err)
           : kind == LOG_BATCH ? batch_text(m, text, err)
                               : authz_apply(m, text, err);
}

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
    char kind = ((const char *)val)[0];
    int import = kind == LOG_IMPORT;
    rc = engine_model_record_apply(r->e->model, kind, text, r->err);
    if (import) {
        r->e->snapshot_bytes = vlen;
        r->e->log_bytes = 0;
    } else {
        r->e->log_bytes += vlen;
    }
    cdn_free(text);
    if (rc)
        return cdn_err_set(r->err, CDN_ERR_CORRUPT,
                           "permission model log does not replay at "
                           "revision %llu",
                           (unsigned long long)store_rd64(key));
    return CDN_OK;
}

int engine_model_load(engine_t *e, store_txn_t *t, cdn_err_t *err)
{
    struct replay_ctx r = {e, err};
    return store_scan_prefix(t, STORE_MODEL_LOG, "", 0, replay_one, &r);
}

/* The log is folded into one whole-model record once what it holds since the last one passes
 * this, and twice that record's size: a log of edits (memberships toggled all day) grows
 * without bound otherwise, the model does not. */
#define LOG_FOLD_MIN_BYTES (1u << 20)

/* Model writes between the history's checkpoints of the whole model: an as-of read replays at
 * most this many records after the checkpoint before its revision. */
#define HIST_SNAP_EVERY 256

struct frag_put {
    store_txn_t *t;
    uint64_t rev;
};

static int put_fragment(void *ctx, char kind, const char *id, const char *frag)
{
    struct frag_put *f = ctx;
    return history_ent_put(f->t, kind, id, f->rev, frag);
}

int engine_fragments_put(engine_t *e, store_txn_t *t, bool all, uint64_t rev, cdn_err_t *err)
{
    struct frag_put f = {t, rev};
    return authz_changes(e->model, all, put_fragment, &f, err);
}

/* Persists one log record at revision r (published already, with the change in memory); on
 * failure the model in memory is ahead of the store, so it is marked broken (checks fail
 * closed) until the directory is reopened. An op whose record would make the log outgrow the
 * model goes in as the whole model after it (an import record, which replaces the log). */
static int persist(engine_t *e, char kind, const char *json, uint64_t r, cdn_err_t *err)
{
    char *doc = NULL;
    if (kind != LOG_IMPORT && e->log_bytes + strlen(json) > LOG_FOLD_MIN_BYTES &&
        e->log_bytes + strlen(json) > 2 * e->snapshot_bytes &&
        authz_export(e->model, &doc, NULL) == CDN_OK) {
        kind = LOG_IMPORT; /* the model in memory already holds the op */
        json = doc;
    }
    size_t n = strlen(json);
    unsigned char key[8];
    char *val = cdn_malloc(n + 1);
    store_txn_t *t = NULL;
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
    if (rc == CDN_OK) /* the history keeps every record, folded or not */
        rc = history_model_put(t, r, val, n + 1);
    if (rc == CDN_OK) /* and the fragments the change touched, as they are now */
        rc = engine_fragments_put(e, t, false, r, err);
    int snap = kind == LOG_IMPORT || e->hist_since_snap + 1 >= HIST_SNAP_EVERY;
    if (rc == CDN_OK && snap) {
        char *whole = NULL;
        if (kind == LOG_IMPORT)
            rc = history_snap_put(t, r, json);
        else if ((rc = authz_export(e->model, &whole, err)) == CDN_OK)
            rc = history_snap_put(t, r, whole);
        cdn_free(whole);
    }
    if (rc == CDN_OK)
        rc = store_revision_set(t, r);
    if (rc == CDN_OK) {
        rc = store_txn_commit(t, err);
        t = NULL;
    }
    store_txn_abort(t);
    cdn_free(val);
    cdn_free(doc);
    if (rc == CDN_OK && kind == LOG_IMPORT) {
        e->snapshot_bytes = n + 1;
        e->log_bytes = 0;
    } else if (rc == CDN_OK) {
        e->log_bytes += n + 1;
    }
    if (rc == CDN_OK)
        e->hist_since_snap = snap ? 0 : e->hist_since_snap + 1;
    if (rc) {
        atomic_store(&e->model_broken, 1);
        return cdn_err_set(err, rc,
                           "the permission model change could not be stored (%s); "
                           "reopen the data directory",
                           cdn_strerror(rc));
    }
    return CDN_OK;
}

/* Changes the model in memory under the gate (engine.h: requests that must not retry again
 * hold it for reading), then stores it; the write lock keeps the revision to this writer
 * meanwhile. The change moves the engine's revision from inside the model's own write lock
 * (authz_model_count_changes, set at open), so a search that reads the changed model reads
 * its revision too and the revision it reports names exactly the state it used (moved after
 * the store's fsync, it let searches use the new model under the old revision). authz_apply
 * validates fully before changing anything, so a bad op leaves no trace and takes no
 * revision. */
static int model_write(engine_t *e, char kind, const char *json, uint64_t *rev, cdn_err_t *err)
{
    int rc;
    pthread_mutex_lock(&e->write_lock);
    uint64_t r = atomic_load(&e->revision) + 1;
    pthread_rwlock_wrlock(&e->model_gate);
    rc = engine_model_record_apply(e->model, kind, json, err);
    pthread_rwlock_unlock(&e->model_gate);
    CDN_ASSERT(rc != CDN_OK || atomic_load(&e->revision) == r);
    if (rc == CDN_OK)
        cdn_hook_run(CDN_HOOK_MODEL_APPLIED);
    if (rc == CDN_OK && (rc = persist(e, kind, json, r, err)) == CDN_OK) {
        cdn_hook_run(CDN_HOOK_MODEL_STORED);
        *rev = r;
    }
    pthread_mutex_unlock(&e->write_lock);
    return rc;
}

int engine_model_apply(engine_t *e, const char *op_json, uint64_t *rev, cdn_err_t *err)
{
    return model_write(e, LOG_OP, op_json, rev, err);
}

int engine_model_import(engine_t *e, const char *doc_json, uint64_t *rev, cdn_err_t *err)
{
    return model_write(e, LOG_IMPORT, doc_json, rev, err);
}

int engine_model_apply_batch(engine_t *e, const char *ops_json, uint64_t *rev, cdn_err_t *err)
{
    return model_write(e, LOG_BATCH, ops_json, rev, err);
}

static int model_ok(engine_t *e, cdn_err_t *err)
{
    if (!atomic_load(&e->model_broken))
        return CDN_OK;
    return cdn_err_set(err, CDN_ERR_INTERNAL,
                       "the permission model missed a write; reopen the data directory");
}

int engine_model_export(engine_t *e, char **json, cdn_err_t *err)
{
    int rc = model_ok(e, err);
    return rc ? rc : authz_export(e->model, json, err);
}

int engine_is_authorized(engine_t *e, const authz_request_t *req, const char *const *resources,
                         size_t n, authz_decision_t *out, cdn_err_t *err)
{
    int rc = model_ok(e, err);
    if (rc)
        return rc;
    return resources ? authz_is_authorized_batch(e->model, req, resources, n, out, err)
                     : authz_is_authorized(e->model, req, out, err);
}

int engine_view(engine_t *e, const char *subject_id, authz_view_t **out, cdn_err_t *err)
{
    int rc = model_ok(e, err);
    return rc ? rc : authz_view(e->model, subject_id, out, err);
}

int engine_subject_attrs(engine_t *e, const char *subject_id, char **json, cdn_err_t *err)
{
    int rc = model_ok(e, err);
    return rc ? rc : authz_subject_attrs(e->model, subject_id, json, err);
}

int engine_rebac_check(engine_t *e, const char *subject, const char *permission, const char *object,
                       bool *allowed, uint64_t *rev, cdn_err_t *err)
{
    int rc = model_ok(e, err);
    return rc ? rc : authz_rebac_check(e->model, subject, permission, object, allowed, rev, err);
}

int engine_rebac_lookup(engine_t *e, int resources, const char *a, const char *b, const char *c,
                        authz_name_fn fn, void *ctx, uint64_t *rev, cdn_err_t *err)
{
    int rc = model_ok(e, err);
    if (rc)
        return rc;
    return resources ? authz_rebac_lookup_resources(e->model, a, b, c, fn, ctx, rev, err)
                     : authz_rebac_lookup_subjects(e->model, a, b, c, fn, ctx, rev, err);
}

int engine_rebac_expand(engine_t *e, const char *object, const char *permission, char **json,
                        cdn_err_t *err)
{
    int rc = model_ok(e, err);
    return rc ? rc : authz_rebac_expand(e->model, object, permission, json, err);
}

int engine_explain(engine_t *e, const char *subject_id, const char *const *allowed, size_t na,
                   const char *const *denied, size_t nd, authz_explanation_t *out, cdn_err_t *err)
{
    int rc = model_ok(e, err);
    return rc ? rc : authz_explain(e->model, subject_id, allowed, na, denied, nd, out, err);
}

static int hidden(const coll_t *c, cdn_err_t *err)
{
    return cdn_err_set(err, CDN_ERR_NOT_FOUND, "no such collection \"%s\"", c->cfg.name);
}

/* Decides action on c for subject_id and takes its view, in one read of the model. */
static int authorize_view(engine_t *e, const coll_t *c, const char *subject_id, const char *action,
                          authz_decision_t *d, authz_view_t **view, cdn_err_t *err)
{
    char resource[COLL_NAME_MAX + 16];
    authz_request_t req = {0};
    snprintf(resource, sizeof resource, "collection:%s", c->cfg.name);
    req.subject = subject_id;
    req.resource = resource;
    req.action = action;
    return authz_authorize_view(e->model, &req, d, view, err);
}

int engine_subject_resolve(engine_t *e, const coll_t *c, const engine_asker_t *who,
                           const char *action, engine_subject_t *out, cdn_err_t *err)
{
    authz_decision_t d;
    int rc;
    memset(out, 0, sizeof *out);
    if (!who->subject_id) {
        /* The collection's existence is no more visible than to a subject without search. */
        if (!c->cfg.asserted)
            return hidden(c, err);
        out->principals = who->principals;
        out->n = who->n;
        return CDN_OK;
    }
    if ((rc = model_ok(e, err)) != 0)
        return rc;
    rc = authorize_view(e, c, who->subject_id, action, &d, &out->view, err);
    if (rc == CDN_ERR_NOT_FOUND)
        return hidden(c, err);
    if (rc)
        return cdn_err_set(err, rc, "authorization failed: %s", cdn_strerror(rc));
    /* Unknown subject or no permission reads as a missing collection: hidden equals missing. */
    if (!d.authorized)
        return hidden(c, err);
    out->principals = out->view->principals;
    out->n = out->view->n;
    out->c = c;
    out->subject_id = who->subject_id;
    out->action = action;
    if ((rc = engine_objects_add(e, out, err)) != 0)
        engine_subject_release(out);
    return rc;
}

void engine_subject_release(engine_subject_t *s)
{
    cdn_free(s->object_ids);
    s->object_ids = NULL;
    if (s->view)
        authz_view_release(s->view);
    s->view = NULL;
}

void engine_read_begin(engine_t *e, engine_read_t *r)
{
    r->gated = r->attempt >= ENGINE_READ_TRIES;
    if (r->gated)
        pthread_rwlock_rdlock(&e->model_gate);
}

static int same_view(const authz_view_t *a, const authz_view_t *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) /* both sorted */
        if (strcmp(a->principals[i], b->principals[i]))
            return 0;
    return 1;
}

int engine_subject_current(engine_t *e, const engine_subject_t *s, uint64_t *rev)
{
    authz_decision_t d;
    authz_view_t *now = NULL;
    cdn_err_t err;
    int same;
    /* The model's revision only grows, and every change (a half-applied one included) moves
     * it: equal now means no model write landed since the view was taken. The acquire load
     * pairs with the writer's increment, and the collection lock the caller holds orders it
     * after every ACL read (an ACL write that follows a model write in the writer's order is
     * seen only by a reader that also sees the model write's revision). */
    if (s->objects_stale)
        return 0; /* the objects were read at another revision than the view */
    if (s->view && !s->with_objects && atomic_load(&s->c->has_objects))
        return 0; /* the collection's first chunk naming an object came after the subject
                     was resolved without objects: resolve again, with them */
    if (!s->view || authz_model_revision(e->model) == s->view->revision)
        return 1;
    if (s->with_objects)
        return 0; /* a tuple may have moved: the objects are the view's revision's only */
    /* The model moved, most often in a way that does not touch this subject (another user's
     * membership). The ACLs cannot change while the caller holds the collection's read lock,
     * so if the subject is still authorized and its view is the one the request used, the
     * answer is that of the state at this moment: the model now, the ACLs read. */
    if (atomic_load(&e->model_broken) ||
        authorize_view(e, s->c, s->subject_id, s->action, &d, &now, &err) != CDN_OK ||
        !d.authorized || !now) /* starts over, and the new attempt fails closed or denies */
        same = 0;
    else
        same = same_view(now, s->view);
    /* The answer is the state's at the model's revision now (d.counted, read with the view)
     * with the ACLs read: the same at every revision from the later of the two. */
    if (same && d.counted > *rev)
        *rev = d.counted;
    if (now)
        authz_view_release(now);
    return same;
}

int engine_read_end(engine_t *e, engine_read_t *r, int current)
{
    if (r->gated)
        pthread_rwlock_unlock(&e->model_gate);
    r->attempt++;
    return !current;
}
