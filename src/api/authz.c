/* authz.c: the public API of the permission model: operations, import/export, is-authorized,
 * views and explanations. Relies on query/engine (persistence) and authz/ (decisions). */
#include "acl/acl.h"
#include "api/api.h"
#include "base/mem.h"
#include "query/search.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* A decision's fields are the engine's own buffers, copied: equal sizes mean a copy never cuts
 * a value short, whatever the model holds (its writes enforce the same limits). */
#define FIELD_SIZE(type, f) sizeof(((type *)0)->f)
_Static_assert(FIELD_SIZE(cordon_decision, reason) == AUTHZ_REASON_NAME_MAX, "reason size");
_Static_assert(FIELD_SIZE(cordon_decision, resource) == FIELD_SIZE(authz_decision_t, resource) &&
                   FIELD_SIZE(authz_decision_t, resource) == AUTHZ_RESOURCE_MAX,
               "resource size");
_Static_assert(FIELD_SIZE(cordon_decision, action) == FIELD_SIZE(authz_decision_t, action) &&
                   FIELD_SIZE(authz_decision_t, action) == AUTHZ_ACTION_MAX,
               "action size");
_Static_assert(FIELD_SIZE(cordon_decision, condition) == FIELD_SIZE(authz_decision_t, condition) &&
                   FIELD_SIZE(authz_decision_t, condition) == AUTHZ_COND_TEXT_MAX,
               "condition size");
_Static_assert(FIELD_SIZE(cordon_decision, role) == FIELD_SIZE(authz_decision_t, role) &&
                   FIELD_SIZE(authz_decision_t, role) == AUTHZ_NAME_MAX,
               "role size");
_Static_assert(FIELD_SIZE(cordon_decision, granted_to) ==
                       FIELD_SIZE(authz_decision_t, granted_to) &&
                   FIELD_SIZE(authz_decision_t, granted_to) == AUTHZ_PRINCIPAL_MAX,
               "granted_to size");
_Static_assert(FIELD_SIZE(cordon_explanation, principal) ==
                       FIELD_SIZE(authz_explanation_t, principal) &&
                   FIELD_SIZE(cordon_explanation, message) ==
                       FIELD_SIZE(authz_explanation_t, message),
               "explanation sizes");

/* Copies src into the n bytes at dst. A value that does not fit is a broken invariant (the
 * sizes above match and writes enforce them): the caller fails with CDN_ERR_INTERNAL rather
 * than hand out a cut condition, which would read as a different one. */
static int copy_text(char *dst, size_t n, const char *src, const char *field, cdn_err_t *err)
{
    size_t len = strlen(src);
    if (len >= n) {
        CDN_ASSERT(!"a decision field does not fit");
        dst[0] = '\0';
        return cdn_err_set(err, CDN_ERR_INTERNAL, "decision %s is %zu bytes; the field holds %zu",
                           field, len, n - 1);
    }
    memcpy(dst, src, len + 1);
    return CDN_OK;
}

int cordon_model_apply(cordon_t *db, const char *op_json, uint64_t *revision, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    uint64_t rev = 0;
    int rc;
    if (!db || !op_json)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_model_apply needs an op"), &e, err);
    rc = engine_model_apply(db->e, op_json, &rev, &e);
    if (rc == CDN_OK && revision)
        *revision = rev;
    return api_ret(rc, &e, err);
}

int cordon_model_apply_batch(cordon_t *db, const char *ops_json, uint64_t *revision,
                             cordon_error *err)
{
    cdn_err_t e = {0, ""};
    uint64_t rev = 0;
    int rc;
    if (!db || !ops_json)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_model_apply_batch needs ops"), &e,
                       err);
    rc = engine_model_apply_batch(db->e, ops_json, &rev, &e);
    if (rc == CDN_OK && revision)
        *revision = rev;
    return api_ret(rc, &e, err);
}

