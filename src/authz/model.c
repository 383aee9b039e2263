/* model.c: the model handle (lock, revision, caches) and the state's building blocks: id sets,
 * the name map, entity lookup and teardown. Relies on base/mem.h, xxhash and pthreads. */
#include "authz/internal.h"
#include "authz/rebac.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "base/mem.h"

/* ---- sorted id sets ---- */

static uint32_t ids_lower_bound(const az_ids_t *s, uint32_t id)
{
    uint32_t lo = 0, hi = s->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->v[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int az_ids_add(az_ids_t *s, uint32_t id)
{
    uint32_t at = ids_lower_bound(s, id);
    if (at < s->n && s->v[at] == id)
        return CDN_OK;
    if (s->n == s->cap) {
        size_t cap = s->cap;
        void *p = s->v;
        if (cdn_grow(&p, &cap, (size_t)s->n + 1, sizeof(uint32_t)))
            return CDN_ERR_NOMEM;
        s->v = p;
        s->cap = (uint32_t)cap;
    }
    memmove(s->v + at + 1, s->v + at, (size_t)(s->n - at) * sizeof(uint32_t));
    s->v[at] = id;
    s->n++;
    return CDN_OK;
}

void az_ids_del(az_ids_t *s, uint32_t id)
{
    uint32_t at = ids_lower_bound(s, id);
    if (at >= s->n || s->v[at] != id)
        return;
    memmove(s->v + at, s->v + at + 1, (size_t)(s->n - at - 1) * sizeof(uint32_t));
    s->n--;
}

bool az_ids_has(const az_ids_t *s, uint32_t id)
{
    uint32_t at = ids_lower_bound(s, id);
    return at < s->n && s->v[at] == id;
}

void az_ids_free(az_ids_t *s)
{
    cdn_free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

/* ---- name map ---- */

static void az_map_free(az_map_t *mp);

static uint32_t map_slot(const az_map_t *mp, const char *key)
{
    return (uint32_t)XXH3_64bits(key, strlen(key)) & (mp->cap - 1);
}

static int map_grow(az_map_t *mp)
{
    uint32_t ncap = mp->cap ? mp->cap * 2 : 64;
    az_map_t nm = {cdn_calloc(ncap, sizeof(char *)), cdn_calloc(ncap, sizeof(uint32_t)), ncap, 0};
    if (!nm.keys || !nm.vals) {
        cdn_free(nm.keys);
        cdn_free(nm.vals);
        return CDN_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < mp->cap; i++) {
        if (!mp->keys[i])
            continue;
        uint32_t j = map_slot(&nm, mp->keys[i]);
        while (nm.keys[j])
            j = (j + 1) & (ncap - 1);
        nm.keys[j] = mp->keys[i];
        nm.vals[j] = mp->vals[i];
        nm.n++;
    }
    az_map_free(mp);
    *mp = nm;
    return CDN_OK;
}

int az_map_put(az_map_t *mp, const char *key, uint32_t val)
{
    if ((mp->n + 1) * 4 >= mp->cap * 3 && map_grow(mp))
        return CDN_ERR_NOMEM;
    uint32_t j = map_slot(mp, key);
    while (mp->keys[j] && strcmp(mp->keys[j], key))
        j = (j + 1) & (mp->cap - 1);
    if (!mp->keys[j])
        mp->n++;
    mp->keys[j] = key;
    mp->vals[j] = val;
    return CDN_OK;
}

static bool az_map_get(const az_map_t *mp, const char *key, uint32_t *val)
{
    if (!mp->cap)
        return false;
    uint32_t j = map_slot(mp, key);
    while (mp->keys[j]) {
        if (!strcmp(mp->keys[j], key)) {
            *val = mp->vals[j];
            return true;
        }
        j = (j + 1) & (mp->cap - 1);
    }
    return false;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
void az_map_del(az_map_t *mp, const char *key)
{
    if (!mp->cap)
        return;
    uint32_t mask = mp->cap - 1, j = map_slot(mp, key);
    while (mp->keys[j] && strcmp(mp->keys[j], key))
        j = (j + 1) & mask;
    if (!mp->keys[j])
        return;
    mp->keys[j] = NULL;
    mp->n--;
    for (uint32_t k = (j + 1) & mask; mp->keys[k]; k = (k + 1) & mask) {
        uint32_t home = map_slot(mp, mp->keys[k]);
        /* move k into the hole j when its home is not in (j, k] cyclically */
        bool in_range = (j < k) ? (home > j && home <= k) : (home > j || home <= k);
        if (!in_range) {
            mp->keys[j] = mp->keys[k];
            mp->vals[j] = mp->vals[k];
            mp->keys[k] = NULL;
            j = k;
        }
    }
}

static void az_map_free(az_map_t *mp)
{
    cdn_free(mp->keys);
    cdn_free(mp->vals);
    memset(mp, 0, sizeof(*mp));
}

/* ---- entities ---- */

bool az_subject_get(const az_state_t *st, const char *id, uint32_t *idx)
{
    return az_map_get(&st->subject_map, id, idx);
}

bool az_subject_find(const az_state_t *st, const char *name, uint32_t *idx)
{
    int kind = -1;
    if (!strncmp(name, "user:", 5)) {
        kind = AZ_KIND_USER;
        name += 5;
    } else if (!strncmp(name, "service:", 8)) {
        kind = AZ_KIND_SERVICE;
        name += 8;
    }
    return az_map_get(&st->subject_map, name, idx) &&
           (kind < 0 || st->subjects[*idx].kind == (uint8_t)kind);
}

bool az_group_get(const az_state_t *st, const char *id, uint32_t *idx)
{
    return az_map_get(&st->group_map, id, idx);
}

bool az_role_get(const az_state_t *st, const char *id, uint32_t *idx)
{
    return az_map_get(&st->role_map, id, idx);
}

void az_perm_clear(az_perm_t *p)
{
    cdn_free(p->resource);
    cdn_free(p->action);
    az_cond_free(p->cond);
    if (p->cond_src)
        json_decref(p->cond_src);
    cdn_free(p->cond_text);
    cdn_free(p->authorizer);
    memset(p, 0, sizeof(*p));
}

void az_grant_free(az_grant_t *g)
{
    if (!g)
        return;
    if (g->perm) {
        az_perm_clear(g->perm);
        cdn_free(g->perm);
    }
    cdn_free(g->scope_type);
    cdn_free(g->scope_id);
    cdn_free(g);
}

static void grants_free(az_grants_t *gs)
{
    for (uint32_t i = 0; i < gs->n; i++)
        az_grant_free(gs->v[i]);
    cdn_free(gs->v);
    memset(gs, 0, sizeof(*gs));
}

az_state_t *az_state_new(void)
{
    return cdn_calloc(1, sizeof(az_state_t));
}

void az_state_free(az_state_t *st)
{
    if (!st)
        return;
    rb_state_release(st->rebac);
    for (uint32_t i = 0; i < st->nsubjects; i++) {
        az_subject_t *s = &st->subjects[i];
        cdn_free(s->id);
        if (s->attrs)
            json_decref(s->attrs);
        json_decref(s->tenants);
        az_ids_free(&s->groups);
        az_ids_free(&s->all);
        grants_free(&s->grants);
    }
    for (uint32_t i = 0; i < st->ngroups; i++) {
        az_group_t *g = &st->groups[i];
        cdn_free(g->id);
        json_decref(g->attrs);
        az_ids_free(&g->parents);
        az_ids_free(&g->children);
        az_ids_free(&g->subjects);
        az_ids_free(&g->anc);
        grants_free(&g->grants);
    }
    for (uint32_t i = 0; i < st->nroles; i++) {
        az_role_t *r = &st->roles[i];
        cdn_free(r->id);
        for (uint32_t k = 0; k < r->nperms; k++)
            az_perm_clear(&r->perms[k]);
        cdn_free(r->perms);
    }
    cdn_free(st->subjects);
    cdn_free(st->groups);
    cdn_free(st->roles);
    az_map_free(&st->subject_map);
    az_map_free(&st->group_map);
    az_map_free(&st->role_map);
    cdn_free(st);
}

bool az_lower(const char *in, char *out, size_t cap)
{
    size_t i = 0;
    for (; in[i]; i++) {
        if (i + 1 >= cap)
            return false;
        out[i] = (char)tolower((unsigned char)in[i]);
    }
    out[i] = '\0';
    return true;
}

bool az_perm_matches_resource(const az_perm_t *p, const char *res, size_t res_len)
{
    switch (p->res_kind) {
    case AZ_RES_ANY: return true;
    case AZ_RES_PREFIX: return res_len >= p->res_len && !memcmp(res, p->resource, p->res_len);
    default: return res_len == p->res_len && !memcmp(res, p->resource, res_len);
    }
}

/* ---- names of entities (what a change touched, track.c) ---- */

int az_names_add(az_names_t *t, char kind, const char *id)
{
    size_t n = strlen(id);
    if (t->n == t->cap) {
        size_t cap = t->cap;
        void *p = t->v;
        if (cdn_grow(&p, &cap, (size_t)t->n + 1, sizeof *t->v))
            return CDN_ERR_NOMEM;
        t->v = p;
        t->cap = (uint32_t)cap;
    }
    char *s = cdn_malloc(n + 2);
    if (!s)
        return CDN_ERR_NOMEM;
    s[0] = kind;
    memcpy(s + 1, id, n + 1);
    t->v[t->n++] = s;
    return CDN_OK;
}

void az_names_free(az_names_t *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        cdn_free(t->v[i]);
    cdn_free(t->v);
    memset(t, 0, sizeof *t);
}

int az_names_move(az_names_t *dst, az_names_t *src)
{
    for (uint32_t i = 0; i < src->n; i++) {
        int rc = az_names_add(dst, src->v[i][0], src->v[i] + 1);
        if (rc)
            return rc;
    }
    az_names_free(src);
    return CDN_OK;
}

/* ---- time, for grants with a validity window ---- */

int64_t az_model_now(const authz_model_t *m)
{
    struct timespec ts;
    if (m->at_us)
        return m->at_us;
    if (!m->st || !m->st->windows)
        return 0;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void az_time_text(int64_t us, char *out, size_t cap)
{
    time_t sec = (time_t)(us >= 0 ? us / 1000000 : (us - 999999) / 1000000);
    long frac = (long)(us - (int64_t)sec * 1000000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, cap - n, frac ? ".%06ldZ" : "Z", frac);
}

void authz_model_set_time(authz_model_t *m, int64_t at_us)
{
    m->at_us = at_us;
}

bool authz_model_has_windows(authz_model_t *m)
{
    pthread_rwlock_rdlock(&m->lock);
    bool w = m->st && m->st->windows;
    pthread_rwlock_unlock(&m->lock);
    return w;
}

/* ---- the model handle ---- */

int az_model_alloc(bool decision_cache, authz_model_t **out)
{
    *out = NULL;
    authz_model_t *m = cdn_calloc(1, sizeof(*m));
    if (!m)
        return CDN_ERR_NOMEM;
    m->st = az_state_new();
    m->dcache_wanted = decision_cache;
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    /* Writers must not starve behind a stream of checks: revocation is meant to land now. */
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    int rc = pthread_rwlock_init(&m->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    if (!m->st || rc) {
        az_state_free(m->st);
        if (!rc)
            pthread_rwlock_destroy(&m->lock);
        cdn_free(m);
        return CDN_ERR_NOMEM;
    }
    *out = m;
    return CDN_OK;
}

int authz_model_new(authz_model_t **out, cdn_err_t *err)
{
    return az_model_alloc(true, out)
               ? cdn_err_set(err, CDN_ERR_NOMEM, "authz: out of memory creating the model")
               : CDN_OK;
}

/* Here, not in model_view.c, because the model's view cache holds the references it drops. */
void authz_view_release(authz_view_t *v)
{
    if (v && atomic_fetch_sub(&v->refs_, 1) == 1)
        cdn_free(v);
}

void az_model_views_drop(authz_model_t *m)
{
    if (!atomic_load(&m->views_cached))
        return;
    for (uint32_t i = 0; i < m->nviews; i++) {
        authz_view_t *v = atomic_exchange(&m->views[i], NULL);
        if (v)
            authz_view_release(v);
    }
    atomic_store(&m->views_cached, 0);
}

void az_model_swap(authz_model_t *m, az_state_t *st)
{
    az_model_views_drop(m);
    az_state_free(m->st);
    m->st = st;
    m->broken = false;
}

int authz_subjects(authz_model_t *m, authz_subject_fn fn, void *ctx)
{
    int rc = 0;
    pthread_rwlock_rdlock(&m->lock);
    for (uint32_t i = 0; m->st && i < m->st->nsubjects && !rc; i++)
        if (m->st->subjects[i].id)
            rc = fn(ctx, m->st->subjects[i].id);
    pthread_rwlock_unlock(&m->lock);
    return rc;
}

void authz_model_free(authz_model_t *m)
{
    if (!m)
        return;
    az_model_views_drop(m);
    cdn_free(m->views);
    az_state_free(m->st);
    az_names_free(&m->touched);
    cdn_free(atomic_load(&m->dcache));
    pthread_rwlock_destroy(&m->lock);
    cdn_free(m);
}

uint64_t authz_model_revision(authz_model_t *m)
{
    return atomic_load(&m->revision);
}

void authz_model_count_changes(authz_model_t *m, _Atomic uint64_t *counter)
{
    m->changes = counter;
}
