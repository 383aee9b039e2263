/* check.c: is-authorized, batch checks, action listing and the decision cache (keyed by a
 * 128-bit hash of the request and the model revision). Relies on xxhash, cond.c, model.c. */
#include "authz/internal.h"

#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "base/mem.h"

static const char *const reason_names[AUTHZ_REASON_COUNT] = {"PERMISSION_GRANTED_NO_CONDITION",
                                                             "PERMISSION_GRANTED_CONDITION_MET",
                                                             "PERMISSION_FOUND_CONDITION_NOT_MET",
                                                             "NO_MATCHING_PERMISSION_FOUND",
                                                             "SUBJECT_NOT_FOUND",
                                                             "INVALID_SCOPE",
                                                             "INVALID_REQUEST",
                                                             "PERMISSION_DENIED_EXPLICITLY",
                                                             "PERMISSION_DELEGATED"};

const char *authz_reason_name(authz_reason_t r)
{
    return (unsigned)r < AUTHZ_REASON_COUNT ? reason_names[r] : "UNKNOWN_REASON";
}

/* A request after validation: lowercase action, split resource. */
typedef struct creq {
    const authz_request_t *r;
    const char *resource;
    size_t res_len, type_len;
    char action[AUTHZ_ACTION_MAX];
    int64_t now; /* the moment grants' validity windows are judged at */
} creq_t;

typedef struct match {
    const az_perm_t *perm;
    const az_grant_t *grant;
} match_t;

static void decision_reset(authz_decision_t *d, authz_reason_t reason, uint64_t rev)
{
    d->authorized = false;
    d->cached = false;
    d->reason = reason;
    d->revision = rev;
    d->resource[0] = d->action[0] = d->condition[0] = d->role[0] = d->granted_to[0] = '\0';
    d->authorizer[0] = '\0';
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
}

static void fill_match(const az_state_t *st, authz_decision_t *d, const match_t *mt)
{
    copy_str(d->resource, sizeof(d->resource), mt->perm->resource);
    copy_str(d->action, sizeof(d->action), mt->perm->action);
    copy_str(d->condition, sizeof(d->condition), mt->perm->cond_text);
    copy_str(d->authorizer, sizeof(d->authorizer), mt->perm->authorizer);
    copy_str(d->role, sizeof(d->role), mt->grant->role >= 0 ? st->roles[mt->grant->role].id : "");
    const az_grant_t *g = mt->grant;
    const char *kind = g->to_kind == AZ_TO_GROUP                     ? "group:"
                       : st->subjects[g->to].kind == AZ_KIND_SERVICE ? "service:"
                                                                     : "user:";
    const char *id = g->to_kind == AZ_TO_GROUP ? st->groups[g->to].id : st->subjects[g->to].id;
    size_t kl = strlen(kind);
    memcpy(d->granted_to, kind, kl);
    copy_str(d->granted_to + kl, sizeof(d->granted_to) - kl, id);
}

/* Validates resource, action and scope; on failure writes the deny decision and a message. */
static bool request_valid(const authz_request_t *r, creq_t *c, authz_decision_t *d, uint64_t rev,
                          cdn_err_t *err)
{
    c->r = r;
    const char *colon = r->resource ? strchr(r->resource, ':') : NULL;
    c->resource = r->resource;
    c->res_len = r->resource ? strlen(r->resource) : 0;
    if (!colon || colon == r->resource || !colon[1] || c->res_len >= AUTHZ_RESOURCE_MAX) {
        decision_reset(d, AUTHZ_INVALID_REQUEST, rev);
        cdn_err_set(err, CDN_ERR_INVALID, "resource '%.64s' must be \"type:id\" (under %d bytes)",
                    r->resource ? r->resource : "(null)", AUTHZ_RESOURCE_MAX);
        return false;
    }
    c->type_len = (size_t)(colon - r->resource);
    if (!r->action || !*r->action || !az_lower(r->action, c->action, sizeof(c->action))) {
        decision_reset(d, AUTHZ_INVALID_REQUEST, rev);
        cdn_err_set(err, CDN_ERR_INVALID, "action must be 1..%d bytes", AUTHZ_ACTION_MAX - 1);
        return false;
    }
    if (!r->scope_type && !r->scope_id)
        return true;
    cdn_err_t tmp;
    if (!r->scope_type || !r->scope_id || az_name_check(r->scope_type, "scope.type", &tmp) ||
        az_name_check(r->scope_id, "scope.id", &tmp)) {
        decision_reset(d, AUTHZ_INVALID_SCOPE, rev);
        cdn_err_set(err, CDN_ERR_INVALID,
                    "scope needs both a type and an id, each a non-empty name without ':'");
        return false;
    }
    return true;
}