int cordon_model_import(cordon_t *db, const char *doc, uint64_t *revision, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    uint64_t rev = 0;
    int rc;
    if (!db || !doc)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_model_import needs a document"), &e,
                       err);
    rc = engine_model_import(db->e, doc, &rev, &e);
    if (rc == CDN_OK && revision)
        *revision = rev;
    return api_ret(rc, &e, err);
}

int cordon_model_export(cordon_t *db, char **json, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    if (!db || !json)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_model_export needs out"), &e, err);
    return api_ret(engine_model_export(db->e, json, &e), &e, err);
}

static int parse_obj(const char *text, const char *what, json_t **out, cdn_err_t *e)
{
    json_error_t je;
    *out = NULL;
    if (!text)
        return CDN_OK;
    *out = json_loads(text, 0, &je);
    if (!*out || !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return cdn_err_set(e, CDN_ERR_INVALID, "%s must be a JSON object", what);
    }
    return CDN_OK;
}

/* Copies a decision out; a field that would not fit (cannot happen: the sizes are asserted
 * equal above) leaves a zeroed decision, which reads as a denial, and an error. */
static int decision_out(const authz_decision_t *d, cordon_decision *out, cdn_err_t *e)
{
    int rc;
    memset(out, 0, sizeof *out);
    out->authorized = d->authorized;
    if ((rc = copy_text(out->reason, sizeof out->reason, authz_reason_name(d->reason), "reason",
                        e)) ||
        (rc = copy_text(out->resource, sizeof out->resource, d->resource, "resource", e)) ||
        (rc = copy_text(out->action, sizeof out->action, d->action, "action", e)) ||
        (rc = copy_text(out->condition, sizeof out->condition, d->condition, "condition", e)) ||
        (rc = copy_text(out->role, sizeof out->role, d->role, "role", e)) ||
        (rc = copy_text(out->granted_to, sizeof out->granted_to, d->granted_to, "granted_to", e))) {
        memset(out, 0, sizeof *out); /* no half-copied decision */
        return rc;
    }
    out->revision = d->revision;
    return CDN_OK;
}

/* Decides req, or n requests differing only in resource (resources non-NULL), into out. */
static int decide(cordon_t *db, const cordon_authz_request *req, const char *const *resources,
                  size_t n, cordon_decision *out, cdn_err_t *e)
{
    authz_request_t r = {0};
    authz_decision_t one, *d = &one;
    json_t *ctx = NULL, *res = NULL;
    int rc;
    if ((rc = api_audit_check(req->caller, req->request_id, e)) != 0 ||
        (rc = parse_obj(req->context_json, "context", &ctx, e)) != 0 ||
        (rc = parse_obj(req->resource_json, "resource attributes", &res, e)) != 0)
        goto done;
    if (resources && !(d = cdn_calloc(n ? n : 1, sizeof *d))) {
        d = NULL;
        rc = cdn_err_set(e, CDN_ERR_NOMEM, "out of memory");
        goto done;
    }
    r = (authz_request_t){req->subject, req->resource,   req->action,   ctx,
                          res,          req->scope_type, req->scope_id, AUTHZ_CACHE_USE};
    /* The data directory's revision, read before the decision: a model write changes memory
     * before it moves the revision, so the decision reflects at least this revision, the one
     * number a model write acknowledged (a consistency token, as a search's). */
    uint64_t rev = cordon_revision(db);
    int past = req->as_of_revision || req->as_of_us;
    rc = past ? api_asof_decide(db, &r, resources, resources ? n : 1, d, &rev, e,
                                req->as_of_revision, req->as_of_us)
              : engine_is_authorized(db->e, &r, resources, resources ? n : 1, d, e);
    for (size_t i = 0; rc == CDN_OK && i < (resources ? n : 1); i++)
        if ((rc = decision_out(&d[i], &out[i], e)) == CDN_OK)
            out[i].revision = rev;
    /* Delegated decisions are asked of their authorizer, now only (the past is not asked). */
    for (size_t i = 0; rc == CDN_OK && !past && i < (resources ? n : 1); i++)
        if (d[i].reason == AUTHZ_PERMISSION_DELEGATED)
            rc = api_pdp_check(db, req, resources ? resources[i] : req->resource, d[i].authorizer,
                               &out[i], e);
    if (rc == CDN_OK && !past) /* a decision the audit cannot record is not given */
        rc = api_audit_decisions(db, req, resources, resources ? n : 1, out, e);
done:
    if (d != &one)
        cdn_free(d);
    json_decref(ctx);
    json_decref(res);
    return rc;
}

