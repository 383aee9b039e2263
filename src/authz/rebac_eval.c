/* rebac_eval.c: questions over relationship tuples. check walks from the object down its
 * relations and permissions to the subject, memoizing each (object, relation) it settles; a
 * cycle counts as no path, and what was decided while a cycle was cut is not memoized.
 * lookup-resources walks the reverse index up from the subject to every (object, relation) it
 * may hold and keeps the objects of the asked type, checking each one only when the permission
 * has an intersection or exclusion below it; lookup-subjects expands sets of subjects down from
 * the object; expand writes the tree. Relies on rebac.h, internal.h and jansson. */
#include "authz/internal.h"
#include "authz/rebac.h"
#include "base/cmp.h"
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_OBJ UINT32_MAX

/* (object, relation) -> a small state. Sparse: open addressing over key + 1, for questions that
 * touch a few objects (check, expand). Dense: a byte per object for each relation, made on first
 * use. A walk (lookup-resources, a search's objects) starts sparse and turns dense once it has
 * touched a 32nd of the store's objects: from there hashing every step cost more than the walk
 * itself, and the rows cost no more memory than the table; a walk that stays small never pays
 * for rows of the whole store. */
typedef struct memo {
    uint64_t *keys;
    uint8_t *vals;
    uint32_t cap, n;
    uint8_t **rows;    /* dense: rows[rel] (RB_RELS_MAX for RB_NONE), NULL until used */
    uint32_t nobjs;    /* the store's objects, what a row spans */
    uint32_t dense_at; /* entries at which the sparse table turns dense; 0: never */
} memo_t;

enum { M_NONE = 0, M_BUSY, M_TRUE, M_FALSE };

#define MEMO_ROWS (RB_RELS_MAX + 1)

static uint64_t mkey(uint32_t obj, uint16_t rel)
{
    return ((uint64_t)obj << 16 | rel) + 1;
}

static uint32_t mhash(uint64_t k)
{
    k ^= k >> 31;
    k *= 0x9e3779b97f4a7c15ull;
    return (uint32_t)(k >> 32);
}

/* A memo for a walk over a store of nobjs objects: sparse first, dense past a 32nd of them. */
static void memo_walk(memo_t *m, uint32_t nobjs)
{
    memset(m, 0, sizeof *m);
    m->nobjs = nobjs;
    m->dense_at = nobjs / 32 > 4096 ? nobjs / 32 : 4096;
}

static uint8_t *memo_dense_slot(memo_t *m, uint32_t obj, uint16_t rel, int create)
{
    uint32_t r = rel == RB_NONE ? RB_RELS_MAX : rel;
    if (!m->rows[r]) {
        if (!create || !(m->rows[r] = cdn_calloc(m->nobjs ? m->nobjs : 1, 1)))
            return NULL;
    }
    return &m->rows[r][obj];
}

/* Moves the sparse entries into rows; 0 or CDN_ERR_NOMEM (m unchanged). */
static int memo_to_dense(memo_t *m)
{
    uint8_t **rows = cdn_calloc(MEMO_ROWS, sizeof *rows);
    if (!rows)
        return CDN_ERR_NOMEM;
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        uint64_t k = m->keys[i] - 1;
        uint32_t obj = (uint32_t)(k >> 16), rel = (uint32_t)(k & 0xffff);
        uint32_t r = rel == RB_NONE ? RB_RELS_MAX : rel;
        if (!rows[r] && !(rows[r] = cdn_calloc(m->nobjs ? m->nobjs : 1, 1))) {
            for (uint32_t j = 0; j < MEMO_ROWS; j++)
                cdn_free(rows[j]);
            cdn_free(rows);
            return CDN_ERR_NOMEM;
        }
        rows[r][obj] = m->vals[i];
    }
    cdn_free(m->keys);
    cdn_free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
    m->rows = rows;
    return CDN_OK;
}

/* The state of (obj, rel), made M_NONE when absent and create is set; NULL when absent and not
 * created, or out of memory. */