static bool grant_in_scope(const az_grant_t *g, const authz_request_t *r)
{
    if (!g->scope_type)
        return true; /* unscoped grants hold everywhere */
    return r->scope_type && !strcmp(g->scope_type, r->scope_type) &&
           !strcmp(g->scope_id, r->scope_id);
}

static bool perm_applies(const az_perm_t *p, const creq_t *c)
{
    return (p->any_action || !strcmp(p->action, c->action)) &&
           az_perm_matches_resource(p, c->resource, c->res_len);
}

/* Calls visit(perm, grant, arg) for every permission the subject holds that matches the
 * request's resource and action (any action when match_action is false), stopping when it
 * returns true. */
typedef bool (*visit_fn)(const az_perm_t *p, const az_grant_t *g, void *arg);

static bool scan_grants(const az_state_t *st, const az_grants_t *gs, const creq_t *c,
                        bool match_action, visit_fn visit, void *arg)
{
    for (uint32_t i = 0; i < gs->n; i++) {
        const az_grant_t *g = gs->v[i];
        if (!grant_in_scope(g, c->r) || !az_grant_active(g, c->now))
            continue;
        const az_perm_t *ps = g->role >= 0 ? st->roles[g->role].perms : g->perm;
        uint32_t n = g->role >= 0 ? st->roles[g->role].nperms : 1;
        for (uint32_t k = 0; k < n; k++) {
            const az_perm_t *p = &ps[k];
            bool hit = match_action ? perm_applies(p, c)
                                    : az_perm_matches_resource(p, c->resource, c->res_len);
            if (hit && visit(p, g, arg))
                return true;
        }
    }
    return false;
}

static bool scan_subject(const az_state_t *st, uint32_t s, const creq_t *c, bool match_action,
                         visit_fn visit, void *arg)
{
    const az_subject_t *sub = &st->subjects[s];
    if (scan_grants(st, &sub->grants, c, match_action, visit, arg))
        return true;
    for (uint32_t i = 0; i < sub->all.n; i++)
        if (scan_grants(st, &st->groups[sub->all.v[i]].grants, c, match_action, visit, arg))
            return true;
    return false;
}

/* Pass 1 looks for an unconditional match (it wins outright) and remembers the first few
 * conditional matches, so that conditions are evaluated only when no unconditional grant
 * exists, without scanning the grants a second time. */
#define PASS1_KEEP 8

typedef struct pass1 {
    match_t uncond;
    match_t conds[PASS1_KEEP];
    uint32_t nconds;
} pass1_t;

static bool visit_pass1(const az_perm_t *p, const az_grant_t *g, void *arg)
{
    pass1_t *a = arg;
    if (p->deny)
        return false;
    if (!p->cond && !p->authorizer) {
        a->uncond = (match_t){p, g};
        return true; /* an unconditional grant wins: stop */
    }
    if (a->nconds < PASS1_KEEP)
        a->conds[a->nconds] = (match_t){p, g};
    a->nconds++;
    return false;
}

typedef struct pass2 {
    const az_env_t *env;
    match_t met;
} pass2_t;

static bool visit_pass2(const az_perm_t *p, const az_grant_t *g, void *arg)
{
    pass2_t *a = arg;
    if (!p->deny && !p->authorizer && p->cond && az_cond_eval(p->cond, a->env)) {
        a->met = (match_t){p, g};
        return true;
    }
    return false;
}

/* A delegated permission whose own condition (if any) holds: the authorizer decides. */
static bool delegable(const az_perm_t *p, const az_env_t *env)
{
    return !p->deny && p->authorizer && (!p->cond || az_cond_eval(p->cond, env));
}

