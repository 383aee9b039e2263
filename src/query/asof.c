/* asof.c: as-of questions behind asof.h: the revision of a moment, a chunk's ACL then and the
 * decision, who could read a chunk over a range, and retention. The model of a revision is
 * asof_model.c's. Relies on query/engine (collections, the principal table),
 * query/asof_model and store/history. */
#include "acl/acl.h"
#include "base/mem.h"
#include "base/strmap.h"
#include "query/asof_int.h"

#include <stdio.h>
#include <string.h>

int asof_open(engine_t *e, asof_t **out, cdn_err_t *err)
{
    asof_t *a = cdn_calloc(1, sizeof *a);
    if (!a)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    a->e = e;
    store_txn_t *t;
    int rc = store_txn_begin(e->store, 0, &t, err);
    if (rc) {
        cdn_free(a);
        return rc;
    }
    rc = history_ent_start_get(t, &a->frag_start, &a->has_frags);
    store_txn_abort(t);
    if (rc) {
        cdn_free(a);
        return cdn_err_set(err, rc, "the permission history does not read");
    }
    if (asof_cache_new(&a->cache)) {
        cdn_free(a);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&a->lock, NULL);
    *out = a;
    return CDN_OK;
}

void asof_close(asof_t *a)
{
    if (!a)
        return;
    for (int i = 0; i < ASOF_CACHE; i++)
        if (a->ent[i].valid)
            authz_model_free(a->ent[i].m);
    asof_cache_free(a->cache);
    pthread_mutex_destroy(&a->lock);
    cdn_free(a);
}

const char *asof_reason_name(asof_reason_t r)
{
    static const char *const names[] = {
        "READABLE",        "DENIED",        "NO_MATCHING_PRINCIPAL", "NO_ACL",
        "CHUNK_NOT_FOUND", "NO_PERMISSION", "SUBJECT_NOT_FOUND"};
    return (unsigned)r < sizeof names / sizeof *names ? names[r] : "UNKNOWN";
}

/* ---- Revisions. ---- */

int asof_revision(asof_t *a, uint64_t rev, uint64_t time_us, uint64_t *out, cdn_err_t *err)
{
    store_txn_t *t;
    uint64_t start, now = 0;
    int set, rc = store_txn_begin(a->e->store, 0, &t, err);
    if (rc)
        return rc;
    /* The store's revision, not the engine's: a model change moves the engine's before its
     * history is committed, and a question must not name a state the store does not hold. */
    if ((rc = store_revision_get(t, &now)) == CDN_OK &&
        (rc = history_start_get(t, &start, &set)) == CDN_OK && !rev) {
        rc = history_rev_at(t, time_us, &rev);
        if (rc == CDN_ERR_NOT_FOUND && start)
            rc = cdn_err_set(err, CDN_ERR_NOT_FOUND,
                             "the permission history starts at revision %llu: that moment is "
                             "before it",
                             (unsigned long long)start);
        else if (rc == CDN_ERR_NOT_FOUND)
            rc = cdn_err_set(err, CDN_ERR_NOT_FOUND,
                             "nothing was written yet at that moment: no state to ask about");
    }
    store_txn_abort(t);
    if (rc)
        return err && err->code ? rc : cdn_err_set(err, rc, "the history does not read");
    if (rev > now)
        return cdn_err_set(err, CDN_ERR_INVALID, "revision %llu is not reached yet (now %llu)",
                           (unsigned long long)rev, (unsigned long long)now);
    if (rev < start)
        return cdn_err_set(err, CDN_ERR_NOT_FOUND,
                           "the permission history starts at revision %llu: revision %llu is "
                           "before it",
                           (unsigned long long)start, (unsigned long long)rev);
    *out = rev;
    return CDN_OK;
}

int asof_start(asof_t *a, uint64_t *rev, cdn_err_t *err)
{
    store_txn_t *t;
    int set, rc = store_txn_begin(a->e->store, 0, &t, err);
    if (rc)
        return rc;
    rc = history_start_get(t, rev, &set);
    store_txn_abort(t);
    return rc ? cdn_err_set(err, rc, "the history does not read") : CDN_OK;
}

/* ---- A chunk's ACL then, and the decision. ---- */

/* The names of a packed ACL (n words at p, unaligned) in names[0] (allowed) and names[1]
 * (denied), pointing into the principal table (names are never removed from it). */
