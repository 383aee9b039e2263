/* engine_reach.c: the principal ids a subject reaches, which a search unions: the names of its
 * view (engine_view_ids) and the objects of the relationship tuples it reads.
 * When chunks name objects ("object:type:id#perm" in their ACLs), a subject of the model reads
 * those whose permission it holds. engine_objects_add walks the tuples from the subject
 * (authz_rebac_objects) and turns the objects' names into ids of the principal table once, so
 * that a search unions bitmaps without handling a name per object (a reader of 95,000 documents
 * spent most of a search there). A small cache keeps the ids of the last subjects, keyed by all
 * they depend on: the subject, the model's revision (every model write moves it), the number of
 * permissions objects name, and the principal table's length they were taken at (ids are never
 * taken back, so the names before it are the same; an entry up to 256 names behind serves,
 * the names since judged one by one). Principals interned after the ids were taken (a chunk
 * naming a new object, written before the request read the ACLs) are judged one by one when the
 * request reads its ids (engine_subject_ids). Relies on engine.h, acl/ and authz/. */
#include "base/arena.h"
#include "base/cmp.h"
#include "base/mem.h"
#include "query/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OBJCACHE_SLOTS 32
#define OBJCACHE_IDS_MAX 262144 /* longer lists are not kept: at most 32 MiB in all */
#define OBJCACHE_LAG_MAX 256    /* names interned since an entry that a request judges itself */

typedef struct oc_entry {
    char self[ENGINE_SELF_MAX];
    size_t nperms, gen;
    uint64_t rev, used;
    uint32_t *ids; /* sorted, unique; NULL: an empty slot */
    size_t n;
} oc_entry_t;

struct engine_objcache {
    pthread_mutex_t lock;
    oc_entry_t e[OBJCACHE_SLOTS];
    uint64_t tick;
};

int engine_objcache_new(engine_objcache_t **out)
{
    engine_objcache_t *c = cdn_calloc(1, sizeof *c);
    if (!c)
        return CDN_ERR_NOMEM;
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return CDN_OK;
}

void engine_objcache_free(engine_objcache_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < OBJCACHE_SLOTS; i++)
        cdn_free(c->e[i].ids);
    pthread_mutex_destroy(&c->lock);
    cdn_free(c);
}

static int oc_match(const oc_entry_t *x, const char *self, size_t nperms, uint64_t rev, size_t gen)
{
    return x->ids && x->rev == rev && x->gen == gen && x->nperms == nperms &&
           !strcmp(x->self, self);
}

/* A copy of the ids kept for the subject at the revision, taken when the principal table was
 * at most OBJCACHE_LAG_MAX names shorter than *gen now (the newest such entry): 1 (found, *gen
 * then the length they were taken at; the names since are judged on their own when the
 * request reads its ids), 0 (none) or CDN_ERR_NOMEM. */