int cordon_is_authorized(cordon_t *db, const cordon_authz_request *req, cordon_decision *out,
                         cordon_error *err)
{
    cdn_err_t e = {0, ""};
    if (!db || !req || !out)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_is_authorized needs a request"), &e,
                       err);
    return api_ret(decide(db, req, NULL, 1, out, &e), &e, err);
}

int cordon_is_authorized_batch(cordon_t *db, const cordon_authz_request *req,
                               const char *const *resources, size_t n, cordon_decision *out,
                               cordon_error *err)
{
    cdn_err_t e = {0, ""};
    if (!db || !req || (n && (!resources || !out)))
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID,
                                   "cordon_is_authorized_batch needs a request, and resources "
                                   "and out for n decisions"),
                       &e, err);
    if (n > CORDON_AUTHZ_BATCH_MAX)
        return api_ret(cdn_err_set(&e, CDN_ERR_LIMIT, "%zu resources; the limit is %d", n,
                                   CORDON_AUTHZ_BATCH_MAX),
                       &e, err);
    for (size_t i = 0; i < n; i++)
        if (!resources[i])
            return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "resources[%zu] is NULL", i), &e, err);
    return api_ret(n ? decide(db, req, resources, n, out, &e) : CDN_OK, &e, err);
}

int cordon_view(cordon_t *db, const char *subject_id, char ***principals, size_t *n,
                uint64_t *revision, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    authz_view_t *v;
    int rc;
    if (!db || !subject_id || !principals || !n)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_view needs a subject id"), &e, err);
    uint64_t rev = cordon_revision(db); /* as for decisions: the view reflects at least it */
    if ((rc = engine_view(db->e, subject_id, &v, &e)) != 0)
        return api_ret(rc, &e, err);
    *principals = cdn_calloc(v->n + 1, sizeof(char *));
    *n = 0;
    for (size_t i = 0; *principals && i < v->n; i++)
        if (((*principals)[i] = cdn_strdup(v->principals[i])))
            (*n)++;
    if (revision)
        *revision = rev;
    rc = (*principals && *n == v->n) ? CDN_OK : CDN_ERR_NOMEM;
    authz_view_release(v);
    if (rc) {
        cordon_strings_free(*principals, *n);
        *principals = NULL;
        return api_ret(cdn_err_set(&e, rc, "out of memory"), &e, err);
    }
    return api_ret(CDN_OK, &e, err);
}

void cordon_strings_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        cdn_free(v[i]);
    cdn_free(v);
}

/* The names the ACL index holds for a record's list (prefix "label:" for its labels), each
 * qualified by the record's tenant, into out[n...] in buf (ACL_VIEW_NAME_MAX bytes each). */
static size_t stored_names(json_t *arr, const char *prefix, const char *tenant, char *buf,
                           const char **out, size_t n, size_t max)
{
    size_t i;
    json_t *x;
    char canon[ACL_VIEW_NAME_MAX];
    json_array_foreach(arr, i, x)
    {
        if (n >= max || !json_is_string(x))
            continue;
        snprintf(canon, sizeof canon, "%s%s", prefix, json_string_value(x));
        if (acl_qualify(tenant, canon, buf + n * ACL_VIEW_NAME_MAX, ACL_VIEW_NAME_MAX) == CDN_OK)
            out[n] = buf + n * ACL_VIEW_NAME_MAX, n++;
    }
    return n;
}