static int acl_names(engine_t *e, const void *p, size_t n, const char ***names, size_t *nn)
{
    uint32_t *w = cdn_malloc((n ? n : 1) * sizeof *w);
    int rc = CDN_OK;
    if (!w)
        return CDN_ERR_NOMEM;
    memcpy(w, p, n * 4);
    if (n < 2 || acl_packed_len(w) != n) {
        cdn_free(w);
        return CDN_ERR_CORRUPT;
    }
    nn[0] = w[0];
    nn[1] = w[1];
    names[0] = cdn_calloc(w[0] + 1, sizeof **names);
    names[1] = cdn_calloc(w[1] + 1, sizeof **names);
    if (!names[0] || !names[1])
        rc = CDN_ERR_NOMEM;
    pthread_rwlock_rdlock(&e->meta_lock);
    for (size_t i = 0; rc == CDN_OK && i < nn[0] + nn[1]; i++) {
        const char *name = acl_intern_name(&e->principals, w[2 + i]);
        if (!name)
            rc = CDN_ERR_CORRUPT;
        else if (i < nn[0])
            names[0][i] = name;
        else
            names[1][i - nn[0]] = name;
    }
    pthread_rwlock_unlock(&e->meta_lock);
    cdn_free(w);
    return rc;
}

/* The ACL decided against asserted principals: the same rule as a live search's. */
static int judge_asserted(const engine_asker_t *who, const char **names[2], const size_t nn[2],
                          asof_answer_t *out, cdn_err_t *err)
{
    acl_set_t held; /* the asserted names as a search expands them */
    int rc = acl_set_build(who->principals, who->n, &held, err);
    out->reason = nn[0] ? ASOF_NO_MATCH : ASOF_NO_ACL;
    for (int side = 1; side >= 0 && rc == CDN_OK; side--) /* denies first: they override */
        for (size_t j = 0; j < nn[side]; j++)
            if (acl_set_has(&held, names[side][j])) {
                out->readable = side == 0;
                out->reason = side ? ASOF_DENIED : ASOF_READABLE;
                snprintf(out->principal, sizeof out->principal, "%.*s",
                         (int)sizeof out->principal - 1, names[side][j]);
                side = -1;
                break;
            }
    acl_set_free(&held);
    return rc;
}

static asof_reason_t from_explain(authz_explain_kind_t k)
{
    switch (k) {
    case AUTHZ_EXPLAIN_ALLOWED: return ASOF_READABLE;
    case AUTHZ_EXPLAIN_DENIED:
    case AUTHZ_EXPLAIN_LABEL_DENIED: return ASOF_DENIED;
    case AUTHZ_EXPLAIN_NO_MATCH:
    case AUTHZ_EXPLAIN_OTHER_TENANT: return ASOF_NO_MATCH;
    case AUTHZ_EXPLAIN_NO_ACL: return ASOF_NO_ACL;
    default: return ASOF_SUBJECT_NOT_FOUND;
    }
}

/* Where a decision finds the relationship tuples of its revision: a slice holds none, so the
 * whole model of the revision is rebuilt the first time a chunk's ACL names an object (then
 * kept for the rest of the question). */
typedef struct tuples {
    asof_t *a;
    store_txn_t *t;
    uint64_t rev;
    authz_model_t *m; /* a whole model of rev, or NULL until needed */
    model_ref_t ref;  /* what m was borrowed as, when this loaded it */
    int loaded;
} tuples_t;

static int tuples_model(tuples_t *tu, authz_model_t **out, cdn_err_t *err)
{
    if (!tu->m) {
        int rc = asof_model_at(tu->a, tu->t, tu->rev, &tu->ref, err);
        if (rc)
            return rc;
        tu->m = tu->ref.m;
        tu->loaded = 1;
    }
    *out = tu->m;
    return CDN_OK;
}

static void tuples_end(tuples_t *tu)
{
    if (tu->loaded)
        asof_model_release(tu->a, &tu->ref);
    tu->loaded = 0;
    tu->m = NULL;
}

/* After the view matched none of the allowed names: whether the subject held, at the revision,
 * the permission of an object an allowed name stands for ("object:type:id#perm", perhaps of a
 * tenant the explanation has already let it into), as a live request adds the objects it holds
 * to the view. The first such name decides. */