static int oc_get(engine_objcache_t *c, const char *self, size_t nperms, uint64_t rev, size_t *gen,
                  uint32_t **ids, size_t *n)
{
    oc_entry_t *best = NULL;
    int found = 0;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < OBJCACHE_SLOTS; i++) {
        oc_entry_t *x = &c->e[i];
        if (x->ids && x->rev == rev && x->nperms == nperms && x->gen <= *gen &&
            *gen - x->gen <= OBJCACHE_LAG_MAX && !strcmp(x->self, self) &&
            (!best || x->gen > best->gen))
            best = x;
    }
    if (best) {
        best->used = ++c->tick;
        found = (*ids = cdn_malloc((best->n ? best->n : 1) * sizeof **ids)) ? 1 : CDN_ERR_NOMEM;
        if (found == 1) {
            if (best->n)
                memcpy(*ids, best->ids, best->n * sizeof **ids);
            *n = best->n;
            *gen = best->gen;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return found;
}

/* Keeps a copy of ids for the key in the least recently used slot (nothing when out of memory
 * or too long: the cache only saves work). */
static void oc_put(engine_objcache_t *c, const char *self, size_t nperms, uint64_t rev, size_t gen,
                   const uint32_t *ids, size_t n)
{
    uint32_t *copy;
    if (n > OBJCACHE_IDS_MAX || strlen(self) >= ENGINE_SELF_MAX ||
        !(copy = cdn_malloc((n ? n : 1) * sizeof *copy)))
        return;
    if (n)
        memcpy(copy, ids, n * sizeof *copy);
    pthread_mutex_lock(&c->lock);
    oc_entry_t *v = &c->e[0];
    for (int i = 0; i < OBJCACHE_SLOTS; i++) {
        if (oc_match(&c->e[i], self, nperms, rev, gen)) { /* a racing request kept it first */
            v = NULL;
            break;
        }
        if (!c->e[i].ids || c->e[i].used < v->used)
            v = &c->e[i];
        if (!c->e[i].ids)
            break;
    }
    if (v) {
        cdn_free(v->ids);
        *v = (oc_entry_t){
            .nperms = nperms, .gen = gen, .rev = rev, .used = ++c->tick, .ids = copy, .n = n};
        snprintf(v->self, sizeof v->self, "%s", self);
        copy = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    cdn_free(copy);
}

/* Sorts ids and drops repeats; the new count. */
static size_t sort_unique(uint32_t *ids, size_t n)
{
    size_t j = 0;
    if (n > 1)
        qsort(ids, n, sizeof *ids, cdn_cmp_u32);
    for (size_t i = 0; i < n; i++)
        if (j == 0 || ids[j - 1] != ids[i])
            ids[j++] = ids[i];
    return j;
}

typedef struct idvec {
    uint32_t *v;
    size_t n, cap;
    const acl_intern_t *t;
    int nomem;
} idvec_t;

static int idvec_push(idvec_t *x, uint32_t id)
{
    void *p = x->v;
    if (x->n == x->cap && cdn_grow(&p, &x->cap, x->n + 1, sizeof *x->v))
        return x->nomem = CDN_ERR_NOMEM;
    x->v = p;
    x->v[x->n++] = id;
    return CDN_OK;
}

/* acl_view_expand's callback: the id of a name chunks carry, if any does. */
static int id_of(void *ctx, const char *name)
{
    idvec_t *x = ctx;
    uint32_t id;
    return acl_intern_get(x->t, name, &id) == CDN_OK ? idvec_push(x, id) : CDN_OK;
}

/* The names of the objects the walk finds ("object:type:id#perm"), in an arena. */
typedef struct names {
    const char **v;
    size_t n, cap;
    cdn_arena_t arena;
} names_t;

static int add_name(void *ctx, const char *name)
{
    names_t *o = ctx;
    size_t len = strlen(name);
    char *s = cdn_arena_alloc(&o->arena, len + 8);
    void *p = o->v;
    if (!s || (o->n == o->cap && cdn_grow(&p, &o->cap, o->n + 1, sizeof *o->v)))
        return CDN_ERR_NOMEM;
    o->v = p;
    memcpy(s, "object:", 7);
    memcpy(s + 7, name, len + 1);
    o->v[o->n++] = s;
    return CDN_OK;
}

/* The tenant memberships of a view ("tenant:T"): what qualifies an object's name for a chunk
 * of tenant T. */
static int is_membership(const char *name)
{
    return !strncmp(name, "tenant:", 7) && !strchr(name + 7, ':');
}

/* names -> ids under the principal table's lock, each name also as every tenant of the view
 * qualifies it; *gen: the table's length they were read at. */
static int ids_of_names(engine_t *e, const authz_view_t *view, names_t *o, idvec_t *out,
                        size_t *gen)
{
    size_t nt = 0;
    for (size_t i = 0; i < view->n; i++)
        nt += is_membership(view->principals[i]);
    const char **all = nt ? cdn_malloc((nt + o->n) * sizeof *all) : o->v;
    if (nt && !all)
        return CDN_ERR_NOMEM;
    if (nt) {
        size_t k = 0;
        for (size_t i = 0; i < view->n; i++)
            if (is_membership(view->principals[i]))
                all[k++] = view->principals[i];
        if (o->n)
            memcpy(all + nt, o->v, o->n * sizeof *all);
    }
    out->t = &e->principals;
    pthread_rwlock_rdlock(&e->meta_lock);
    *gen = e->principals.len;
    acl_view_expand(all, nt + o->n, id_of, out);
    pthread_rwlock_unlock(&e->meta_lock);
    if (nt)
        cdn_free(all);
    if (out->nomem)
        return CDN_ERR_NOMEM;
    out->n = sort_unique(out->v, out->n);
    return CDN_OK;
}

int engine_view_ids(engine_t *e, const char *const *names, size_t n, uint32_t **ids, size_t *nids,
                    cdn_err_t *err)
{
    /* Names are made canonical first (a view's are already; asserted ones may be bare group
     * names), then expanded: a tenant membership reaches its chunks' qualified names. */
    char one[ACL_VIEW_NAME_MAX];
    cdn_arena_t arena;
    const char **canon = cdn_malloc((n ? n : 1) * sizeof *canon);
    idvec_t v = {.t = &e->principals};
    int rc = canon ? CDN_OK : cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    cdn_arena_init(&arena, 16384, 0);
    for (size_t i = 0; i < n && rc == CDN_OK; i++) {
        if (!names[i])
            rc = cdn_err_set(err, CDN_ERR_INVALID, "subject principal %zu is NULL", i);
        else if ((rc = acl_view_canon(names[i], one, sizeof one, err)) == CDN_OK &&
                 !(canon[i] = cdn_arena_strdup(&arena, one)))
            rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    }
    if (rc == CDN_OK) {
        pthread_rwlock_rdlock(&e->meta_lock);
        acl_view_expand(canon, n, id_of, &v);
        pthread_rwlock_unlock(&e->meta_lock);
        if (v.nomem || (!v.v && !(v.v = cdn_malloc(sizeof *v.v))))
            rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    }
    cdn_arena_free(&arena);
    cdn_free(canon);
    if (rc) {
        cdn_free(v.v);
        return rc;
    }
    *nids = sort_unique(v.v, v.n);
    *ids = v.v;
    return CDN_OK;
}

int engine_objects_add(engine_t *e, engine_subject_t *s, cdn_err_t *err)
{
    char perms[ENGINE_OBJECT_PERMS_MAX][64];
    const char *pp[ENGINE_OBJECT_PERMS_MAX];
    names_t o = {0};
    idvec_t ids = {0};
    uint64_t rev;
    size_t np, gen;
    pthread_rwlock_rdlock(&e->meta_lock);
    np = e->n_object_perms;
    memcpy(perms, e->object_perms, np * sizeof perms[0]);
    gen = e->principals.len;
    pthread_rwlock_unlock(&e->meta_lock);
    if (!np || !atomic_load(&s->c->has_objects))
        return CDN_OK; /* no chunk of this collection names an object */
    for (size_t i = 0; i < np; i++)
        pp[i] = perms[i];
    snprintf(s->self, sizeof s->self, "service:%s", s->subject_id);
    if (!authz_view_has(s->view, s->self)) /* the subject's own name in the tuples */
        snprintf(s->self, sizeof s->self, "user:%s", s->subject_id);
    s->with_objects = 1;
    int rc =
        oc_get(e->objcache, s->self, np, s->view->revision, &gen, &s->object_ids, &s->n_object_ids);
    if (rc == 1) {
        s->object_gen = gen; /* names past it: engine_subject_ids */
        return CDN_OK;
    }
    cdn_arena_init(&o.arena, 64 * 1024, 0);
    if (rc == CDN_OK)
        rc = authz_rebac_objects(e->model, s->self, pp, np, add_name, &o, &rev);
    if (rc == CDN_OK)
        rc = ids_of_names(e, s->view, &o, &ids, &gen);
    cdn_arena_free(&o.arena);
    cdn_free(o.v);
    if (rc) {
        cdn_free(ids.v);
        return cdn_err_set(err, rc, "the subject's objects: %s", cdn_strerror(rc));
    }
    s->object_ids = ids.v;
    s->n_object_ids = ids.n;
    s->object_gen = gen;
    s->objects_stale = rev != s->view->revision;
    if (!s->objects_stale)
        oc_put(e->objcache, s->self, np, rev, gen, ids.v, ids.n);
    return CDN_OK;
}

/* The principals interned at or after gen that stand for an object the subject holds (in a
 * tenant of its view, when qualified), judged one by one against the model now: a chunk
 * naming a new object may have been written between the walk and the request's read of the
 * ACLs. A model that moved meanwhile makes the request start over (engine_subject_current),
 * so a judgement that counts is the view's revision's. */
static int objects_since(engine_t *e, const engine_subject_t *s, size_t gen, idvec_t *out)
{
    char obj[ACL_VIEW_NAME_MAX], tenant[ACL_VIEW_NAME_MAX];
    names_t o = {0};
    size_t len;
    int rc = CDN_OK;
    cdn_arena_init(&o.arena, 16 * 1024, 0);
    pthread_rwlock_rdlock(&e->meta_lock); /* copied out: the model is asked without it */
    len = e->principals.len;
    for (size_t id = gen; id < len && rc == CDN_OK; id++) {
        const char *name = acl_intern_name(&e->principals, (uint32_t)id);
        void *p = o.v;
        char *copy;
        if (!name || !acl_object_permission(name))
            continue;
        if (!(copy = cdn_arena_strdup(&o.arena, name)) ||
            (o.n == o.cap && cdn_grow(&p, &o.cap, o.n + 1, sizeof *o.v))) {
            rc = CDN_ERR_NOMEM;
            break;
        }
        o.v = p;
        o.v[o.n++] = copy;
    }
    pthread_rwlock_unlock(&e->meta_lock);
    for (size_t i = 0; i < o.n && rc == CDN_OK; i++) {
        const char *name = o.v[i], *perm = acl_object_permission(name);
        if (!strncmp(name, "tenant:", 7)) { /* "tenant:T:object:...": only for members of T */
            const char *colon = strchr(name + 7, ':');
            snprintf(tenant, sizeof tenant, "%.*s", (int)(colon - name), name);
            if (!authz_view_has(s->view, tenant))
                continue;
            name = colon + 1;
        }
        snprintf(obj, sizeof obj, "%.*s", (int)(perm - 1 - (name + 7)), name + 7);
        bool held = false;
        int r = authz_rebac_check(e->model, s->self, perm, obj, &held, NULL, NULL);
        if (r == CDN_ERR_NOMEM || r == CDN_ERR_INTERNAL)
            rc = r; /* else no schema, type or permission: not held */
        else if (r == CDN_OK && held) {
            uint32_t id;
            pthread_rwlock_rdlock(&e->meta_lock);
            if (acl_intern_get(&e->principals, o.v[i], &id) == CDN_OK)
                rc = idvec_push(out, id);
            pthread_rwlock_unlock(&e->meta_lock);
        }
    }
    cdn_arena_free(&o.arena);
    cdn_free(o.v);
    return rc;
}

int engine_subject_ids(engine_t *e, const engine_subject_t *s, uint32_t **ids, size_t *n,
                       cdn_err_t *err)
{
    uint32_t *view;
    size_t nview, len;
    idvec_t all = {0};
    int rc = engine_view_ids(e, s->principals, s->n, &view, &nview, err);
    if (rc)
        return rc;
    if (!s->with_objects) {
        *ids = view;
        *n = nview;
        return CDN_OK;
    }
    pthread_rwlock_rdlock(&e->meta_lock);
    len = e->principals.len;
    pthread_rwlock_unlock(&e->meta_lock);
    all.cap = nview + s->n_object_ids + 1;
    if (!(all.v = cdn_malloc(all.cap * sizeof *all.v))) {
        rc = CDN_ERR_NOMEM;
    } else { /* two sorted lists merged; what came since is rare, sorted in after */
        size_t i = 0, j = 0;
        const uint32_t *ob = s->object_ids;
        while (i < nview || j < s->n_object_ids) {
            uint32_t x =
                j == s->n_object_ids || (i < nview && view[i] <= ob[j]) ? view[i++] : ob[j++];
            if (!all.n || all.v[all.n - 1] != x)
                all.v[all.n++] = x;
        }
        if (len > s->object_gen && (rc = objects_since(e, s, s->object_gen, &all)) == CDN_OK)
            all.n = sort_unique(all.v, all.n);
    }
    cdn_free(view);
    if (rc) {
        cdn_free(all.v);
        return cdn_err_set(err, rc, "the subject's objects: %s", cdn_strerror(rc));
    }
    *ids = all.v;
    *n = all.n;
    return CDN_OK;
}