static uint8_t *memo_slot(memo_t *m, uint32_t obj, uint16_t rel, int create)
{
    if (m->rows)
        return memo_dense_slot(m, obj, rel, create);
    uint64_t k = mkey(obj, rel);
    if ((m->n + 1) * 2 > m->cap) {
        if (!create)
            goto find;
        if (m->dense_at && m->n >= m->dense_at && memo_to_dense(m) == CDN_OK)
            return memo_dense_slot(m, obj, rel, create);
        uint32_t ncap = m->cap ? m->cap * 2 : 64;
        uint64_t *keys = cdn_calloc(ncap, sizeof *keys);
        uint8_t *vals = cdn_calloc(ncap, 1);
        if (!keys || !vals) {
            cdn_free(keys);
            cdn_free(vals);
            return NULL;
        }
        for (uint32_t i = 0; i < m->cap; i++) {
            if (!m->keys[i])
                continue;
            uint32_t j = mhash(m->keys[i]) & (ncap - 1);
            while (keys[j])
                j = (j + 1) & (ncap - 1);
            keys[j] = m->keys[i];
            vals[j] = m->vals[i];
        }
        cdn_free(m->keys);
        cdn_free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = ncap;
    }
find:
    if (!m->cap)
        return NULL;
    for (uint32_t i = mhash(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == k)
            return &m->vals[i];
        if (!m->keys[i]) {
            if (!create)
                return NULL;
            m->keys[i] = k;
            m->n++;
            return &m->vals[i];
        }
    }
}

/* The state of (obj, rel), M_NONE when absent. */
static uint8_t memo_get(const memo_t *m, uint32_t obj, uint16_t rel)
{
    const uint8_t *v = memo_slot((memo_t *)m, obj, rel, 0); /* not created: not written */
    return v ? *v : M_NONE;
}

static void memo_free(memo_t *m)
{
    if (m->rows)
        for (uint32_t r = 0; r < MEMO_ROWS; r++)
            cdn_free(m->rows[r]);
    cdn_free(m->rows);
    cdn_free(m->keys);
    cdn_free(m->vals);
}

/* ---- check ---- */

typedef struct ev {
    const rb_schema_t *s;
    const rb_store_t *st;
    uint32_t subj; /* the subject object, NO_OBJ when no tuple names it */
    uint32_t wild; /* the wildcard object of its type, NO_OBJ when none */
    memo_t memo;
    /* after a complete reverse walk from the subject: what it reached, exact for monotone
     * relations, so a check inside a lookup reads them instead of evaluating them */
    const memo_t *walked;
    /* and how the walk reached the object being checked: an arrow over hint_via from hint_src,
     * the subject of that arrow tried first (it is often the only one that holds) */
    uint32_t hint_obj, hint_src;
    uint16_t hint_via;
    int depth, cut, rc; /* cut: a cycle was cut below the current evaluation */
} ev_t;

static int has(ev_t *e, uint32_t obj, uint16_t rel);

/* True when x is the arrow the walk reached obj through and its subject there holds the
 * arrow's target: the arrow holds without reading obj's tuples. */
static int hinted(ev_t *e, uint32_t obj, const rb_expr_t *x)
{
    if (obj != e->hint_obj || x->kind != RB_E_ARROW || x->rel != e->hint_via)
        return 0;
    int k = rb_arrow_target(x, rb_obj_type(e->st, e->hint_src));
    return k >= 0 && has(e, e->hint_src, (uint16_t)k);
}

static int eval_expr(ev_t *e, uint32_t obj, const rb_expr_t *x)
{
    uint16_t t = rb_obj_type(e->st, obj);
    uint32_t n;
    int r;
    switch (x->kind) {
    case RB_E_REL: return has(e, obj, x->rel);
    case RB_E_ARROW: {
        if (hinted(e, obj, x))
            return 1;
        const rb_sub_t *subs = rb_subjects(e->st, obj, x->rel, &n);
        for (uint32_t i = 0; i < n; i++) {
            if (subs[i].rel != RB_NONE || rb_id_is_wild(rb_obj_id(e->st, subs[i].obj)))
                continue;
            int k = rb_arrow_target(x, rb_obj_type(e->st, subs[i].obj));
            if (k >= 0 && has(e, subs[i].obj, (uint16_t)k))
                return 1;
            subs = rb_subjects(e->st, obj, x->rel, &n); /* unchanged: reads do not move it */
        }
        return 0;
    }
    case RB_E_UNION:
        for (uint32_t i = 0; obj == e->hint_obj && i < x->nkids; i++)
            if (hinted(e, obj, x->kids[i])) /* the way the walk came first */
                return 1;
        for (uint32_t i = 0; i < x->nkids; i++)
            if (eval_expr(e, obj, x->kids[i]))
                return 1;
        return 0;
    case RB_E_INTER:
        for (uint32_t i = 0; i < x->nkids; i++)
            if (!eval_expr(e, obj, x->kids[i]))
                return 0;
        return 1;
    case RB_E_EXCL: r = eval_expr(e, obj, x->kids[0]); return r && !eval_expr(e, obj, x->kids[1]);
    }
    (void)t;
    return 0;
}

