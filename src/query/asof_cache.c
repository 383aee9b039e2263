/* asof_cache.c: what as-of questions keep between them (asof_cache.h): parsed fragment
 * versions, and the version lists of groups and roles. Relies on jansson, xxhash and
 * store/history. */
#include "query/asof_cache.h"
#include "authz/authz.h"
#include "base/mem.h"
#include "store/history.h"

#include <pthread.h>
#include <string.h>
#include <xxhash.h>

/* A parsed fragment version (kind, id, the revision that wrote it): versions never change, so
 * one parse serves every question that reads it (a group's or a role's fragment changes far
 * less often than its members'). Direct mapped; a collision replaces. */
typedef struct frag_slot {
    uint64_t vrev;
    char kind;
    char *id;
    json_t *frag;
    int pins; /* questions reading it now: it is not replaced meanwhile */
} frag_slot_t;

#define FRAG_CACHE 4096

/* Every version of one group's or role's fragment up to a revision, so that a question reads
 * which version stood after its revision here instead of seeking it in the store: groups and
 * roles change far less often than the subjects below them, so most of a question's reads
 * become this and a hit in the fragment cache. Direct mapped; a collision replaces. */
typedef struct ver_slot {
    char kind;
    char *id;
    uint64_t upto;  /* the store's revision when read: every version at or before it is here */
    uint64_t *revs; /* oldest first; VER_GONE set: the entity's deletion */
    uint32_t n;
} ver_slot_t;

#define VER_CACHE 1024
#define VER_MAX 256 /* an entity written more often than this is sought each time */
#define VER_GONE (1ull << 63)

struct asof_cache {
    pthread_mutex_t frag_lock;
    frag_slot_t frags[FRAG_CACHE];
    pthread_mutex_t ver_lock;
    ver_slot_t vers[VER_CACHE];
};

int asof_cache_new(asof_cache_t **out)
{
    asof_cache_t *c = cdn_calloc(1, sizeof *c);
    if (!c)
        return CDN_ERR_NOMEM;
    pthread_mutex_init(&c->frag_lock, NULL);
    pthread_mutex_init(&c->ver_lock, NULL);
    *out = c;
    return CDN_OK;
}

void asof_cache_free(asof_cache_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < FRAG_CACHE; i++) {
        cdn_free(c->frags[i].id);
        json_decref(c->frags[i].frag);
    }
    for (int i = 0; i < VER_CACHE; i++) {
        cdn_free(c->vers[i].id);
        cdn_free(c->vers[i].revs);
    }
    pthread_mutex_destroy(&c->ver_lock);
    pthread_mutex_destroy(&c->frag_lock);
    cdn_free(c);
}

/* ---- Parsed fragment versions. ---- */

static int frag_at(char kind, const char *id, uint64_t vrev)
{
    return (int)((XXH64(id, strlen(id), (uint64_t)kind) ^ vrev) % FRAG_CACHE);
}

/* 1 and *use pinned when the cache holds version (kind, id, vrev) parsed. */
int asof_cache_frag_get(asof_cache_t *c, char kind, const char *id, uint64_t vrev,
                        asof_frag_use_t *use)
{
    int at = frag_at(kind, id, vrev);
    frag_slot_t *x = &c->frags[at];
    pthread_mutex_lock(&c->frag_lock);
    int hit = x->frag && x->vrev == vrev && x->kind == kind && !strcmp(x->id, id);
    if (hit) {
        x->pins++;
        *use = (asof_frag_use_t){at + 1, x->frag};
    }
    pthread_mutex_unlock(&c->frag_lock);
    return hit;
}

/* The parsed fragment of the version (kind, id, vrev) whose text is given, pinned in the cache
 * or parsed for this question alone (*use says which; frag_unuse gives it back). A cached
 * fragment is freed only when no question pins it. Subjects' fragments are not cached: each
 * membership change writes a new version of one, so a question rarely meets the version an
 * earlier one parsed, and keeping them would only evict the groups' and roles' (which change
 * far less often), whose cold frees cost more than the parse saved. */
