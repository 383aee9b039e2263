/* slice.c: a model of one subject built from fragments (track.c): the subject, the groups
 * above it, their grants and the roles those grants name, and nothing else. Every decision
 * about that subject (is-authorized, its view, explain) comes out as the whole model's would,
 * because those decisions read nothing else; the permission history builds one from the
 * fragments as they stood at a past revision. Relies on jansson and the entity builders of
 * ops.c and graph.c: the state is the one the op code builds from the same parts. */
#include "authz/internal.h"

#include <string.h>
#include <xxhash.h>

#include "base/mem.h"

#define SLICE_MAX 4096 /* entities one slice may hold: groups above a subject and roles */

typedef struct slice_ent {
    char kind;
    char *id;
    json_t *frag; /* NULL: it did not exist then */
    bool owned;   /* parsed here (authz_slice_give), else borrowed */
} slice_ent_t;

struct authz_slice {
    slice_ent_t *v;
    uint32_t n, cap, next; /* entries [0, next) are given */
    uint32_t *seen;        /* open addressing over entry index + 1 (0 free), mask + 1 slots */
    uint32_t mask;
};

static uint32_t name_slot(const authz_slice_t *s, char kind, const char *id)
{
    return (uint32_t)XXH3_64bits_withSeed(id, strlen(id), (unsigned char)kind) & s->mask;
}

/* Doubles the table of names (kept at most half full). */
static int seen_grow(authz_slice_t *s)
{
    uint32_t slots = s->seen ? 2 * (s->mask + 1) : 64;
    uint32_t *t = cdn_calloc(slots, sizeof *t);
    if (!t)
        return CDN_ERR_NOMEM;
    cdn_free(s->seen);
    s->seen = t;
    s->mask = slots - 1;
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t j = name_slot(s, s->v[i].kind, s->v[i].id);
        while (t[j])
            j = (j + 1) & s->mask;
        t[j] = i + 1;
    }
    return CDN_OK;
}

/* Adds kind/id to the entities to ask for, unless it is there already. */
static int slice_want(authz_slice_t *s, char kind, const char *id)
{
    if ((!s->seen || 2 * (s->n + 1) > s->mask + 1) && seen_grow(s))
        return CDN_ERR_NOMEM;
    uint32_t j = name_slot(s, kind, id);
    for (; s->seen[j]; j = (j + 1) & s->mask) {
        const slice_ent_t *e = &s->v[s->seen[j] - 1];
        if (e->kind == kind && !strcmp(e->id, id))
            return CDN_OK;
    }
    if (s->n == SLICE_MAX)
        return CDN_ERR_LIMIT;
    if (s->n == s->cap) {
        size_t cap = s->cap;
        void *p = s->v;
        if (cdn_grow(&p, &cap, (size_t)s->n + 1, sizeof *s->v))
            return CDN_ERR_NOMEM;
        s->v = p;
        s->cap = (uint32_t)cap;
    }
    if (!(s->v[s->n].id = cdn_strdup(id)))
        return CDN_ERR_NOMEM;
    s->v[s->n].kind = kind;
    s->v[s->n].frag = NULL;
    s->v[s->n].owned = false;
    s->n++;
    s->seen[j] = s->n;
    return CDN_OK;
}

int authz_slice_new(const char *subject_id, authz_slice_t **out, cdn_err_t *err)
{
    authz_slice_t *s = cdn_calloc(1, sizeof *s);
    if (!s || slice_want(s, AUTHZ_ENT_SUBJECT, subject_id)) {
        authz_slice_free(s);
        return cdn_err_set(err, CDN_ERR_NOMEM, "authz: out of memory building a slice");
    }
    *out = s;
    return CDN_OK;
}

void authz_slice_free(authz_slice_t *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n; i++) {
        cdn_free(s->v[i].id);
        if (s->v[i].owned)
            json_decref(s->v[i].frag);
    }
    cdn_free(s->v);
    cdn_free(s->seen);
    cdn_free(s);
}

int authz_slice_need(authz_slice_t *s, char *kind, const char **id)
{
    if (s->next == s->n)
        return 0;
    *kind = s->v[s->next].kind;
    *id = s->v[s->next].id;
    return 1;
}

/* The names a fragment leads to: a subject's groups, a group's parents, the roles of both's
 * grants. */
static int want_refs(authz_slice_t *s, const json_t *frag)
{
    size_t i;
    json_t *x;
    int rc = CDN_OK;
    json_t *up = json_object_get(frag, "groups");
    if (!up)
        up = json_object_get(frag, "parents");
    json_array_foreach(up, i, x)
    {
        if (!json_is_string(x))
            return CDN_ERR_CORRUPT;
        if ((rc = slice_want(s, AUTHZ_ENT_GROUP, json_string_value(x))) != 0)
            return rc;
    }
    json_array_foreach(json_object_get(frag, "grants"), i, x)
    {
        const char *role = json_string_value(json_object_get(x, "role"));
        if (role && (rc = slice_want(s, AUTHZ_ENT_ROLE, role)) != 0)
            return rc;
    }
    return CDN_OK;
}

