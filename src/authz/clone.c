/* clone.c: a deep copy of a model's state, so that a caller can take a model as it is and
 * move it on without the cost of an export and an import (the permission history rebuilds
 * past models from a kept one this way). Relies on internal.h and jansson. */
#include "authz/internal.h"
#include "authz/rebac.h"

#include <string.h>

#include "base/mem.h"

static int dup_str(char **d, const char *s)
{
    *d = NULL;
    return !s || (*d = cdn_strdup(s)) ? CDN_OK : CDN_ERR_NOMEM;
}

static int ids_copy(az_ids_t *d, const az_ids_t *s)
{
    memset(d, 0, sizeof *d);
    if (!s->n)
        return CDN_OK;
    if (!(d->v = cdn_malloc((size_t)s->n * sizeof *d->v)))
        return CDN_ERR_NOMEM;
    memcpy(d->v, s->v, (size_t)s->n * sizeof *d->v);
    d->n = d->cap = s->n;
    return CDN_OK;
}

static int perm_copy(az_perm_t *d, const az_perm_t *s)
{
    cdn_err_t ignored;
    memset(d, 0, sizeof *d);
    d->res_len = s->res_len;
    d->res_kind = s->res_kind;
    d->any_action = s->any_action;
    d->deny = s->deny;
    int rc = dup_str(&d->resource, s->resource);
    if (!rc)
        rc = dup_str(&d->action, s->action);
    if (!rc)
        rc = dup_str(&d->cond_text, s->cond_text);
    if (!rc)
        rc = dup_str(&d->authorizer, s->authorizer);
    if (!rc && s->cond_src && !(d->cond_src = json_deep_copy(s->cond_src)))
        rc = CDN_ERR_NOMEM;
    /* the compiled form holds no pointers into its source worth sharing: compile again */
    if (!rc && s->cond_src && az_cond_compile(d->cond_src, &d->cond, &ignored))
        rc = CDN_ERR_NOMEM; /* it compiled once: only memory can fail it now */
    return rc;
}

static int grants_copy(az_grants_t *d, const az_grants_t *s)
{
    memset(d, 0, sizeof *d);
    if (!s->n)
        return CDN_OK;
    if (!(d->v = cdn_calloc(s->n, sizeof *d->v)))
        return CDN_ERR_NOMEM;
    d->cap = s->n;
    for (uint32_t i = 0; i < s->n; i++) {
        const az_grant_t *g = s->v[i];
        az_grant_t *c = cdn_calloc(1, sizeof *c);
        if (!c)
            return CDN_ERR_NOMEM;
        d->v[d->n++] = c;
        c->windowed = g->windowed;
        c->from_us = g->from_us;
        c->until_us = g->until_us;
        c->to_kind = g->to_kind;
        c->to = g->to;
        c->role = g->role;
        if (dup_str(&c->scope_type, g->scope_type) || dup_str(&c->scope_id, g->scope_id))
            return CDN_ERR_NOMEM;
        if (g->perm && (!(c->perm = cdn_calloc(1, sizeof *c->perm)) || perm_copy(c->perm, g->perm)))
            return CDN_ERR_NOMEM;
    }
    return CDN_OK;
}