static bool visit_delegated(const az_perm_t *p, const az_grant_t *g, void *arg)
{
    pass2_t *a = arg;
    if (!delegable(p, a->env))
        return false;
    a->met = (match_t){p, g};
    return true;
}

static void env_init(az_env_t *env, const az_state_t *st, uint32_t s, const creq_t *c)
{
    const az_subject_t *sub = &st->subjects[s];
    env->subject_id = sub->id;
    env->subject_kind = sub->kind == AZ_KIND_SERVICE ? "service" : "user";
    env->subject_attrs = sub->attrs;
    env->res_type = c->resource;
    env->res_type_len = c->type_len;
    env->res_id = c->resource + c->type_len + 1;
    env->res_attrs = c->r->resource_attrs;
    env->context = c->r->context;
    env->scope_type = c->r->scope_type;
    env->scope_id = c->r->scope_id;
}

/* A deny applies when it holds no condition, or its condition holds or cannot be decided. */
static bool visit_deny(const az_perm_t *p, const az_grant_t *g, void *arg)
{
    pass2_t *a = arg;
    if (!p->deny || (p->cond && !az_cond_eval_deny(p->cond, a->env)))
        return false;
    a->met = (match_t){p, g};
    return true;
}

/* Returns the reason and the match (perm NULL when none). */
static authz_reason_t evaluate(const az_state_t *st, uint32_t s, const creq_t *c, match_t *mt)
{
    if (st->denies) { /* a deny overrides: look for one first */
        az_env_t denv;
        env_init(&denv, st, s, c);
        pass2_t d = {&denv, {0}};
        if (scan_subject(st, s, c, true, visit_deny, &d)) {
            *mt = d.met;
            return AUTHZ_PERMISSION_DENIED_EXPLICITLY;
        }
    }
    pass1_t p1;
    p1.uncond.perm = NULL;
    p1.nconds = 0;
    scan_subject(st, s, c, true, visit_pass1, &p1);
    if (p1.uncond.perm) {
        *mt = p1.uncond;
        return AUTHZ_PERMISSION_GRANTED_NO_CONDITION;
    }
    if (!p1.nconds) {
        mt->perm = NULL;
        return AUTHZ_NO_MATCHING_PERMISSION_FOUND;
    }
    az_env_t env;
    env_init(&env, st, s, c);
    pass2_t p2 = {&env, {0}};
    for (uint32_t i = 0; i < p1.nconds && i < PASS1_KEEP && !p2.met.perm; i++)
        if (!p1.conds[i].perm->authorizer && az_cond_eval(p1.conds[i].perm->cond, &env))
            p2.met = p1.conds[i];
    if (!p2.met.perm && p1.nconds > PASS1_KEEP)
        scan_subject(st, s, c, true, visit_pass2, &p2); /* too many to remember: rescan */
    if (p2.met.perm) {
        *mt = p2.met;
        return AUTHZ_PERMISSION_GRANTED_CONDITION_MET;
    }
    /* Nothing here allows it: a delegated permission hands the question on. */
    for (uint32_t i = 0; i < p1.nconds && i < PASS1_KEEP && !p2.met.perm; i++)
        if (delegable(p1.conds[i].perm, &env))
            p2.met = p1.conds[i];
    if (!p2.met.perm && p1.nconds > PASS1_KEEP)
        scan_subject(st, s, c, true, visit_delegated, &p2);
    if (p2.met.perm) {
        *mt = p2.met;
        return AUTHZ_PERMISSION_DELEGATED;
    }
    *mt = p1.conds[0];
    return AUTHZ_PERMISSION_FOUND_CONDITION_NOT_MET;
}

/* ---- decision cache ---- */