static int has(ev_t *e, uint32_t obj, uint16_t rel)
{
    const rb_rel_t *def = &e->s->types[rb_obj_type(e->st, obj)].rels[rel];
    if (e->walked && def->monotone)
        return memo_get(e->walked, obj, rel) != M_NONE;
    uint8_t *m = memo_slot(&e->memo, obj, rel, 1);
    int r = 0, cut_before = e->cut;
    if (!m) {
        e->rc = CDN_ERR_NOMEM;
        return 0;
    }
    if (*m == M_TRUE || *m == M_FALSE)
        return *m == M_TRUE;
    if (*m == M_BUSY) { /* a cycle: no path through here */
        e->cut = 1;
        return 0;
    }
    if (e->depth >= RB_DEPTH_MAX) {
        e->rc = CDN_ERR_LIMIT;
        return 0;
    }
    *m = M_BUSY;
    e->depth++;
    e->cut = 0;
    if (def->is_perm) {
        r = eval_expr(e, obj, def->expr);
    } else {
        uint32_t n;
        const rb_sub_t *subs = rb_subjects(e->st, obj, rel, &n);
        for (uint32_t i = 0; i < n && !r; i++) {
            if (subs[i].rel == RB_NONE)
                r = subs[i].obj == e->subj || subs[i].obj == e->wild;
            else
                r = has(e, subs[i].obj, subs[i].rel);
        }
    }
    e->depth--;
    m = memo_slot(&e->memo, obj, rel, 1); /* the table may have grown */
    /* a result reached while a cycle was cut may differ from the one reached elsewhere */
    *m = e->cut ? M_NONE : r ? M_TRUE : M_FALSE;
    e->cut |= cut_before;
    return r;
}

/* Splits "type:id" into the schema's type and the id; 0 or CDN_ERR_INVALID. */
static int split(const rb_schema_t *s, const char *name, const char *what, uint16_t *type,
                 const char **id, cdn_err_t *err)
{
    const char *colon = name ? strchr(name, ':') : NULL;
    int t = colon ? rb_type_find(s, name, (size_t)(colon - name)) : -1;
    if (t < 0 || !colon[1])
        return cdn_err_set(err, CDN_ERR_INVALID, "%s \"%.200s\" is not TYPE:ID of a schema type",
                           what, name ? name : "(null)");
    *type = (uint16_t)t;
    *id = colon + 1;
    return CDN_OK;
}

static int rel_of(const rb_schema_t *s, uint16_t t, const char *name, uint16_t *rel, cdn_err_t *err)
{
    int r = name ? rb_rel_find(s, t, name, strlen(name)) : -1;
    if (r < 0)
        return cdn_err_set(err, CDN_ERR_INVALID, "%s has no relation or permission \"%.100s\"",
                           s->types[t].name, name ? name : "(null)");
    *rel = (uint16_t)r;
    return CDN_OK;
}

/* Takes the model's read lock and notes its revision (may be NULL); the relationships, or NULL
 * with the lock released and *rc set (no schema yet, a broken model). */
static const rb_state_t *read_begin(authz_model_t *m, uint64_t *revision, int *rc, cdn_err_t *err)
{
    pthread_rwlock_rdlock(&m->lock);
    if (revision)
        *revision = atomic_load(&m->revision);
    if (m->broken)
        *rc = cdn_err_set(err, CDN_ERR_INTERNAL, "the authorization model is broken; reopen it");
    else if (!m->st->rebac || !m->st->rebac->schema)
        *rc = cdn_err_set(err, CDN_ERR_NOT_FOUND, "no relationship schema; apply put_schema first");
    else
        return m->st->rebac;
    pthread_rwlock_unlock(&m->lock);
    return NULL;
}

static void ev_init(ev_t *e, const rb_state_t *rb, uint16_t stype, const char *sid)
{
    memset(e, 0, sizeof *e);
    e->hint_obj = NO_OBJ;
    e->s = rb->schema;
    e->st = rb->store;
    if (rb_obj_get(e->st, stype, sid, &e->subj))
        e->subj = NO_OBJ;
    if (rb_obj_get(e->st, stype, "*", &e->wild))
        e->wild = NO_OBJ;
}

static void ev_free(ev_t *e)
{
    memo_free(&e->memo);
}

