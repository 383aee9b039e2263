/* pdp.c: the facade's side of outside authorizers (authz/pdp.h, docs/internals/pdp.md): the
 * question is built from the subject as the model sees it (its roles, groups, tenants and
 * attributes), asked only of subjects the model lets at the collection at all (so an
 * authorizer never learns of, nor reveals, a collection to someone who cannot see it), and
 * the answer becomes a filter the search or read applies beside the native ACL.
 * Relies on authz/pdp and query/engine. */
#include "api/api.h"
#include "base/mem.h"

#include <stdio.h>
#include <string.h>

/* The query no chunk matches: an authorizer's "none". */
static const char MATCH_NONE[] = "{\"bool\":{\"must_not\":[{\"match_all\":{}}]}}";

int api_pdp_has(cordon_t *db, const char *name)
{
    return pdp_has(db->pdp, name);
}

int cordon_authorizer_stats_get(cordon_t *db, cordon_authorizer_stats **out, size_t *n,
                                cordon_error *err)
{
    cdn_err_t e = {0, ""};
    if (!db || !out || !n)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_authorizer_stats_get needs out"),
                       &e, err);
    *out = NULL;
    *n = pdp_count(db->pdp);
    if (*n && !(*out = cdn_calloc(*n, sizeof **out)))
        return api_ret(cdn_err_set(&e, CDN_ERR_NOMEM, "out of memory"), &e, err);
    _Static_assert(sizeof((*out)->name) == PDP_NAME_MAX + 1, "authorizer name sizes must match");
    for (size_t i = 0; i < *n; i++) {
        pdp_stats_t st;
        pdp_stats_get(db->pdp, i, &st);
        memcpy((*out)[i].name, st.name, sizeof st.name);
        memcpy((*out)[i].kind, st.kind, sizeof st.kind);
        (*out)[i].allowed = st.allowed;
        (*out)[i].denied = st.denied;
        (*out)[i].filtered = st.filtered;
        (*out)[i].cached = st.cached;
        (*out)[i].unavailable = st.unavailable;
        (*out)[i].timeouts = st.timeouts;
    }
    return api_ret(CDN_OK, &e, err);
}

/* The names in v after prefix (and without a further ':' when plain), borrowed from v. */
static size_t pick(const authz_view_t *v, const char *prefix, int plain, const char **out)
{
    size_t n = 0, len = strlen(prefix);
    for (size_t i = 0; i < v->n; i++)
        if (!strncmp(v->principals[i], prefix, len) &&
            (!plain || !strchr(v->principals[i] + len, ':')))
            out[n++] = v->principals[i] + len;
    return n;
}

/* user_filter AND plan into *filter (NULL when plan is: the user's filter stands alone). */
static int join(const char *user_filter, const char *plan, char **filter, cdn_err_t *e)
{
    *filter = NULL;
    if (!plan)
        return CDN_OK;
    if (!user_filter)
        return (*filter = cdn_strdup(plan)) ? CDN_OK
                                            : cdn_err_set(e, CDN_ERR_NOMEM, "out of memory");
    size_t n = strlen(user_filter) + strlen(plan) + 32;
    if (!(*filter = cdn_malloc(n)))
        return cdn_err_set(e, CDN_ERR_NOMEM, "out of memory");
    snprintf(*filter, n, "{\"bool\":{\"filter\":[%s,%s]}}", user_filter, plan);
    return CDN_OK;
}

/* Asks authorizer about in (its subject fields filled here from the model). */
static int ask(cordon_t *db, const char *authorizer, pdp_input_t *in, pdp_answer_t *ans,
               cdn_err_t *e)
{
    authz_view_t *v = NULL;
    char *attrs = NULL;
    const char **names = NULL;
    int rc = engine_view(db->e, in->subject_id, &v, e);
    if (rc == CDN_OK)
        rc = engine_subject_attrs(db->e, in->subject_id, &attrs, e);
    if (rc == CDN_OK && !(names = cdn_calloc(3 * (v->n + 1), sizeof *names)))
        rc = cdn_err_set(e, CDN_ERR_NOMEM, "out of memory");
    if (rc == CDN_OK) {
        const char **roles = names, **groups = names + v->n + 1, **tenants = groups + v->n + 1;
        in->roles = roles;
        in->n_roles = pick(v, "role:", 0, roles);
        in->groups = groups;
        in->n_groups = pick(v, "group:", 0, groups);
        in->tenants = tenants;
        in->n_tenants = pick(v, "tenant:", 1, tenants);
        in->attrs_json = attrs;
        rc = pdp_decide(db->pdp, authorizer, in, ans, e);
    }
    cdn_free(names);
    cdn_free(attrs);
    if (v)
        authz_view_release(v);
    return rc;
}