static int by_object(tuples_t *tu, const char *subject_id, const char *const *allowed, size_t n,
                     asof_answer_t *out, cdn_err_t *err)
{
    char self[AUTHZ_PRINCIPAL_MAX + 8], obj[ACL_VIEW_NAME_MAX];
    authz_model_t *m = NULL;
    int rc = CDN_OK;
    for (size_t i = 0; i < n && rc == CDN_OK; i++) {
        const char *perm = acl_object_permission(allowed[i]), *o = allowed[i];
        if (!perm)
            continue;
        if (!strncmp(o, "tenant:", 7))
            o = strchr(o + 7, ':') + 1;
        if (strncmp(o, "object:", 7))
            continue;
        snprintf(obj, sizeof obj, "%.*s", (int)(perm - 1 - (o + 7)), o + 7);
        if (!m) {
            authz_view_t *v;
            if ((rc = tuples_model(tu, &m, err)) != 0)
                break;
            snprintf(self, sizeof self, "service:%s", subject_id);
            if (authz_view(m, subject_id, &v, NULL) == CDN_OK) { /* as add_objects names it */
                if (!authz_view_has(v, self))
                    snprintf(self, sizeof self, "user:%s", subject_id);
                authz_view_release(v);
            } else {
                snprintf(self, sizeof self, "user:%s", subject_id);
            }
        }
        bool held = false;
        rc = authz_rebac_check(m, self, perm, obj, &held, NULL, NULL);
        if (rc == CDN_ERR_NOT_FOUND || rc == CDN_ERR_INVALID)
            rc = CDN_OK; /* no schema then, or no such type or permission: not held */
        else if (rc)
            rc = cdn_err_set(err, rc, "relationship tuples as of revision %llu: %s",
                             (unsigned long long)tu->rev, cdn_strerror(rc));
        else if (held) {
            out->readable = 1;
            out->reason = ASOF_READABLE;
            snprintf(out->principal, sizeof out->principal, "%.*s", (int)sizeof out->principal - 1,
                     allowed[i]);
            break;
        }
    }
    return rc;
}

/* Decides one ACL (packed, n words) for who under model m (NULL for asserted principals), the
 * tuples of the revision read from tu where an allowed name is an object. */
static int decide(engine_t *e, authz_model_t *m, tuples_t *tu, const engine_asker_t *who,
                  int permitted, const void *packed, size_t n, asof_answer_t *out, cdn_err_t *err)
{
    const char **names[2] = {NULL, NULL};
    size_t nn[2];
    authz_explanation_t x;
    int rc = acl_names(e, packed, n, names, nn);
    memset(out, 0, sizeof *out);
    if (rc == CDN_OK && !m) {
        rc = judge_asserted(who, names, nn, out, err);
    } else if (rc == CDN_OK && (rc = authz_explain(m, who->subject_id, names[0], nn[0], names[1],
                                                   nn[1], &x, err)) == CDN_OK) {
        out->readable = x.readable;
        out->reason = from_explain(x.kind);
        snprintf(out->principal, sizeof out->principal, "%s", x.principal);
        if (x.kind == AUTHZ_EXPLAIN_NO_MATCH)
            rc = by_object(tu, who->subject_id, names[0], nn[0], out, err);
        if (out->readable && !permitted) {
            out->readable = 0;
            out->reason = ASOF_NO_PERMISSION;
        }
    }
    cdn_free(names[0]);
    cdn_free(names[1]);
    if (rc == CDN_ERR_CORRUPT)
        return cdn_err_set(err, rc, "a chunk's ACL in the history does not decode");
    return rc && !(err && err->code) ? cdn_err_set(err, rc, "%s", cdn_strerror(rc)) : rc;
}

/* ---- Which collection a name stood for. ---- */

typedef struct coll_ver {
    uint64_t rev;
    uint32_t id;
    int asserted, live;
} coll_ver_t;

/* Every version of one collection name, oldest first. */
typedef struct coll_hist {
    coll_ver_t *v;
    size_t n, cap;
} coll_hist_t;

static int coll_ver_add(void *ctx, uint64_t rev, uint32_t id, int asserted, int live)
{
    coll_hist_t *h = ctx;
    void *p = h->v;
    if (cdn_grow(&p, &h->cap, h->n + 1, sizeof *h->v))
        return CDN_ERR_NOMEM;
    h->v = p;
    h->v[h->n++] = (coll_ver_t){rev, id, asserted, live};
    return CDN_OK;
}

/* The versions of name from t, or, when it has none (a collection the names' history never
 * saw), the live collection's as one version. CDN_ERR_NOT_FOUND when neither knows it. */
