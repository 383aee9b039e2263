/* model_view.c: a subject's view (its principals, flattened) compiled from the kept-current group
 * closure, cached per subject until the next op, and chunk-ACL explanations. Relies on
 * model.c's structures, base/mem.h and acl/'s rule for principal names. */
#include "authz/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "base/mem.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names a view is compiled from, before they are packed into one allocation. */
typedef struct vnames {
    char **v;
    size_t n, cap, bytes;
    bool nomem;
} vnames_t;

static void vn_add(vnames_t *vn, const char *a, const char *b, const char *c)
{
    char *s;
    size_t la = strlen(a), lb = strlen(b), lc = c ? strlen(c) : 0;
    void *q = vn->v;
    if (vn->nomem || cdn_grow(&q, &vn->cap, vn->n + 1, sizeof(char *)) ||
        !(s = cdn_malloc(la + lb + lc + 1))) {
        vn->nomem = true;
        return;
    }
    vn->v = q;
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, c ? c : "", lc + 1);
    vn->v[vn->n++] = s;
    vn->bytes += la + lb + lc + 1;
}

static void vn_free(vnames_t *vn)
{
    for (size_t i = 0; i < vn->n; i++)
        cdn_free(vn->v[i]);
    cdn_free(vn->v);
}

/* The tenant a grant's scope names when the subject belongs to it, else NULL. */
static const char *member_tenant(const az_subject_t *sub, const az_grant_t *g)
{
    size_t i;
    json_t *t;
    if (!g->scope_type || strcmp(g->scope_type, "tenant") || !sub->tenants)
        return NULL;
    json_array_foreach(sub->tenants, i, t) if (!strcmp(json_string_value(t),
                                                       g->scope_id)) return json_string_value(t);
    return NULL;
}

/* A deny that takes a label from searches: read (or any action) on exactly "label:NAME". */
static const char *denied_label(const az_perm_t *p)
{
    if (!p->deny || p->res_kind != AZ_RES_EXACT || strncmp(p->resource, "label:", 6) ||
        (!p->any_action && strcmp(p->action, "read")))
        return NULL;
    return p->resource + 6;
}

/* What one list of grants adds to the view: roles granted unscoped (or in the scope asked
 * for), roles granted in a tenant of the subject (qualified by it), and the labels its denies
 * take away, likewise. */
static void view_grants(const az_state_t *st, const az_subject_t *sub, const az_grants_t *gs,
                        const char *stype, const char *sid, int64_t now, vnames_t *vn)
{
    for (uint32_t i = 0; i < gs->n; i++) {
        const az_grant_t *g = gs->v[i];
        if (!az_grant_active(g, now))
            continue;
        bool here =
            !g->scope_type || (stype && !strcmp(g->scope_type, stype) && !strcmp(g->scope_id, sid));
        const char *tenant = here ? NULL : member_tenant(sub, g);
        char pre[AUTHZ_NAME_MAX + 16];
        if (!here && !tenant)
            continue;
        snprintf(pre, sizeof pre, "%s%s%s", tenant ? "tenant:" : "", tenant ? tenant : "",
                 tenant ? ":" : "");
        if (g->role >= 0)
            vn_add(vn, pre, "role:", st->roles[g->role].id);
        const az_perm_t *ps = g->role >= 0 ? st->roles[g->role].perms : g->perm;
        uint32_t n = g->role >= 0 ? st->roles[g->role].nperms : 1;
        for (uint32_t k = 0; k < n && st->denies; k++) {
            const char *label = denied_label(&ps[k]);
            if (label)
                vn_add(vn, pre, "label:", label);
        }
    }
}

/* One allocation: the view, then the pointer array, then the strings. */
static int view_compile(const az_state_t *st, uint32_t s, const char *stype, const char *sid,
                        uint64_t rev, int64_t now, authz_view_t **out)
{
    const az_subject_t *sub = &st->subjects[s];
    vnames_t vn = {0};
    size_t i;
    json_t *t;
    vn_add(&vn, sub->kind == AZ_KIND_SERVICE ? "service:" : "user:", sub->id, NULL);
    for (uint32_t k = 0; k < sub->all.n; k++)
        vn_add(&vn, "group:", st->groups[sub->all.v[k]].id, NULL);
    if (sub->tenants)
        json_array_foreach(sub->tenants, i, t) vn_add(&vn, "tenant:", json_string_value(t), NULL);
    view_grants(st, sub, &sub->grants, stype, sid, now, &vn);
    for (uint32_t k = 0; k < sub->all.n; k++)
        view_grants(st, sub, &st->groups[sub->all.v[k]].grants, stype, sid, now, &vn);
    if (vn.nomem) {
        vn_free(&vn);
        return CDN_ERR_NOMEM;
    }
    qsort(vn.v, vn.n, sizeof(char *), cmp_str);
    size_t head = sizeof(authz_view_t) + vn.n * sizeof(char *);
    authz_view_t *v = cdn_malloc(head + vn.bytes);
    if (!v) {
        vn_free(&vn);
        return CDN_ERR_NOMEM;
    }
    const char **ptrs = (const char **)(v + 1);
    char *w = (char *)v + head;
    size_t k = 0;
    for (size_t j = 0; j < vn.n; j++) {
        if (k && !strcmp(ptrs[k - 1], vn.v[j]))
            continue; /* a role or label reached twice */
        size_t len = strlen(vn.v[j]) + 1;
        memcpy(w, vn.v[j], len);
        ptrs[k++] = w;
        w += len;
    }
    vn_free(&vn);
    v->revision = rev;
    v->n = k;
    v->principals = ptrs;
    atomic_init(&v->refs_, 1);
    *out = v;
    return CDN_OK;
}