int authz_slice_give_json(authz_slice_t *s, json_t *frag, cdn_err_t *err)
{
    if (s->next == s->n)
        return cdn_err_set(err, CDN_ERR_INVALID, "authz: the slice needs no more fragments");
    uint32_t at = s->next; /* an index: want_refs may move the entries */
    int rc = CDN_OK;
    if (frag && !json_is_object(frag))
        return cdn_err_set(err, CDN_ERR_CORRUPT, "authz: the fragment of '%s' is not an object",
                           s->v[at].id);
    s->v[at].frag = frag;
    s->v[at].owned = false;
    s->next++;
    if (frag && s->v[at].kind != AUTHZ_ENT_ROLE)
        rc = want_refs(s, frag);
    if (rc == CDN_ERR_LIMIT)
        return cdn_err_set(err, rc, "authz: more than %d groups and roles above subject '%s'",
                           SLICE_MAX, s->v[0].id);
    if (rc)
        return cdn_err_set(err, rc, "authz: the fragment of '%s' is %s", s->v[at].id,
                           rc == CDN_ERR_NOMEM ? "too big for memory" : "malformed");
    return CDN_OK;
}

int authz_slice_give(authz_slice_t *s, const char *fragment, size_t n, cdn_err_t *err)
{
    json_error_t je;
    json_t *frag = NULL;
    if (fragment && !(frag = json_loadb(fragment, n, 0, &je)))
        return cdn_err_set(err, CDN_ERR_CORRUPT, "authz: a fragment is not JSON: %s", je.text);
    uint32_t at = s->next;
    int rc = authz_slice_give_json(s, frag, err);
    if (at < s->next)
        s->v[at].owned = true; /* freed with the slice */
    else
        json_decref(frag);
    return rc;
}

/* The entity's permissions, built as put_role builds them (conditions compiled). */
static int role_build(az_state_t *st, az_role_t *r, const json_t *ps, cdn_err_t *err)
{
    size_t n = json_array_size(ps);
    if (!json_is_array(ps))
        return CDN_ERR_CORRUPT;
    if (n && !(r->perms = cdn_calloc(n, sizeof *r->perms)))
        return CDN_ERR_NOMEM;
    for (size_t k = 0; k < n; k++) {
        int rc = az_perm_build(json_array_get(ps, k), "permissions", &r->perms[k], err);
        if (rc)
            return rc;
        r->nperms = (uint32_t)k + 1;
        st->denies |= r->perms[k].deny;
    }
    return CDN_OK;
}

/* One grant of a fragment, to entity `to` of the kind given: skipped when it names a role the
 * slice does not hold (deleted then, with its grants). */
static int grant_build(az_state_t *st, const json_t *src, int to_group, uint32_t to, cdn_err_t *err)
{
    const char *role = json_string_value(json_object_get(src, "role"));
    const json_t *perm = json_object_get(src, "permission"), *scope = json_object_get(src, "scope");
    uint32_t ri = 0;
    if (role && !az_role_get(st, role, &ri))
        return CDN_OK;
    if (!role == !perm)
        return CDN_ERR_CORRUPT;
    az_grant_t *g = cdn_calloc(1, sizeof *g);
    int rc = g ? CDN_OK : CDN_ERR_NOMEM;
    if (rc == CDN_OK) {
        g->to_kind = to_group ? AZ_TO_GROUP : AZ_TO_SUBJECT;
        g->to = to;
        g->role = role ? (int64_t)ri : -1;
    }
    if (rc == CDN_OK && perm)
        rc = !(g->perm = cdn_calloc(1, sizeof *g->perm))
                 ? CDN_ERR_NOMEM
                 : az_perm_build(perm, "permission", g->perm, err);
    if (rc && g && g->perm && !g->perm->resource) { /* az_perm_build left nothing to clear */
        cdn_free(g->perm);
        g->perm = NULL;
    }
    if (rc == CDN_OK && json_is_object(scope)) {
        const char *t = json_string_value(json_object_get(scope, "type")),
                   *i = json_string_value(json_object_get(scope, "id"));
        if (!t || !i)
            rc = CDN_ERR_CORRUPT;
        else if (!(g->scope_type = cdn_strdup(t)) || !(g->scope_id = cdn_strdup(i)))
            rc = CDN_ERR_NOMEM;
    }
    if (rc == CDN_OK)
        rc = az_window_parse(json_object_get(src, "valid"), g, "grant", err);
    az_grants_t *gs = to_group ? &st->groups[to].grants : &st->subjects[to].grants;
    if (rc == CDN_OK && (rc = az_grants_push(gs, g)) == CDN_OK) {
        st->windows |= g->windowed;
        st->denies |= g->perm && g->perm->deny;
        return CDN_OK;
    }
    az_grant_free(g);
    return rc;
}