static int coll_hist_read(asof_t *a, store_txn_t *t, const char *name, coll_hist_t *h,
                          cdn_err_t *err)
{
    coll_t *c;
    memset(h, 0, sizeof *h);
    int rc = history_coll_versions(t, name, coll_ver_add, h);
    if (rc || h->n)
        return rc ? cdn_err_set(err, rc, "the permission history does not read") : CDN_OK;
    if ((rc = engine_coll_get(a->e, name, &c, err)) != 0)
        return rc;
    rc = coll_ver_add(h, 0, c->cfg.id, c->cfg.asserted, 1);
    coll_unref(c);
    return rc ? cdn_err_set(err, rc, "out of memory") : CDN_OK;
}

/* The collection the name stood for after rev: the version current then, or the first when
 * none is that old (a collection keeps its id for life, and its chunks' history says they did
 * not exist yet). live 0: dropped by then. */
static coll_ver_t coll_hist_at(const coll_hist_t *h, uint64_t rev)
{
    size_t i = 0;
    while (i + 1 < h->n && h->v[i + 1].rev <= rev)
        i++;
    return h->v[i];
}

/* What one question needs: the collection then, a read of the history, the model then and
 * whether the subject held the action. */
typedef struct question {
    coll_ver_t c;
    store_txn_t *t;
    model_ref_t ref;
    int has_model, permitted;
    tuples_t tu;
} question_t;

static void question_end(asof_t *a, question_t *q)
{
    tuples_end(&q->tu);
    if (q->has_model)
        asof_model_release(a, &q->ref);
    store_txn_abort(q->t);
}

static int question_begin(asof_t *a, const char *coll, const engine_asker_t *who,
                          const char *action, uint64_t rev, uint64_t at_us, question_t *q,
                          cdn_err_t *err)
{
    int rc;
    coll_hist_t h;
    memset(q, 0, sizeof *q);
    if ((rc = store_txn_begin(a->e->store, 0, &q->t, err)) != 0)
        return rc;
    if ((rc = coll_hist_read(a, q->t, coll, &h, err)) == CDN_OK)
        q->c = coll_hist_at(&h, rev);
    cdn_free(h.v);
    if (rc == CDN_OK && !who->subject_id && !q->c.asserted)
        rc = cdn_err_set(err, CDN_ERR_INVALID,
                         "collection \"%s\" takes subjects of the permission model only: name "
                         "a subject",
                         coll);
    if (rc) {
        question_end(a, q);
        return rc;
    }
    q->permitted = 1;
    q->tu = (tuples_t){.a = a, .t = q->t, .rev = rev};
    if (who->subject_id) {
        char resource[COLL_NAME_MAX + 16];
        authz_decision_t d;
        authz_request_t req = {0};
        int whole;
        if ((rc = asof_subject_model(a, q->t, who->subject_id, rev, at_us, &q->ref, &whole, err)) !=
            0) {
            question_end(a, q);
            return rc;
        }
        q->has_model = 1;
        if (whole) /* it holds the tuples too */
            q->tu.m = q->ref.m;
        snprintf(resource, sizeof resource, "collection:%s", coll);
        req.subject = who->subject_id;
        req.resource = resource;
        req.action = action;
        req.cache = AUTHZ_CACHE_BYPASS;
        if ((rc = authz_is_authorized(q->ref.m, &req, &d, err)) != 0) {
            question_end(a, q);
            return rc;
        }
        q->permitted = d.authorized;
    }
    return CDN_OK;
}

int asof_check(asof_t *a, const char *coll, const engine_asker_t *who, const char *action,
               const char *id, uint64_t rev, uint64_t at_us, asof_answer_t *out, cdn_err_t *err)
{
    question_t q;
    const void *packed;
    size_t n;
    int rc = question_begin(a, coll, who, action, rev, at_us, &q, err);
    if (rc)
        return rc;
    rc = q.c.live ? history_acl_at(q.t, q.c.id, id, rev, &packed, &n) : CDN_ERR_NOT_FOUND;
    if (rc == CDN_ERR_NOT_FOUND || (rc == CDN_OK && !packed)) {
        memset(out, 0, sizeof *out);
        out->reason = ASOF_NO_CHUNK;
        rc = CDN_OK;
    } else if (rc == CDN_OK) {
        rc = decide(a->e, q.has_model ? q.ref.m : NULL, &q.tu, who, q.permitted, packed, n, out,
                    err);
    } else {
        rc = cdn_err_set(err, rc, "the permission history does not read");
    }
    question_end(a, &q);
    return rc;
}