/* Copies the entities of s into d (which has room for them) and indexes them by name. */
static int copy_entities(az_state_t *d, const az_state_t *s)
{
    /* each count covers the entity being filled, so a failure frees what it got */
    for (uint32_t i = 0; i < s->nsubjects; i++) {
        d->nsubjects = i + 1;
        const az_subject_t *x = &s->subjects[i];
        az_subject_t *y = &d->subjects[i];
        y->kind = x->kind;
        if (dup_str(&y->id, x->id) || ids_copy(&y->groups, &x->groups) ||
            ids_copy(&y->all, &x->all) || grants_copy(&y->grants, &x->grants) ||
            (x->attrs && !(y->attrs = json_deep_copy(x->attrs))) ||
            (x->tenants && !(y->tenants = json_deep_copy(x->tenants))) ||
            (y->id && az_map_put(&d->subject_map, y->id, i)))
            return CDN_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < s->ngroups; i++) {
        d->ngroups = i + 1;
        const az_group_t *x = &s->groups[i];
        az_group_t *y = &d->groups[i];
        if (dup_str(&y->id, x->id) || ids_copy(&y->parents, &x->parents) ||
            ids_copy(&y->children, &x->children) || ids_copy(&y->subjects, &x->subjects) ||
            ids_copy(&y->anc, &x->anc) || grants_copy(&y->grants, &x->grants) ||
            (x->attrs && !(y->attrs = json_deep_copy(x->attrs))) ||
            (y->id && az_map_put(&d->group_map, y->id, i)))
            return CDN_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < s->nroles; i++) {
        d->nroles = i + 1;
        const az_role_t *x = &s->roles[i];
        az_role_t *y = &d->roles[i];
        if (dup_str(&y->id, x->id) ||
            (x->nperms && !(y->perms = cdn_calloc(x->nperms, sizeof *y->perms))))
            return CDN_ERR_NOMEM;
        for (uint32_t k = 0; k < x->nperms; k++) {
            y->nperms = k + 1;
            if (perm_copy(&y->perms[k], &x->perms[k]))
                return CDN_ERR_NOMEM;
        }
        if (y->id && az_map_put(&d->role_map, y->id, i))
            return CDN_ERR_NOMEM;
    }
    return CDN_OK;
}

int az_state_clone(const az_state_t *s, az_state_t **out)
{
    az_state_t *d = az_state_new();
    if (!d)
        return CDN_ERR_NOMEM;
    d->subjects = s->nsubjects ? cdn_calloc(s->nsubjects, sizeof *d->subjects) : NULL;
    d->groups = s->ngroups ? cdn_calloc(s->ngroups, sizeof *d->groups) : NULL;
    d->roles = s->nroles ? cdn_calloc(s->nroles, sizeof *d->roles) : NULL;
    d->capsubjects = s->nsubjects;
    d->capgroups = s->ngroups;
    d->caproles = s->nroles;
    int rc =
        (s->nsubjects && !d->subjects) || (s->ngroups && !d->groups) || (s->nroles && !d->roles)
            ? CDN_ERR_NOMEM
            : copy_entities(d, s);
    if (rc) {
        az_state_free(d); /* frees what was copied */
        return rc;
    }
    d->windows = s->windows;
    d->denies = s->denies;
    d->rebac = rb_state_ref(s->rebac); /* shared until one of them writes */
    *out = d;
    return CDN_OK;
}

int authz_model_clone(authz_model_t *src, authz_model_t **out, cdn_err_t *err)
{
    authz_model_t *m;
    az_state_t *d = NULL;
    int rc = authz_model_new(&m, err);
    if (rc)
        return rc;
    pthread_rwlock_rdlock(&src->lock);
    rc = src->broken ? CDN_ERR_INTERNAL : az_state_clone(src->st, &d);
    uint64_t rev = atomic_load(&src->revision);
    pthread_rwlock_unlock(&src->lock);
    if (rc == CDN_OK) {
        az_state_free(m->st);
        m->st = d;
        if (d->nsubjects && !(m->views = cdn_calloc(d->nsubjects, sizeof *m->views)))
            rc = CDN_ERR_NOMEM;
    }
    if (rc) {
        authz_model_free(m);
        return rc == CDN_ERR_INTERNAL
                   ? cdn_err_set(err, rc, "authz: the model to copy is broken")
                   : cdn_err_set(err, CDN_ERR_NOMEM, "authz: out of memory copying the model");
    }
    m->nviews = d->nsubjects;
    atomic_store(&m->revision, rev);
    *out = m;
    return CDN_OK;
}