static void hash_json(XXH3_state_t *h, const json_t *j)
{
    char tag = j ? (char)json_typeof(j) : 'x';
    XXH3_128bits_update(h, &tag, 1);
    if (!j)
        return;
    size_t i;
    const char *k;
    json_t *v;
    double d;
    long long ll;
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        json_object_foreach((json_t *)j, k, v)
        {
            XXH3_128bits_update(h, k, strlen(k) + 1);
            hash_json(h, v);
        }
        XXH3_128bits_update(h, "}", 1);
        break;
    case JSON_ARRAY:
        json_array_foreach(j, i, v) hash_json(h, v);
        XXH3_128bits_update(h, "]", 1);
        break;
    case JSON_STRING:
        i = json_string_length(j);
        XXH3_128bits_update(h, &i, sizeof(i));
        XXH3_128bits_update(h, json_string_value(j), i);
        break;
    case JSON_INTEGER:
        ll = json_integer_value(j);
        XXH3_128bits_update(h, &ll, sizeof(ll));
        break;
    case JSON_REAL:
        d = json_real_value(j);
        XXH3_128bits_update(h, &d, sizeof(d));
        break;
    default: break;
    }
}

static XXH128_hash_t request_key(const creq_t *c)
{
    XXH3_state_t h;
    XXH3_128bits_reset(&h);
    const authz_request_t *r = c->r;
    XXH3_128bits_update(&h, r->subject, strlen(r->subject) + 1);
    XXH3_128bits_update(&h, c->resource, c->res_len + 1);
    XXH3_128bits_update(&h, c->action, strlen(c->action) + 1);
    if (r->scope_type) {
        XXH3_128bits_update(&h, r->scope_type, strlen(r->scope_type) + 1);
        XXH3_128bits_update(&h, r->scope_id, strlen(r->scope_id) + 1);
    } else {
        XXH3_128bits_update(&h, "\x01", 1);
    }
    hash_json(&h, r->context);
    hash_json(&h, r->resource_attrs);
    return XXH3_128bits_digest(&h);
}

/* The slots are sequence locks whose every field is an atomic: a reader's field loads are
 * acquires, so its second look at seq comes after them, and a writer's field stores are
 * releases after its acquiring CAS. A reader that reads any field a writer stored therefore
 * sees that writer's odd seq on the second look and discards the slot. No fences: ThreadSanitizer
 * follows acquire and release but not fences, and on x86 these orders cost nothing. */
static bool cache_get(az_dslot_t *cache, XXH128_hash_t k, uint64_t rev, authz_reason_t *reason,
                      match_t *mt)
{
    az_dslot_t *s = &cache[k.low64 & (AZ_DCACHE_SLOTS - 1)];
    uint64_t s1 = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (s1 & 1)
        return false;
    uint64_t k0 = atomic_load_explicit(&s->k0, memory_order_acquire);
    uint64_t k1 = atomic_load_explicit(&s->k1, memory_order_acquire);
    uint64_t r = atomic_load_explicit(&s->rev, memory_order_acquire);
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    uintptr_t p = atomic_load_explicit(&s->perm, memory_order_acquire);
    uintptr_t g = atomic_load_explicit(&s->grant, memory_order_acquire);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) != s1)
        return false;
    if (!(w & 0x100) || k0 != k.low64 || k1 != k.high64 || r != rev)
        return false;
    *reason = (authz_reason_t)((w >> 1) & 0x7f);
    mt->perm = (const az_perm_t *)p;
    mt->grant = (const az_grant_t *)g;
    return true;
}

/* Entries hold pointers into the state; they are only trusted at the same revision, and the
 * state cannot change while the reader holds the read lock. */
static void cache_put(az_dslot_t *cache, XXH128_hash_t k, uint64_t rev, authz_reason_t reason,
                      const match_t *mt)
{
    az_dslot_t *s = &cache[k.low64 & (AZ_DCACHE_SLOTS - 1)];
    uint64_t s0 = atomic_load_explicit(&s->seq, memory_order_relaxed);
    if ((s0 & 1) || !atomic_compare_exchange_strong_explicit(
                        &s->seq, &s0, s0 + 1, memory_order_acq_rel, memory_order_relaxed))
        return; /* another thread is writing this slot: skip, it is only a cache */
    atomic_store_explicit(&s->k0, k.low64, memory_order_release);
    atomic_store_explicit(&s->k1, k.high64, memory_order_release);
    atomic_store_explicit(&s->rev, rev, memory_order_release);
    atomic_store_explicit(&s->word, 0x100u | ((uint64_t)reason << 1), memory_order_release);
    atomic_store_explicit(&s->perm, (uintptr_t)mt->perm, memory_order_release);
    atomic_store_explicit(&s->grant, (uintptr_t)mt->grant, memory_order_release);
    atomic_store_explicit(&s->seq, s0 + 2, memory_order_release);
}