int cordon_explain(cordon_t *db, const char *coll, const char *subject_id, const char *id,
                   cordon_explanation *out, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    const char **names = NULL;
    char *buf = NULL;
    authz_explanation_t x;
    json_t *obj;
    int rc;
    if (!db || !coll || !subject_id || !id || !out)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID,
                                   "cordon_explain needs a collection, a "
                                   "subject id and a chunk id"),
                       &e, err);
    /* The record, the model and the tuples are read in separate steps: writers wait for the
     * explanation (an operator's question, not a hot path), so all three and the revision
     * reported are of one state. Every writer holds write_lock from its commit until its
     * revision is visible. */
    pthread_mutex_lock(&db->e->write_lock);
    if ((rc = search_record(db->e, coll, id, &obj, NULL, NULL, &e)) != 0) {
        pthread_mutex_unlock(&db->e->write_lock);
        return api_ret(rc, &e, err);
    }
    /* what an ACL holds: allowed, then denied and the labels, in one array */
    if (!(names = cdn_malloc(ACL_MAX_PRINCIPALS * sizeof *names)) ||
        !(buf = cdn_malloc((size_t)ACL_MAX_PRINCIPALS * ACL_VIEW_NAME_MAX))) {
        pthread_mutex_unlock(&db->e->write_lock);
        cdn_free(names);
        json_decref(obj);
        return api_ret(cdn_err_set(&e, CDN_ERR_NOMEM, "out of memory"), &e, err);
    }
    const char *tenant = json_string_value(json_object_get(obj, "tenant"));
    const char *object = json_string_value(json_object_get(obj, "object"));
    char objp[ACL_PRINCIPAL_MAX + 8] = "", qualified[ACL_VIEW_NAME_MAX] = "";
    json_t *objs = NULL; /* the object's principal is one more allowed name */
    if (object && acl_object_principal(object, objp, sizeof objp, NULL) == CDN_OK) {
        objs = json_pack("[s]", objp);
        acl_qualify(tenant, objp, qualified, sizeof qualified);
    }
    size_t na = stored_names(json_object_get(obj, "allowed"), "", tenant, buf, names, 0,
                             ACL_MAX_PRINCIPALS);
    na = stored_names(objs, "", tenant, buf, names, na, ACL_MAX_PRINCIPALS);
    json_decref(objs);
    size_t nd = stored_names(json_object_get(obj, "denied"), "", tenant, buf, names, na,
                             ACL_MAX_PRINCIPALS);
    nd = stored_names(json_object_get(obj, "labels"), "label:", tenant, buf, names, nd,
                      ACL_MAX_PRINCIPALS) -
         na;
    uint64_t rev = cordon_revision(db);
    rc = engine_explain(db->e, subject_id, names, na, names + na, nd, &x, &e);
    json_decref(obj);
    cdn_free(names);
    cdn_free(buf);
    if (rc == CDN_OK && !x.readable && x.kind == AUTHZ_EXPLAIN_NO_MATCH && objp[0]) {
        /* views do not list objects: ask the tuples whether the subject reads this one */
        char subject[CORDON_ROLE_MAX + 8], *hash = strrchr(objp, '#');
        int ok = 0;
        *hash = '\0';
        snprintf(subject, sizeof subject, "user:%s", subject_id);
        if (cordon_rebac_check(db, subject, hash + 1, objp + 7, &ok, NULL, NULL) == CDN_OK && ok) {
            x.readable = true;
            snprintf(x.principal, sizeof x.principal, "%.*s", (int)sizeof x.principal - 1,
                     qualified);
            snprintf(x.message, sizeof x.message, "readable: allowed to %.200s", qualified);
        }
    }
    pthread_mutex_unlock(&db->e->write_lock);
    if (rc == CDN_OK) {
        memset(out, 0, sizeof *out);
        out->readable = x.readable;
        snprintf(out->principal, sizeof out->principal, "%s", x.principal);
        snprintf(out->message, sizeof out->message, "%s", x.message);
        out->revision = rev;
    }
    return api_ret(rc, &e, err);
}