int authz_rebac_check(authz_model_t *m, const char *subject, const char *permission,
                      const char *object, bool *allowed, uint64_t *revision, cdn_err_t *err)
{
    uint16_t st, ot, rel;
    const char *sid, *oid;
    uint32_t obj;
    int rc;
    if (!m || !allowed)
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_rebac_check: NULL argument");
    *allowed = false;
    const rb_state_t *rb = read_begin(m, revision, &rc, err);
    if (rb) {
        rc = CDN_OK;
        if ((rc = split(rb->schema, subject, "subject", &st, &sid, err)) == CDN_OK &&
            (rc = split(rb->schema, object, "object", &ot, &oid, err)) == CDN_OK &&
            (rc = rel_of(rb->schema, ot, permission, &rel, err)) == CDN_OK &&
            rb_obj_get(rb->store, ot, oid, &obj) == CDN_OK) {
            ev_t e;
            ev_init(&e, rb, st, sid);
            *allowed = has(&e, obj, rel) && !e.rc;
            if (e.rc)
                rc = cdn_err_set(err, e.rc,
                                 e.rc == CDN_ERR_LIMIT
                                     ? "the check follows more than %d nested relations"
                                     : "out of memory",
                                 RB_DEPTH_MAX);
            ev_free(&e);
        }
        pthread_rwlock_unlock(&m->lock);
    }
    return rc;
}

/* ---- lookup-resources: a reverse walk, then checks where the permission is not monotone ---- */

/* A step of the walk: (obj, rel) reached, and when an arrow over via from src reached it, src
 * (NO_OBJ otherwise): a check of obj tries that subject of its arrow first. */
typedef struct wnode {
    uint32_t obj, src;
    uint16_t rel, via;
} wnode_t;

typedef struct walk {
    wnode_t *q; /* the queue */
    size_t n, cap, head;
    memo_t seen;
} walk_t;

static int push_from(walk_t *w, uint32_t obj, uint16_t rel, uint32_t src, uint16_t via)
{
    uint8_t *s = memo_slot(&w->seen, obj, rel, 1);
    if (!s)
        return CDN_ERR_NOMEM;
    if (*s)
        return CDN_OK;
    *s = M_TRUE;
    if (w->n == w->cap) {
        void *p = w->q;
        if (cdn_grow(&p, &w->cap, w->n + 1, sizeof *w->q))
            return CDN_ERR_NOMEM;
        w->q = p;
    }
    w->q[w->n++] = (wnode_t){obj, src, rel, via};
    return CDN_OK;
}

static int push(walk_t *w, uint32_t obj, uint16_t rel)
{
    return push_from(w, obj, rel, NO_OBJ, RB_NONE);
}

/* True when x has an arrow over relation via whose target on objects of type is rel. */
static bool arrows(const rb_expr_t *x, uint16_t via, uint16_t type, uint16_t rel)
{
    if (x->kind == RB_E_ARROW)
        return x->rel == via && rb_arrow_target(x, type) == (int)rel;
    for (uint32_t i = 0; i < x->nkids; i++)
        if (arrows(x->kids[i], via, type, rel))
            return true;
    return false;
}

/* What holding rel on obj leads to: usersets naming it, permissions of obj reading it, and
 * permissions of the objects that point at obj through an arrow to it. The schema says which
 * of the three can exist, so the walk asks the tuples only where it may find something. */
static int step(const rb_state_t *rb, walk_t *w, uint32_t obj, uint16_t rel)
{
    const rb_schema_t *s = rb->schema;
    uint16_t t = rb_obj_type(rb->store, obj);
    const rb_rel_t *def = &s->types[t].rels[rel];
    uint32_t n;
    int rc = CDN_OK;
    const rb_sub_t *h;
    if (def->in_userset) {
        h = rb_holders(rb->store, obj, rel, &n);
        for (uint32_t i = 0; i < n && !rc; i++)
            rc = push(w, h[i].obj, h[i].rel);
    }
    for (uint64_t m = def->read_by; m && !rc; m &= m - 1)
        rc = push(w, obj, (uint16_t)__builtin_ctzll(m));
    if (!def->arrowed)
        return rc;
    h = rb_holders(rb->store, obj, RB_NONE, &n); /* x#via@obj: x may reach rel through via */
    for (uint32_t i = 0; i < n && !rc; i++) {
        const rb_type_t *xt = &s->types[rb_obj_type(rb->store, h[i].obj)];
        for (uint32_t p = 0; p < xt->nrels && !rc; p++)
            if (xt->rels[p].is_perm && arrows(xt->rels[p].expr, h[i].rel, t, rel))
                rc = push_from(w, h[i].obj, (uint16_t)p, obj, h[i].rel);
    }
    return rc;
}

/* The reverse walk from the subject (stype, sid), calling fn(ctx, type, id) for each object
 * whose relation or permission want[its type] (-1: none wanted) the subject holds. Where that
 * relation is monotone the walk reaches exactly its holders; elsewhere it reaches candidates,
 * each checked once the walk is complete, when what the walk reached answers every monotone
 * part of the check (a subtracted relation, say) without asking the tuples. Under the model's
 * read lock. */
typedef int (*hit_fn)(void *ctx, const char *type, const char *id);