typedef struct lister {
    asof_t *a;
    question_t *q;
    const engine_asker_t *who;
    asof_id_fn fn;
    void *ctx;
    size_t n;
    cdn_err_t *err;
} lister_t;

static int list_one(void *ctx, const char *id, const void *packed, size_t n)
{
    lister_t *l = ctx;
    asof_answer_t ans;
    int rc = decide(l->a->e, l->q->has_model ? l->q->ref.m : NULL, &l->q->tu, l->who,
                    l->q->permitted, packed, n, &ans, l->err);
    if (rc || !ans.readable)
        return rc;
    l->n++;
    return l->fn(l->ctx, id);
}

int asof_readable(asof_t *a, const char *coll, const engine_asker_t *who, const char *action,
                  uint64_t rev, uint64_t at_us, asof_id_fn fn, void *ctx, size_t *n, cdn_err_t *err)
{
    question_t q;
    int rc = question_begin(a, coll, who, action, rev, at_us, &q, err);
    *n = 0;
    if (rc)
        return rc;
    lister_t l = {a, &q, who, fn, ctx, 0, err};
    if (q.permitted && q.c.live)
        rc = history_acls_at(q.t, q.c.id, rev, list_one, &l);
    question_end(a, &q);
    *n = l.n;
    return rc;
}

/* ---- Who could read a chunk over a range of revisions. ---- */

typedef struct points {
    uint64_t *v;
    size_t n, cap;
} points_t;

