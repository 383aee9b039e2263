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

static int roles_from(const az_state_t *st, const az_grants_t *gs, const char *stype,
                      const char *sid, int64_t now, az_ids_t *roles)
{
    for (uint32_t i = 0; i < gs->n; i++) {
        const az_grant_t *g = gs->v[i];
        if (g->role < 0 || !az_grant_active(g, now))
            continue;
        if (g->scope_type && (!stype || strcmp(g->scope_type, stype) || strcmp(g->scope_id, sid)))
            continue;
        if (az_ids_add(roles, (uint32_t)g->role))
            return CDN_ERR_NOMEM;
    }
    (void)st;
    return CDN_OK;
}

/* One allocation: the view, then the pointer array, then the strings. */
/* Writes prefix and name as one string at w (room was counted); the byte after its NUL. */
static char *put_name(char *w, const char *prefix, const char *name)
{
    size_t a = strlen(prefix), b = strlen(name);
    memcpy(w, prefix, a);
    memcpy(w + a, name, b + 1);
    return w + a + b + 1;
}

static int view_compile(const az_state_t *st, uint32_t s, const char *stype, const char *sid,
                        uint64_t rev, int64_t now, authz_view_t **out)
{
    const az_subject_t *sub = &st->subjects[s];
    az_ids_t roles = {0};
    int rc = roles_from(st, &sub->grants, stype, sid, now, &roles);
    for (uint32_t i = 0; i < sub->all.n && !rc; i++)
        rc = roles_from(st, &st->groups[sub->all.v[i]].grants, stype, sid, now, &roles);
    if (rc) {
        az_ids_free(&roles);
        return CDN_ERR_NOMEM;
    }
    const char *self = sub->kind == AZ_KIND_SERVICE ? "service:" : "user:";
    size_t n = 1 + sub->all.n + roles.n;
    size_t bytes = strlen(self) + strlen(sub->id) + 1;
    for (uint32_t i = 0; i < sub->all.n; i++)
        bytes += 6 + strlen(st->groups[sub->all.v[i]].id) + 1;
    for (uint32_t i = 0; i < roles.n; i++)
        bytes += 5 + strlen(st->roles[roles.v[i]].id) + 1;
    size_t head = sizeof(authz_view_t) + n * sizeof(char *);
    authz_view_t *v = cdn_malloc(head + bytes);
    if (!v) {
        az_ids_free(&roles);
        return CDN_ERR_NOMEM;
    }
    const char **ptrs = (const char **)(v + 1);
    char *w = (char *)v + head;
    size_t k = 0;
    ptrs[k++] = w;
    w = put_name(w, self, sub->id);
    for (uint32_t i = 0; i < sub->all.n; i++) {
        ptrs[k++] = w;
        w = put_name(w, "group:", st->groups[sub->all.v[i]].id);
    }
    for (uint32_t i = 0; i < roles.n; i++) {
        ptrs[k++] = w;
        w = put_name(w, "role:", st->roles[roles.v[i]].id);
    }
    az_ids_free(&roles);
    qsort(ptrs, n, sizeof(char *), cmp_str);
    v->revision = rev;
    v->n = n;
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

int authz_explain(authz_model_t *m, const char *subject_id, const char *const *chunk_allowed,
                  size_t n_allowed, const char *const *chunk_denied, size_t n_denied,
                  authz_explanation_t *out, cdn_err_t *err)
{
    if (!m || !out || (n_allowed && !chunk_allowed) || (n_denied && !chunk_denied))
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_explain: NULL argument");
    memset(out, 0, sizeof(*out));
    char p[ACL_PRINCIPAL_MAX + 16];
    int rc;
    /* Validate every ACL name before answering, so a malformed ACL is never half-read; by the
     * write path's own rule, so explain refuses exactly what a write refuses. */
    for (size_t i = 0; i < n_allowed + n_denied; i++) {
        const char *name = i < n_allowed ? chunk_allowed[i] : chunk_denied[i - n_allowed];
        if ((rc = acl_principal_canon(name, p, sizeof(p), err)))
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
    for (size_t i = 0; i < n_denied; i++) {
        acl_principal_canon(chunk_denied[i], p, sizeof(p), NULL);
        if (authz_view_has(v, p)) {
            explain_set(out, AUTHZ_EXPLAIN_DENIED, p, "not readable: denied to");
            authz_view_release(v);
            return CDN_OK;
        }
    }
    if (!n_allowed)
        explain_set(out, AUTHZ_EXPLAIN_NO_ACL, NULL,
                    "not readable: the chunk allows nobody (no ACL means no access)");
    else
        explain_set(out, AUTHZ_EXPLAIN_NO_MATCH, NULL,
                    "not readable: no principal of the subject's view is allowed");
    for (size_t i = 0; i < n_allowed; i++) {
        acl_principal_canon(chunk_allowed[i], p, sizeof(p), NULL);
        if (authz_view_has(v, p)) {
            explain_set(out, AUTHZ_EXPLAIN_ALLOWED, p, "readable: allowed to");
            break;
        }
    }
    authz_view_release(v);
    return CDN_OK;
}