static int emit(const rb_state_t *rb, uint32_t obj, hit_fn fn, void *ctx)
{
    const char *id = rb_obj_id(rb->store, obj);
    if (rb_id_is_wild(id))
        return CDN_OK;
    return fn(ctx, rb->schema->types[rb_obj_type(rb->store, obj)].name, id);
}

static int walk_up(const rb_state_t *rb, uint16_t stype, const char *sid, const int *want,
                   hit_fn fn, void *ctx)
{
    walk_t w = {0};
    ev_t e;
    size_t *cand = NULL; /* candidates to check: their steps in the walk, in its order */
    size_t ncand = 0, capcand = 0;
    uint32_t nobjs = rb_obj_count(rb->store);
    int rc = CDN_OK;
    ev_init(&e, rb, stype, sid);
    memo_walk(&w.seen, nobjs);
    memo_walk(&e.memo, nobjs);
    if (e.subj != NO_OBJ)
        rc = push(&w, e.subj, RB_NONE);
    if (!rc && e.wild != NO_OBJ)
        rc = push(&w, e.wild, RB_NONE);
    /* the subject's own object is a node of the walk but not a relation held on anything */
    for (; !rc && w.head < w.n; w.head++) {
        uint32_t obj = w.q[w.head].obj;
        uint16_t r = w.q[w.head].rel, t;
        if (r == RB_NONE) {
            uint32_t n;
            const rb_sub_t *h = rb_holders(rb->store, obj, RB_NONE, &n);
            for (uint32_t i = 0; i < n && !rc; i++)
                rc = push(&w, h[i].obj, h[i].rel);
            continue;
        }
        if ((rc = step(rb, &w, obj, r)))
            break;
        t = rb_obj_type(rb->store, obj);
        if (want[t] != (int)r)
            continue;
        if (rb->schema->types[t].rels[r].monotone) {
            rc = emit(rb, obj, fn, ctx);
            continue;
        }
        void *p = cand;
        if (ncand == capcand && (rc = cdn_grow(&p, &capcand, ncand + 1, sizeof *cand)))
            break;
        cand = p;
        cand[ncand++] = w.head;
    }
    e.walked = &w.seen;
    for (size_t i = 0; i < ncand && !rc; i++) {
        const wnode_t *c = &w.q[cand[i]];
        uint32_t obj = c->obj;
        bool wild = c->src != NO_OBJ && rb_id_is_wild(rb_obj_id(rb->store, c->src));
        e.hint_obj = c->src == NO_OBJ || wild ? NO_OBJ : obj; /* arrows skip wildcards */
        e.hint_src = c->src;
        e.hint_via = c->via;
        int ok = has(&e, obj, (uint16_t)want[rb_obj_type(rb->store, obj)]) && !e.rc;
        rc = e.rc == CDN_ERR_NOMEM ? e.rc : CDN_OK;
        e.rc = 0;
        if (ok && !rc)
            rc = emit(rb, obj, fn, ctx);
    }
    cdn_free(cand);
    ev_free(&e);
    memo_free(&w.seen);
    cdn_free(w.q);
    return rc;
}

typedef struct id_only {
    authz_name_fn fn;
    void *ctx;
} id_only_t;

static int emit_id(void *ctx, const char *type, const char *id)
{
    id_only_t *x = ctx;
    (void)type;
    return x->fn(x->ctx, id);
}

int authz_rebac_lookup_resources(authz_model_t *m, const char *subject, const char *type,
                                 const char *permission, authz_name_fn fn, void *ctx,
                                 uint64_t *revision, cdn_err_t *err)
{
    uint16_t st, rel;
    const char *sid;
    int rc, t;
    if (!m || !fn || !type)
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_rebac_lookup_resources: NULL argument");
    const rb_state_t *rb = read_begin(m, revision, &rc, err);
    if (!rb)
        return rc;
    if ((rc = split(rb->schema, subject, "subject", &st, &sid, err)) ||
        (t = rb_type_find(rb->schema, type, strlen(type))) < 0 ||
        (rc = rel_of(rb->schema, (uint16_t)t, permission, &rel, err))) {
        pthread_rwlock_unlock(&m->lock);
        return rc ? rc : cdn_err_set(err, CDN_ERR_INVALID, "\"%.100s\" is not a schema type", type);
    }
    int want[RB_TYPES_MAX];
    for (uint32_t k = 0; k < rb->schema->ntypes; k++)
        want[k] = (int)k == t ? rel : -1;
    id_only_t x = {fn, ctx};
    rc = walk_up(rb, st, sid, want, emit_id, &x);
    pthread_rwlock_unlock(&m->lock);
    if (rc == CDN_ERR_NOMEM)
        return cdn_err_set(err, rc, "lookup-resources: out of memory");
    return rc;
}