/* The model's decision cache, allocated on first use by whichever reader gets there first (the
 * others free theirs); NULL for a slice, or when it cannot be allocated: decisions are then
 * evaluated every time, which is slower but the same. */
static az_dslot_t *cache_of(authz_model_t *m)
{
    az_dslot_t *c = atomic_load_explicit(&m->dcache, memory_order_acquire), *fresh;
    if (c || !m->dcache_wanted || !(fresh = cdn_calloc(AZ_DCACHE_SLOTS, sizeof *fresh)))
        return c;
    if (atomic_compare_exchange_strong_explicit(&m->dcache, &c, fresh, memory_order_acq_rel,
                                                memory_order_acquire))
        return fresh;
    cdn_free(fresh);
    return c;
}

static void decide_locked(authz_model_t *m, const authz_request_t *req, authz_decision_t *out,
                          cdn_err_t *err)
{
    const az_state_t *st = m->st;
    uint64_t rev = atomic_load(&m->revision);
    creq_t c;
    if (!request_valid(req, &c, out, rev, err))
        return;
    c.now = az_model_now(m);
    uint32_t s;
    if (!req->subject || !az_subject_find(st, req->subject, &s)) {
        decision_reset(out, AUTHZ_SUBJECT_NOT_FOUND, rev);
        cdn_err_set(err, CDN_ERR_NOT_FOUND, "subject '%.64s' is not in the model",
                    req->subject ? req->subject : "(null)");
        return;
    }
    match_t mt = {0};
    authz_reason_t reason;
    XXH128_hash_t key = {0, 0};
    bool hit = false;
    /* A slice has no cache; a model with validity windows decides by the time as well, which
     * the cache's key does not hold. */
    az_dslot_t *cache =
        req->cache != AUTHZ_CACHE_BYPASS && !st->windows && m->dcache_wanted ? cache_of(m) : NULL;
    if (cache) {
        key = request_key(&c);
        if (req->cache == AUTHZ_CACHE_USE)
            hit = cache_get(cache, key, rev, &reason, &mt);
    }
    if (!hit) {
        reason = evaluate(st, s, &c, &mt);
        if (cache)
            cache_put(cache, key, rev, reason, &mt);
    }
    decision_reset(out, reason, rev);
    out->cached = hit;
    out->authorized = reason == AUTHZ_PERMISSION_GRANTED_NO_CONDITION ||
                      reason == AUTHZ_PERMISSION_GRANTED_CONDITION_MET;
    if (mt.perm)
        fill_match(st, out, &mt);
}

static int read_lock(authz_model_t *m, cdn_err_t *err)
{
    pthread_rwlock_rdlock(&m->lock);
    if (!m->broken)
        return CDN_OK;
    pthread_rwlock_unlock(&m->lock);
    return cdn_err_set(err, CDN_ERR_INTERNAL,
                       "the authorization model is broken after an out-of-memory error; "
                       "import or reopen it (every check denies meanwhile)");
}

int authz_is_authorized(authz_model_t *m, const authz_request_t *req, authz_decision_t *out,
                        cdn_err_t *err)
{
    if (!m || !req || !out)
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_is_authorized: NULL argument");
    decision_reset(out, AUTHZ_NO_MATCHING_PERMISSION_FOUND, 0);
    int rc = read_lock(m, err);
    if (rc)
        return rc;
    decide_locked(m, req, out, err);
    pthread_rwlock_unlock(&m->lock);
    return CDN_OK;
}

int authz_is_authorized_batch(authz_model_t *m, const authz_request_t *req,
                              const char *const *resources, size_t n, authz_decision_t *out,
                              cdn_err_t *err)
{
    if (!m || !req || (n && (!resources || !out)))
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_is_authorized_batch: NULL argument");
    for (size_t i = 0; i < n; i++)
        decision_reset(&out[i], AUTHZ_NO_MATCHING_PERMISSION_FOUND, 0);
    int rc = read_lock(m, err);
    if (rc)
        return rc;
    authz_request_t one = *req;
    for (size_t i = 0; i < n; i++) { /* one lock: the whole batch reads one revision */
        one.resource = resources[i];
        decide_locked(m, &one, &out[i], err);
    }
    pthread_rwlock_unlock(&m->lock);
    return CDN_OK;
}