int asof_cache_frag_parse(asof_cache_t *c, char kind, const char *id, uint64_t vrev,
                          const char *text, size_t n, asof_frag_use_t *use, cdn_err_t *err)
{
    int cached = kind != AUTHZ_ENT_SUBJECT;
    int at = frag_at(kind, id, vrev);
    frag_slot_t *x = &c->frags[at];
    json_error_t je;
    if (cached && asof_cache_frag_get(c, kind, id, vrev, use))
        return CDN_OK;
    json_t *frag = json_loadb(text, n, 0, &je);
    if (!frag)
        return cdn_err_set(err, CDN_ERR_CORRUPT,
                           "the permission history holds a fragment that does not parse: %s",
                           je.text);
    *use = (asof_frag_use_t){0, frag};
    if (!cached)
        return CDN_OK;
    char *copy = cdn_strdup(id), *old_id = NULL;
    json_t *old = NULL;
    pthread_mutex_lock(&c->frag_lock);
    if (copy && !x->pins) { /* kept, pinned for this question */
        old_id = x->id;
        old = x->frag;
        *x = (frag_slot_t){vrev, kind, copy, frag, 1};
        *use = (asof_frag_use_t){at + 1, frag};
        copy = NULL;
    }
    pthread_mutex_unlock(&c->frag_lock);
    cdn_free(copy);
    cdn_free(old_id); /* unpinned, out of the cache: no other question holds it */
    json_decref(old);
    return CDN_OK;
}

void asof_cache_frag_release(asof_cache_t *c, const asof_frag_use_t *u, size_t n)
{
    pthread_mutex_lock(&c->frag_lock);
    for (size_t i = 0; i < n; i++)
        if (u[i].slot)
            c->frags[u[i].slot - 1].pins--;
    pthread_mutex_unlock(&c->frag_lock);
    for (size_t i = 0; i < n; i++)
        if (!u[i].slot)
            json_decref(u[i].frag); /* this question's own */
}

/* ---- Which version of a group or a role stood after a revision. ---- */

static ver_slot_t *ver_slot(asof_cache_t *c, char kind, const char *id)
{
    return &c->vers[XXH64(id, strlen(id), (uint64_t)kind) % VER_CACHE];
}

/* 1 when the kept list of kind/id reaches rev: *vrev the version current after it (0: none
 * yet), *gone whether that version was the deletion. */
static int ver_lookup(asof_cache_t *c, char kind, const char *id, uint64_t rev, uint64_t *vrev,
                      int *gone)
{
    ver_slot_t *x = ver_slot(c, kind, id);
    int known = 0;
    pthread_mutex_lock(&c->ver_lock);
    if (x->id && x->kind == kind && x->upto >= rev && !strcmp(x->id, id)) {
        uint32_t lo = 0, hi = x->n; /* the first version after rev */
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if ((x->revs[mid] & ~VER_GONE) <= rev)
                lo = mid + 1;
            else
                hi = mid;
        }
        *vrev = lo ? x->revs[lo - 1] & ~VER_GONE : 0;
        *gone = lo && (x->revs[lo - 1] & VER_GONE);
        known = 1;
    }
    pthread_mutex_unlock(&c->ver_lock);
    return known;
}

typedef struct ver_list {
    uint64_t *v;
    size_t n, cap;
} ver_list_t;

static int ver_add(void *ctx, uint64_t rev, int gone)
{
    ver_list_t *l = ctx;
    if (l->n == VER_MAX)
        return CDN_ERR_LIMIT;
    void *p = l->v;
    if (cdn_grow(&p, &l->cap, l->n + 1, sizeof *l->v))
        return CDN_ERR_NOMEM;
    l->v = p;
    l->v[l->n++] = rev | (gone ? VER_GONE : 0);
    return CDN_OK;
}

/* ver_lookup, reading the list of kind/id from t (at store revision snap) when the kept one
 * does not reach rev. 0 when it cannot say (a question at a revision t does not hold yet, a
 * list too long to keep, a read that failed): the caller seeks the version itself. */
int asof_cache_version(asof_cache_t *c, store_txn_t *t, uint64_t snap, char kind, const char *id,
                       uint64_t rev, uint64_t *vrev, int *gone)
{
    if (ver_lookup(c, kind, id, rev, vrev, gone))
        return 1;
    if (rev > snap)
        return 0;
    ver_list_t l = {NULL, 0, 0};
    char *copy = NULL;
    if (history_ent_versions(t, kind, id, ver_add, &l) != CDN_OK || !(copy = cdn_strdup(id))) {
        cdn_free(l.v);
        return 0;
    }
    ver_slot_t *x = ver_slot(c, kind, id), old;
    pthread_mutex_lock(&c->ver_lock);
    old = *x;
    *x = (ver_slot_t){kind, copy, snap, l.v, (uint32_t)l.n};
    pthread_mutex_unlock(&c->ver_lock);
    cdn_free(old.id);
    cdn_free(old.revs);
    return ver_lookup(c, kind, id, rev, vrev, gone);
}