typedef struct any_names {
    authz_name_fn fn;
    void *ctx;
    const char *perm;
} any_names_t;

static int emit_full(void *ctx, const char *type, const char *id)
{
    any_names_t *x = ctx;
    char name[RB_NAME_MAX * 2 + RB_ID_MAX + 4];
    size_t nt = strlen(type), ni = strlen(id), np = strlen(x->perm); /* each within its max */
    memcpy(name, type, nt); /* "type:id#perm", without a format: a walk may emit 100,000 */
    name[nt] = ':';
    memcpy(name + nt + 1, id, ni);
    name[nt + 1 + ni] = '#';
    memcpy(name + nt + 2 + ni, x->perm, np + 1);
    return x->fn(x->ctx, name);
}

int authz_rebac_objects(authz_model_t *m, const char *subject, const char *const *perms,
                        size_t nperms, authz_name_fn fn, void *ctx, uint64_t *revision)
{
    uint16_t st;
    const char *sid;
    int rc = CDN_OK;
    pthread_rwlock_rdlock(&m->lock);
    if (revision)
        *revision = atomic_load(&m->revision);
    const rb_state_t *rb = m->broken ? NULL : m->st->rebac;
    if (!rb || !rb->schema || split(rb->schema, subject, "subject", &st, &sid, NULL)) {
        pthread_rwlock_unlock(&m->lock);
        return m->broken ? CDN_ERR_INTERNAL : CDN_OK; /* no schema or no such type: none */
    }
    for (size_t p = 0; p < nperms && !rc; p++) {
        int want[RB_TYPES_MAX], any = 0;
        for (uint32_t k = 0; k < rb->schema->ntypes; k++) {
            want[k] = rb_rel_find(rb->schema, (uint16_t)k, perms[p], strlen(perms[p]));
            any |= want[k] >= 0;
        }
        any_names_t x = {fn, ctx, perms[p]};
        if (any)
            rc = walk_up(rb, st, sid, want, emit_full, &x);
    }
    pthread_rwlock_unlock(&m->lock);
    return rc;
}

/* ---- lookup-subjects: sets of subject objects expanded down from the object ---- */

typedef struct oset {
    uint32_t *v;
    size_t n, cap;
} oset_t;

static void oset_norm(oset_t *s)
{
    size_t j = 0;
    if (s->n)
        qsort(s->v, s->n, sizeof *s->v, cdn_cmp_u32);
    for (size_t i = 0; i < s->n; i++)
        if (!j || s->v[j - 1] != s->v[i])
            s->v[j++] = s->v[i];
    s->n = j;
}

static int oset_add(oset_t *s, uint32_t x)
{
    if (s->n == s->cap) {
        void *p = s->v;
        if (cdn_grow(&p, &s->cap, s->n + 1, sizeof *s->v))
            return CDN_ERR_NOMEM;
        s->v = p;
    }
    s->v[s->n++] = x;
    return CDN_OK;
}

static bool oset_has(const oset_t *s, uint32_t x)
{
    return s->n && bsearch(&x, s->v, s->n, sizeof *s->v, cdn_cmp_u32);
}

typedef struct lx {
    const rb_state_t *rb;
    uint16_t want; /* the subject type asked for */
    memo_t busy;
    int depth, rc;
} lx_t;

static int subjects_of(lx_t *x, uint32_t obj, uint16_t rel, oset_t *out);

static int expr_subjects(lx_t *x, uint32_t obj, const rb_expr_t *e, oset_t *out)
{
    oset_t a = {0}, b = {0};
    uint32_t n;
    int rc = CDN_OK;
    switch (e->kind) {
    case RB_E_REL: return subjects_of(x, obj, e->rel, out);
    case RB_E_ARROW: {
        const rb_sub_t *subs = rb_subjects(x->rb->store, obj, e->rel, &n);
        for (uint32_t i = 0; i < n && !rc; i++) {
            if (subs[i].rel != RB_NONE || rb_id_is_wild(rb_obj_id(x->rb->store, subs[i].obj)))
                continue;
            int k = rb_arrow_target(e, rb_obj_type(x->rb->store, subs[i].obj));
            if (k >= 0)
                rc = subjects_of(x, subs[i].obj, (uint16_t)k, out);
            subs = rb_subjects(x->rb->store, obj, e->rel, &n);
        }
        return rc;
    }
    case RB_E_UNION:
        for (uint32_t i = 0; i < e->nkids && !rc; i++)
            rc = expr_subjects(x, obj, e->kids[i], out);
        return rc;
    default: /* INTER, EXCL: set algebra over the kids' sets */
        rc = expr_subjects(x, obj, e->kids[0], &a);
        oset_norm(&a);
        for (uint32_t i = 1; i < e->nkids && !rc; i++) {
            b.n = 0;
            rc = expr_subjects(x, obj, e->kids[i], &b);
            oset_norm(&b);
            size_t j = 0;
            for (size_t k = 0; k < a.n; k++)
                if (oset_has(&b, a.v[k]) == (e->kind == RB_E_INTER))
                    a.v[j++] = a.v[k];
            a.n = j;
        }
        for (size_t k = 0; k < a.n && !rc; k++)
            rc = oset_add(out, a.v[k]);
        cdn_free(a.v);
        cdn_free(b.v);
        return rc;
    }
}