int api_pdp_filter(cordon_t *db, const char *coll, const cordon_subject *s, const char *action,
                   const char *user_filter, char **filter, cordon_authorizer_info *info,
                   cdn_err_t *e)
{
    char authorizer[COLL_AUTHORIZER_MAX + 1], resource[COLL_NAME_MAX + 16];
    coll_t *c;
    memset(info, 0, sizeof *info);
    *filter = NULL;
    if (!atomic_load(&db->e->any_delegated)) /* the common case: no lookup on the hot path */
        return CDN_OK;
    if (engine_coll_get(db->e, coll, &c, e) != CDN_OK) /* the search says it, as it would */
        return CDN_OK;
    memcpy(authorizer, c->cfg.authorizer, sizeof authorizer);
    coll_unref(c);
    if (!authorizer[0])
        return CDN_OK;
    if (!s->subject_id)
        return cdn_err_set(e, CDN_ERR_INVALID,
                           "collection \"%s\" delegates to the authorizer \"%s\": search and "
                           "read it as a subject of the model, not with asserted principals",
                           coll, authorizer);
    /* The model first: a subject it keeps out is not asked about (the search then answers as
     * for a missing collection). */
    authz_request_t req = {0};
    authz_decision_t d;
    snprintf(resource, sizeof resource, "collection:%s", coll);
    req.subject = s->subject_id;
    req.resource = resource;
    req.action = action;
    int rc = engine_is_authorized(db->e, &req, NULL, 0, &d, e);
    if (rc || !d.authorized)
        return CDN_OK;
    pdp_answer_t ans;
    pdp_input_t in = {.subject_id = s->subject_id, .collection = coll, .action = "read"};
    if ((rc = ask(db, authorizer, &in, &ans, e)) != 0)
        return rc;
    memcpy(info->name, authorizer, sizeof info->name);
    info->cached = ans.cached;
    info->age_ms = ans.age_ms;
    info->ttl_ms = ans.ttl_ms;
    rc = join(user_filter,
              ans.kind == PDP_NONE     ? MATCH_NONE
              : ans.kind == PDP_FILTER ? ans.filter_json
                                       : NULL,
              filter, e);
    pdp_answer_free(&ans);
    return rc;
}

int api_pdp_check(cordon_t *db, const cordon_authz_request *req, const char *resource,
                  const char *authorizer, cordon_decision *out, cdn_err_t *e)
{
    pdp_answer_t ans;
    cdn_err_t why = {0, ""};
    pdp_input_t in = {.subject_id = req->subject,
                      .action = req->action,
                      .resource = resource,
                      .resource_attrs_json = req->resource_json,
                      .context_json = req->context_json};
    int rc = ask(db, authorizer, &in, &ans, &why);
    out->authorized = 0;
    snprintf(out->authorizer.name, sizeof out->authorizer.name, "%s", authorizer);
    if (rc == CDN_ERR_NOMEM)
        return cdn_err_set(e, rc, "%s", why.msg);
    if (rc) { /* decided: not authorized, since the one who could allow it did not answer */
        snprintf(out->reason, sizeof out->reason, "AUTHORIZER_UNAVAILABLE");
        return CDN_OK;
    }
    out->authorized = ans.kind == PDP_ALL;
    snprintf(out->reason, sizeof out->reason, "%s",
             out->authorized ? "PERMISSION_GRANTED_BY_AUTHORIZER"
                             : "PERMISSION_DENIED_BY_AUTHORIZER");
    out->authorizer.cached = ans.cached;
    out->authorizer.age_ms = ans.age_ms;
    out->authorizer.ttl_ms = ans.ttl_ms;
    pdp_answer_free(&ans);
    return CDN_OK;
}