/* The entities first, then the edges between those that existed, then the grants: the state
 * the op code would have built from the same parts, without parsing ops. */
typedef struct ordered {
    json_int_t order; /* a group's place in the whole model; 0 for the rest */
    const slice_ent_t *e;
} ordered_t;

static int cmp_order(const void *a, const void *b)
{
    const ordered_t *x = a, *y = b;
    return x->order < y->order ? -1 : x->order > y->order ? 1 : (x->e > y->e) - (x->e < y->e);
}

static int build(const authz_slice_t *s, az_state_t *st, cdn_err_t *err)
{
    int rc = CDN_OK;
    uint32_t idx;
    /* Groups are created in the whole model's order (their fragments' "order"), so a subject's
     * groups are scanned as the whole model scans them. */
    ordered_t *by = cdn_malloc((s->n ? s->n : 1) * sizeof *by);
    if (!by)
        return CDN_ERR_NOMEM;
    for (uint32_t i = 0; i < s->n; i++) {
        const slice_ent_t *e = &s->v[i];
        by[i].e = e;
        by[i].order = e->kind == AUTHZ_ENT_GROUP && e->frag
                          ? json_integer_value(json_object_get(e->frag, "order"))
                          : 0;
    }
    qsort(by, s->n, sizeof *by, cmp_order);
    for (uint32_t i = 0; i < s->n && !rc; i++) {
        const slice_ent_t *e = by[i].e;
        if (!e->frag)
            continue;
        if (e->kind == AUTHZ_ENT_SUBJECT) {
            const char *kind = json_string_value(json_object_get(e->frag, "kind"));
            json_t *attrs = json_object_get(e->frag, "attributes");
            if (!kind || !json_is_object(attrs))
                rc = CDN_ERR_CORRUPT;
            else if ((rc = az_subject_add(st, e->id, &idx)) != 0)
                break;
            else {
                st->subjects[idx].kind = strcmp(kind, "service") ? AZ_KIND_USER : AZ_KIND_SERVICE;
                /* a copy: the fragment may be shared with other threads' slices */
                json_t *ten = json_object_get(e->frag, "tenants");
                if (!(st->subjects[idx].attrs = json_deep_copy(attrs)))
                    rc = CDN_ERR_NOMEM;
                else if (ten && !json_is_array(ten))
                    rc = CDN_ERR_CORRUPT;
                else if (ten && !(st->subjects[idx].tenants = json_deep_copy(ten)))
                    rc = CDN_ERR_NOMEM;
            }
        } else if (e->kind == AUTHZ_ENT_GROUP) {
            rc = az_group_add(st, e->id, &idx);
        } else if ((rc = az_role_add(st, e->id, &idx)) == CDN_OK) {
            rc = role_build(st, &st->roles[idx], json_object_get(e->frag, "permissions"), err);
        }
    }
    cdn_free(by);
    for (uint32_t i = 0; i < s->n && !rc; i++) {
        const slice_ent_t *e = &s->v[i];
        size_t k;
        json_t *x;
        uint32_t g, me;
        if (!e->frag || e->kind == AUTHZ_ENT_ROLE)
            continue;
        int sub = e->kind == AUTHZ_ENT_SUBJECT;
        if (!(sub ? az_subject_get(st, e->id, &me) : az_group_get(st, e->id, &me)))
            return CDN_ERR_CORRUPT;
        json_array_foreach(json_object_get(e->frag, sub ? "groups" : "parents"), k, x)
        {
            /* a group gone then was gone from its members' fragments too */
            if (!rc && json_is_string(x) && az_group_get(st, json_string_value(x), &g))
                rc = az_graph_link(st, g, me, !sub);
        }
        json_array_foreach(json_object_get(e->frag, "grants"), k, x)
        {
            if (!rc)
                rc = grant_build(st, x, !sub, me, err);
        }
    }
    return rc ? rc : az_graph_flatten(st);
}

int authz_slice_model(authz_slice_t *s, authz_model_t **out, cdn_err_t *err)
{
    authz_model_t *m;
    cdn_err_t inner = {0, ""};
    if (s->next != s->n)
        return cdn_err_set(err, CDN_ERR_INVALID, "authz: the slice still needs fragments");
    int rc = az_model_alloc(false, &m);
    if (rc)
        return cdn_err_set(err, rc, "authz: out of memory building a slice");
    if ((rc = build(s, m->st, &inner)) == CDN_OK && m->st->nsubjects &&
        !(m->views = cdn_calloc(m->st->nsubjects, sizeof *m->views)))
        rc = CDN_ERR_NOMEM;
    if (rc) {
        authz_model_free(m);
        return rc == CDN_ERR_NOMEM
                   ? cdn_err_set(err, rc, "authz: out of memory building a slice")
                   : cdn_err_set(err, CDN_ERR_CORRUPT, "authz: the fragments of '%s' disagree: %s",
                                 s->v[0].id, inner.msg);
    }
    m->nviews = m->st->nsubjects;
    *out = m;
    return CDN_OK;
}