static int subjects_of(lx_t *x, uint32_t obj, uint16_t rel, oset_t *out)
{
    uint8_t *busy = memo_slot(&x->busy, obj, rel, 1);
    int rc = CDN_OK;
    if (!busy)
        return CDN_ERR_NOMEM;
    if (*busy)
        return CDN_OK; /* a cycle: nothing more through here */
    if (x->depth >= RB_DEPTH_MAX)
        return CDN_ERR_LIMIT;
    *busy = M_BUSY;
    x->depth++;
    const rb_rel_t *def = &x->rb->schema->types[rb_obj_type(x->rb->store, obj)].rels[rel];
    if (def->is_perm) {
        rc = expr_subjects(x, obj, def->expr, out);
    } else {
        uint32_t n;
        const rb_sub_t *subs = rb_subjects(x->rb->store, obj, rel, &n);
        for (uint32_t i = 0; i < n && !rc; i++) {
            if (subs[i].rel == RB_NONE) {
                if (rb_obj_type(x->rb->store, subs[i].obj) == x->want)
                    rc = oset_add(out, subs[i].obj);
            } else {
                rc = subjects_of(x, subs[i].obj, subs[i].rel, out);
            }
            subs = rb_subjects(x->rb->store, obj, rel, &n);
        }
    }
    x->depth--;
    busy = memo_slot(&x->busy, obj, rel, 1);
    *busy = M_NONE; /* only the current path is a cycle */
    return rc;
}

int authz_rebac_lookup_subjects(authz_model_t *m, const char *object, const char *permission,
                                const char *subject_type, authz_name_fn fn, void *ctx,
                                uint64_t *revision, cdn_err_t *err)
{
    uint16_t ot, rel;
    const char *oid;
    uint32_t obj;
    int rc, t;
    if (!m || !fn || !subject_type)
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_rebac_lookup_subjects: NULL argument");
    const rb_state_t *rb = read_begin(m, revision, &rc, err);
    if (!rb)
        return rc;
    oset_t out = {0};
    if ((rc = split(rb->schema, object, "object", &ot, &oid, err)) ||
        (rc = rel_of(rb->schema, ot, permission, &rel, err))) {
        pthread_rwlock_unlock(&m->lock);
        return rc;
    }
    if ((t = rb_type_find(rb->schema, subject_type, strlen(subject_type))) < 0) {
        pthread_rwlock_unlock(&m->lock);
        return cdn_err_set(err, CDN_ERR_INVALID, "\"%.100s\" is not a schema type", subject_type);
    }
    if (rb_obj_get(rb->store, ot, oid, &obj) == CDN_OK) {
        lx_t x = {rb, (uint16_t)t, {0}, 0, 0};
        rc = subjects_of(&x, obj, rel, &out);
        memo_free(&x.busy);
        oset_norm(&out);
    }
    for (size_t i = 0; i < out.n && !rc; i++) {
        char name[RB_NAME_MAX + RB_ID_MAX + 2];
        snprintf(name, sizeof name, "%s:%s", subject_type, rb_obj_id(rb->store, out.v[i]));
        rc = fn(ctx, name);
    }
    cdn_free(out.v);
    pthread_rwlock_unlock(&m->lock);
    if (rc == CDN_ERR_NOMEM || rc == CDN_ERR_LIMIT)
        return cdn_err_set(err, rc, "lookup-subjects: %s",
                           rc == CDN_ERR_LIMIT ? "more than 64 nested relations" : "out of memory");
    return rc;
}

/* ---- expand: the tree of why ---- */

static json_t *expand_rel(const rb_state_t *rb, uint32_t obj, uint16_t rel, int depth,
                          memo_t *busy);