static int add_point(void *ctx, uint64_t rev)
{
    points_t *p = ctx;
    if (p->n == p->cap) {
        if (p->cap >= ASOF_RANGE_POINTS_MAX)
            return CDN_ERR_LIMIT;
        size_t cap = p->cap ? p->cap * 2 : 64;
        uint64_t *v = cdn_realloc(p->v, cap * sizeof *v);
        if (!v)
            return CDN_ERR_NOMEM;
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = rev;
    return 0;
}

static int add_model_point(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    (void)klen;
    (void)val;
    (void)vlen;
    return add_point(ctx, store_rd64(key));
}

static int cmp_rev(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct names {
    char **v;
    size_t n, cap;
} names_t;

static int add_name(void *ctx, const char *id)
{
    names_t *s = ctx;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        char **v = cdn_realloc(s->v, cap * sizeof *v);
        if (!v)
            return CDN_ERR_NOMEM;
        s->v = v;
        s->cap = cap;
    }
    return (s->v[s->n] = cdn_strdup(id)) ? (s->n++, 0) : CDN_ERR_NOMEM;
}

static void names_free(names_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        cdn_free(s->v[i]);
    cdn_free(s->v);
}

/* At one revision p: every subject of the model then who could read the chunk (ACL packed, n
 * words), not yet in found, goes to fn. */
static int readers_at(asof_t *a, store_txn_t *t, const char *coll, const char *action, uint64_t p,
                      const void *packed, size_t n, cdn_strmap_t *found, asof_reader_fn fn,
                      void *ctx, cdn_err_t *err)
{
    model_ref_t ref;
    names_t subjects = {0};
    char resource[COLL_NAME_MAX + 16];
    int rc = asof_model_at(a, t, p, &ref, err);
    if (rc)
        return rc;
    tuples_t tu = {.a = a, .t = t, .rev = p, .m = ref.m}; /* a whole model holds its tuples */
    snprintf(resource, sizeof resource, "collection:%s", coll);
    rc = authz_subjects(ref.m, add_name, &subjects);
    for (size_t i = 0; rc == CDN_OK && i < subjects.n; i++) {
        uint32_t seen;
        const char *s = subjects.v[i];
        if (cdn_strmap_get(found, s, strlen(s), &seen) == CDN_OK)
            continue;
        authz_request_t req = {0};
        authz_decision_t d;
        asof_answer_t ans;
        engine_asker_t who = {s, NULL, 0};
        req.subject = s;
        req.resource = resource;
        req.action = action;
        req.cache = AUTHZ_CACHE_BYPASS;
        if ((rc = authz_is_authorized(ref.m, &req, &d, err)) != 0 || !d.authorized)
            continue;
        if ((rc = decide(a->e, ref.m, &tu, &who, 1, packed, n, &ans, err)) != 0 || !ans.readable)
            continue;
        if ((rc = cdn_strmap_put(found, s, strlen(s), 1)) == CDN_OK)
            rc = fn(ctx, s, p);
    }
    names_free(&subjects);
    asof_model_release(a, &ref);
    return rc;
}

int asof_readers(asof_t *a, const char *coll, const char *id, const char *action, uint64_t r1,
                 uint64_t r2, asof_reader_fn fn, void *ctx, size_t *n, cdn_err_t *err)
{
    store_txn_t *t;
    points_t pts = {0};
    cdn_strmap_t found;
    coll_hist_t h = {0};
    int rc;
    *n = 0;
    if (r2 < r1)
        return cdn_err_set(err, CDN_ERR_INVALID, "the range ends before it starts");
    if ((rc = store_txn_begin(a->e->store, 0, &t, err)) != 0)
        return rc;
    if ((rc = coll_hist_read(a, t, coll, &h, err)) != 0) {
        store_txn_abort(t);
        return rc;
    }
    /* The states in [r1, r2] that may differ for this chunk: r1's, and each later model
     * change, creation or drop of the collection, or write of the chunk's ACL in any
     * collection the name stood for. */
    rc = add_point(&pts, r1);
    if (rc == CDN_OK)
        rc = history_model_scan(t, r1, r2, add_model_point, &pts);
    for (size_t i = 0; rc == CDN_OK && i < h.n; i++) {
        if (h.v[i].rev > r1 && h.v[i].rev <= r2)
            rc = add_point(&pts, h.v[i].rev);
        if (rc == CDN_OK && h.v[i].live)
            rc = history_acl_versions(t, h.v[i].id, id, r1, r2, add_point, &pts);
    }
    if (rc == CDN_ERR_LIMIT)
        rc = cdn_err_set(err, rc,
                         "more than %d changes in the range touch this chunk or the model: ask "
                         "about a shorter one",
                         ASOF_RANGE_POINTS_MAX);
    cdn_strmap_init(&found);
    if (rc == CDN_OK)
        qsort(pts.v, pts.n, sizeof *pts.v, cmp_rev);
    for (size_t i = 0; rc == CDN_OK && i < pts.n; i++) {
        const void *packed;
        size_t words;
        if (i && pts.v[i] == pts.v[i - 1])
            continue;
        coll_ver_t cv = coll_hist_at(&h, pts.v[i]);
        int arc =
            cv.live ? history_acl_at(t, cv.id, id, pts.v[i], &packed, &words) : CDN_ERR_NOT_FOUND;
        if (arc == CDN_ERR_NOT_FOUND || (arc == CDN_OK && !packed))
            continue; /* the chunk did not exist then */
        if (arc) {
            rc = cdn_err_set(err, arc, "the permission history does not read");
            break;
        }
        rc = readers_at(a, t, coll, action, pts.v[i], packed, words, &found, fn, ctx, err);
    }
    *n = found.len;
    cdn_strmap_free(&found);
    cdn_free(pts.v);
    cdn_free(h.v);
    store_txn_abort(t);
    return rc;
}

/* ---- Retention. ---- */

int asof_prune(asof_t *a, uint64_t horizon, uint64_t *removed, cdn_err_t *err)
{
    store_txn_t *t;
    uint64_t mrev = 0, srev = 0;
    const char *json;
    size_t n;
    char *whole = NULL;
    int rc = store_txn_begin(a->e->store, 0, &t, err);
    *removed = 0;
    if (rc)
        return rc;
    /* The state at the horizon starts from a checkpoint at its last model record: made now
     * from the history when there is none there. */
    rc = history_model_last(t, horizon, &mrev);
    if (rc == CDN_OK && (history_snap_at(t, mrev, &srev, &json, &n) != CDN_OK || srev != mrev)) {
        model_ref_t ref;
        if ((rc = asof_model_at(a, t, horizon, &ref, err)) == CDN_OK) {
            rc = authz_export(ref.m, &whole, err);
            asof_model_release(a, &ref);
        }
    } else if (rc == CDN_ERR_NOT_FOUND) {
        rc = CDN_OK; /* no model record before it: the model was empty, and nothing goes */
        mrev = 0;
    }
    store_txn_abort(t);
    if (rc)
        return rc;
    if ((rc = store_txn_begin(a->e->store, 1, &t, err)) != 0) {
        cdn_free(whole);
        return rc;
    }
    if (whole)
        rc = history_snap_put(t, mrev, whole);
    cdn_free(whole);
    if (rc == CDN_OK)
        rc = history_prune(t, horizon, mrev, removed);
    if (rc) {
        store_txn_abort(t);
        return cdn_err_set(err, rc, "cannot prune the permission history: %s", cdn_strerror(rc));
    }
    return store_txn_commit(t, err);
}