bool authz_view_has(const authz_view_t *v, const char *principal)
{
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(v->principals[mid], principal);
        if (!c)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

int az_view_get_locked(authz_model_t *m, const char *subject_id, const char *stype, const char *sid,
                       authz_view_t **out, cdn_err_t *err)
{
    uint32_t s;
    *out = NULL;
    if (m->broken)
        return cdn_err_set(err, CDN_ERR_INTERNAL,
                           "the authorization model is broken after an out-of-memory error; "
                           "import or reopen it");
    if (!az_subject_find(m->st, subject_id, &s))
        return cdn_err_set(err, CDN_ERR_NOT_FOUND, "subject '%.64s' is not in the model",
                           subject_id);
    /* With validity windows a view depends on the time too: it is compiled each time. */
    bool cache = !stype && s < m->nviews && !m->st->windows;
    if (cache && (*out = atomic_load(&m->views[s]))) {
        /* Only current views sit in the table (writers empty it), and none is freed while we
         * hold the read lock, so taking a reference here is safe. */
        atomic_fetch_add(&(*out)->refs_, 1);
        return CDN_OK;
    }
    if (view_compile(m->st, s, stype, sid, atomic_load(&m->revision), az_model_now(m), out))
        return cdn_err_set(err, CDN_ERR_NOMEM, "authz_view: out of memory");
    if (cache) {
        authz_view_t *expected = NULL;
        atomic_fetch_add(&(*out)->refs_, 1); /* the table's reference */
        if (atomic_compare_exchange_strong(&m->views[s], &expected, *out))
            atomic_store(&m->views_cached, 1);
        else
            atomic_fetch_sub(&(*out)->refs_, 1); /* another reader cached its own copy */
    }
    return CDN_OK;
}

static int view_get(authz_model_t *m, const char *subject_id, const char *stype, const char *sid,
                    authz_view_t **out, cdn_err_t *err)
{
    if (!m || !subject_id || !out)
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_view: NULL argument");
    pthread_rwlock_rdlock(&m->lock);
    int rc = az_view_get_locked(m, subject_id, stype, sid, out, err);
    pthread_rwlock_unlock(&m->lock);
    return rc;
}

int authz_view(authz_model_t *m, const char *subject_id, authz_view_t **out, cdn_err_t *err)
{
    return view_get(m, subject_id, NULL, NULL, out, err);
}

int authz_subject_attrs(authz_model_t *m, const char *subject_id, char **json, cdn_err_t *err)
{
    uint32_t s;
    int rc = CDN_OK;
    *json = NULL;
    pthread_rwlock_rdlock(&m->lock);
    if (m->broken)
        rc = cdn_err_set(err, CDN_ERR_INTERNAL, "the authorization model is broken");
    else if (!az_subject_find(m->st, subject_id, &s))
        rc = cdn_err_set(err, CDN_ERR_NOT_FOUND, "subject '%.64s' is not in the model", subject_id);
    else if (m->st->subjects[s].attrs) {
        char *d = json_dumps(m->st->subjects[s].attrs, JSON_COMPACT | JSON_SORT_KEYS);
        if (!d || !(*json = cdn_strdup(d)))
            rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
        free(d);
    }
    pthread_rwlock_unlock(&m->lock);
    return rc;
}

int authz_view_scoped(authz_model_t *m, const char *subject_id, const char *scope_type,
                      const char *scope_id, authz_view_t **out, cdn_err_t *err)
{
    if (!scope_type != !scope_id)
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_view_scoped: give both scope type and id");
    return view_get(m, subject_id, scope_type, scope_id, out, err);
}

static void explain_set(authz_explanation_t *out, authz_explain_kind_t kind, const char *principal,
                        const char *msg)
{
    out->kind = kind;
    out->readable = kind == AUTHZ_EXPLAIN_ALLOWED;
    size_t n = principal ? strnlen(principal, sizeof(out->principal) - 1) : 0;
    memcpy(out->principal, principal ? principal : "", n);
    out->principal[n] = '\0';
    snprintf(out->message, sizeof(out->message), "%s%s%.*s", msg, principal ? " " : "", (int)n,
             out->principal);
}

/* "tenant:T:" at the start of a stored name: T copied to tenant, the rest returned; or the
 * name itself when it is not qualified. */
static const char *unqualify(const char *name, char *tenant, size_t cap)
{
    const char *colon;
    tenant[0] = '\0';
    if (strncmp(name, "tenant:", 7) || !(colon = strchr(name + 7, ':')))
        return name;
    snprintf(tenant, cap, "%.*s", (int)(colon - name - 7), name + 7);
    return colon + 1;
}

int authz_explain(authz_model_t *m, const char *subject_id, const char *const *chunk_allowed,
                  size_t n_allowed, const char *const *chunk_denied, size_t n_denied,
                  authz_explanation_t *out, cdn_err_t *err)
{
    if (!m || !out || (n_allowed && !chunk_allowed) || (n_denied && !chunk_denied))
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_explain: NULL argument");
    memset(out, 0, sizeof(*out));
    char p[ACL_VIEW_NAME_MAX], tenant[ACL_TAG_MAX + 1], msg[ACL_TAG_MAX + 96];
    int rc;
    /* Validate every ACL name before answering, so a malformed ACL is never half-read. */
    for (size_t i = 0; i < n_allowed + n_denied; i++) {
        const char *name = i < n_allowed ? chunk_allowed[i] : chunk_denied[i - n_allowed];
        if ((rc = acl_view_canon(name, p, sizeof(p), err)))
            return rc;
    }
    authz_view_t *v;
    cdn_err_t verr;
    rc = authz_view(m, subject_id ? subject_id : "", &v, &verr);
    if (rc == CDN_ERR_NOT_FOUND || (rc == CDN_ERR_INVALID && !subject_id)) {
        out->revision = authz_model_revision(m);
        explain_set(out, AUTHZ_EXPLAIN_SUBJECT_NOT_FOUND, NULL,
                    "not readable: the subject is not in the model");
        return CDN_OK;
    }
    if (rc)
        return cdn_err_set(err, rc, "%s", verr.msg);
    out->revision = v->revision;
    acl_set_t held; /* what the view reaches, tenants' qualified names included */
    rc = acl_set_build(v->principals, v->n, &held, err);
    authz_view_release(v);
    if (rc)
        return rc;
    for (size_t i = 0; i < n_denied; i++) {
        acl_view_canon(chunk_denied[i], p, sizeof(p), NULL);
        if (acl_set_has(&held, p)) {
            const char *bare = unqualify(p, tenant, sizeof tenant);
            if (!strncmp(bare, "label:", 6)) {
                snprintf(msg, sizeof msg, "not readable: the model denies the subject label %s",
                         bare + 6);
                explain_set(out, AUTHZ_EXPLAIN_LABEL_DENIED, NULL, msg);
                snprintf(out->principal, sizeof out->principal, "%.*s",
                         (int)sizeof out->principal - 1, p);
            } else {
                explain_set(out, AUTHZ_EXPLAIN_DENIED, p, "not readable: denied to");
            }
            acl_set_free(&held);
            return CDN_OK;
        }
    }
    if (!n_allowed) {
        explain_set(out, AUTHZ_EXPLAIN_NO_ACL, NULL,
                    "not readable: the chunk allows nobody (no ACL means no access)");
    } else {
        acl_view_canon(chunk_allowed[0], p, sizeof(p), NULL);
        unqualify(p, tenant, sizeof tenant);
        snprintf(msg, sizeof msg, "tenant:%s", tenant);
        if (tenant[0] && !acl_set_has(&held, msg)) {
            snprintf(msg, sizeof msg,
                     "not readable: the chunk belongs to tenant %s, which the subject is not in",
                     tenant);
            explain_set(out, AUTHZ_EXPLAIN_OTHER_TENANT, NULL, msg);
        } else {
            explain_set(out, AUTHZ_EXPLAIN_NO_MATCH, NULL,
                        "not readable: no principal of the subject's view is allowed");
        }
    }
    for (size_t i = 0; i < n_allowed; i++) {
        acl_view_canon(chunk_allowed[i], p, sizeof(p), NULL);
        if (acl_set_has(&held, p)) {
            explain_set(out, AUTHZ_EXPLAIN_ALLOWED, p, "readable: allowed to");
            break;
        }
    }
    acl_set_free(&held);
    return CDN_OK;
}