static json_t *expand_expr(const rb_state_t *rb, uint32_t obj, const rb_expr_t *e, int depth,
                           memo_t *busy)
{
    static const char *const ops[] = {"", "", "", "union", "intersection", "exclusion"};
    uint32_t n;
    json_t *kids;
    if (e->kind == RB_E_REL)
        return expand_rel(rb, obj, e->rel, depth, busy);
    kids = json_array();
    if (e->kind == RB_E_ARROW) {
        const rb_sub_t *subs = rb_subjects(rb->store, obj, e->rel, &n);
        for (uint32_t i = 0; i < n; i++) {
            if (subs[i].rel != RB_NONE || rb_id_is_wild(rb_obj_id(rb->store, subs[i].obj)))
                continue;
            int k = rb_arrow_target(e, rb_obj_type(rb->store, subs[i].obj));
            if (k >= 0)
                json_array_append_new(kids,
                                      expand_rel(rb, subs[i].obj, (uint16_t)k, depth + 1, busy));
            subs = rb_subjects(rb->store, obj, e->rel, &n);
        }
        return json_pack("{s:s, s:o}", "arrow",
                         rb->schema->types[rb_obj_type(rb->store, obj)].rels[e->rel].name,
                         "children", kids);
    }
    for (uint32_t i = 0; i < e->nkids; i++)
        json_array_append_new(kids, expand_expr(rb, obj, e->kids[i], depth + 1, busy));
    return json_pack("{s:s, s:o}", "operation", ops[e->kind], "children", kids);
}

static json_t *expand_rel(const rb_state_t *rb, uint32_t obj, uint16_t rel, int depth, memo_t *busy)
{
    const rb_type_t *ty = &rb->schema->types[rb_obj_type(rb->store, obj)];
    char name[RB_NAME_MAX * 2 + RB_ID_MAX + 4];
    uint8_t *b = memo_slot(busy, obj, rel, 1);
    json_t *node;
    snprintf(name, sizeof name, "%s:%s#%s", ty->name, rb_obj_id(rb->store, obj),
             ty->rels[rel].name);
    if (!b || *b || depth > RB_DEPTH_MAX)
        return json_pack("{s:s, s:b}", "node", name, "cycle", 1);
    *b = M_BUSY;
    if (ty->rels[rel].is_perm) {
        node = json_pack("{s:s, s:o}", "node", name, "expression",
                         expand_expr(rb, obj, ty->rels[rel].expr, depth + 1, busy));
    } else {
        uint32_t n;
        json_t *direct = json_array(), *via = json_array();
        const rb_sub_t *subs = rb_subjects(rb->store, obj, rel, &n);
        for (uint32_t i = 0; i < n; i++) {
            const rb_type_t *st = &rb->schema->types[rb_obj_type(rb->store, subs[i].obj)];
            char sn[RB_NAME_MAX * 2 + RB_ID_MAX + 4];
            snprintf(sn, sizeof sn, "%s:%s%s%s", st->name, rb_obj_id(rb->store, subs[i].obj),
                     subs[i].rel == RB_NONE ? "" : "#",
                     subs[i].rel == RB_NONE ? "" : st->rels[subs[i].rel].name);
            json_array_append_new(direct, json_string(sn));
            if (subs[i].rel != RB_NONE)
                json_array_append_new(via,
                                      expand_rel(rb, subs[i].obj, subs[i].rel, depth + 1, busy));
            subs = rb_subjects(rb->store, obj, rel, &n);
        }
        node = json_pack("{s:s, s:o, s:o}", "node", name, "subjects", direct, "usersets", via);
    }
    b = memo_slot(busy, obj, rel, 1);
    if (b)
        *b = M_NONE;
    return node;
}

int authz_rebac_expand(authz_model_t *m, const char *object, const char *permission,
                       char **json_out, cdn_err_t *err)
{
    uint16_t ot, rel;
    const char *oid;
    uint32_t obj;
    int rc;
    if (!m || !json_out)
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_rebac_expand: NULL argument");
    *json_out = NULL;
    const rb_state_t *rb = read_begin(m, NULL, &rc, err);
    if (rb) {
        rc = CDN_OK;
        if ((rc = split(rb->schema, object, "object", &ot, &oid, err)) == CDN_OK &&
            (rc = rel_of(rb->schema, ot, permission, &rel, err)) == CDN_OK) {
            json_t *tree;
            memo_t busy = {0};
            if (rb_obj_get(rb->store, ot, oid, &obj) == CDN_OK)
                tree = expand_rel(rb, obj, rel, 0, &busy);
            else
                tree = json_pack("{s:s, s:[]}", "node", object, "subjects");
            memo_free(&busy);
            char *s = tree ? json_dumps(tree, JSON_COMPACT) : NULL;
            json_decref(tree);
            if (!s || !(*json_out = cdn_strdup(s)))
                rc = cdn_err_set(err, CDN_ERR_NOMEM, "expand: out of memory");
            free(s);
        }
        pthread_rwlock_unlock(&m->lock);
    }
    return rc;
}