int authz_authorize_view(authz_model_t *m, const authz_request_t *req, authz_decision_t *out,
                         authz_view_t **view, cdn_err_t *err)
{
    if (!m || !req || !out || !view || !req->subject)
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_authorize_view: NULL argument");
    *view = NULL;
    decision_reset(out, AUTHZ_NO_MATCHING_PERMISSION_FOUND, 0);
    int rc = read_lock(m, err);
    if (rc)
        return rc;
    decide_locked(m, req, out, err);
    if (out->authorized) /* under the same lock: the view is at the decision's revision */
        rc = az_view_get_locked(m, req->subject, NULL, NULL, view, err);
    out->counted = m->changes ? atomic_load(m->changes) : 0;
    pthread_rwlock_unlock(&m->lock);
    return rc;
}

typedef struct actions_acc {
    const az_env_t *env;
    char **v;
    size_t n, cap;
    bool nomem;
} actions_acc_t;

static bool visit_actions(const az_perm_t *p, const az_grant_t *g, void *arg)
{
    (void)g;
    actions_acc_t *a = arg;
    /* A delegated permission is left out: only its authorizer could say. */
    if (p->deny || p->authorizer || (p->cond && !az_cond_eval(p->cond, a->env)))
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->v[i], p->action))
            return false;
    void *q = a->v;
    char *dup = cdn_strdup(p->action);
    if (!dup || cdn_grow(&q, &a->cap, a->n + 1, sizeof(char *))) {
        cdn_free(dup);
        a->nomem = true;
        return true;
    }
    a->v = q;
    a->v[a->n++] = dup;
    return false;
}

/* Takes out of the list the actions a deny refuses (all of them for a deny of "*"). */
static bool visit_denied_actions(const az_perm_t *p, const az_grant_t *g, void *arg)
{
    (void)g;
    actions_acc_t *a = arg;
    if (!p->deny || (p->cond && !az_cond_eval_deny(p->cond, a->env)))
        return false;
    for (size_t i = 0; i < a->n;) {
        if (p->any_action || !strcmp(a->v[i], p->action)) {
            cdn_free(a->v[i]);
            a->v[i] = a->v[--a->n];
        } else {
            i++;
        }
    }
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int authz_list_actions(authz_model_t *m, const authz_request_t *req, char ***actions_out,
                       size_t *n_out, cdn_err_t *err)
{
    if (!m || !req || !actions_out || !n_out)
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_list_actions: NULL argument");
    *actions_out = NULL;
    *n_out = 0;
    authz_request_t r = *req;
    r.action = "*"; /* only to pass validation; actions are not matched here */
    authz_decision_t d;
    creq_t c;
    if (!request_valid(&r, &c, &d, 0, err))
        return CDN_ERR_INVALID;
    c.now = az_model_now(m);
    int rc = read_lock(m, err);
    if (rc)
        return rc;
    uint32_t s;
    actions_acc_t acc = {0};
    if (!req->subject || !az_subject_find(m->st, req->subject, &s)) {
        pthread_rwlock_unlock(&m->lock);
        return cdn_err_set(err, CDN_ERR_NOT_FOUND, "subject '%.64s' is not in the model",
                           req->subject ? req->subject : "(null)");
    }
    az_env_t env;
    env_init(&env, m->st, s, &c);
    acc.env = &env;
    scan_subject(m->st, s, &c, false, visit_actions, &acc);
    if (m->st->denies && !acc.nomem)
        scan_subject(m->st, s, &c, false, visit_denied_actions, &acc);
    pthread_rwlock_unlock(&m->lock);
    if (acc.nomem) {
        authz_actions_free(acc.v, acc.n);
        return cdn_err_set(err, CDN_ERR_NOMEM, "authz_list_actions: out of memory");
    }
    if (acc.n)
        qsort(acc.v, acc.n, sizeof(char *), cmp_str);
    *actions_out = acc.v;
    *n_out = acc.n;
    return CDN_OK;
}

void authz_actions_free(char **actions, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cdn_free(actions[i]);
    cdn_free(actions);
}
