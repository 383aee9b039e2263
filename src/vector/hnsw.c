/* hnsw.c: creating, growing and inserting into the HNSW graph (Malkov & Yashunin), with
 * neighbour diversity (heuristic 4) and concurrent inserts. Relies on hnsw_search.c's descent and
 * construction search, hnsw_prim.c's lists, heaps and scoring (hnsw_int.h), base/mem.h. */
#include "vector/hnsw_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/mem.h"

hnsw_params_t hnsw_params_default(void)
{
    /* ef_construction 160: with stalled searches widened (widen()), the graph it builds answers
     * as 200's did (1M x 384 topics recall@10 0.9825 / 0.9975 / 0.9995 at ef 64 / 128 / 256
     * against 0.9835 / 0.9975 / 0.9995; Fashion-MNIST and 200k topics the same from ef 48 /
     * 64) in 0.82 - 0.88 of the time (docs/benchmarks.md, "ef_construction 160"). */
    hnsw_params_t p = {.m = 16, .ef_construction = 160, .ef_search = 64, .seed = 42};
    return p;
}

/* ---------- creation and growth ---------- */

int hnsw_create(hnsw_params_t p, vec_metric_t metric, uint32_t dim, hnsw_t **out)
{
    *out = NULL;
    if (p.m < HNSW_M_MIN || p.m > HNSW_M_MAX || p.ef_construction == 0 ||
        p.ef_construction > HNSW_EF_MAX || p.ef_search == 0 || p.ef_search > HNSW_EF_MAX ||
        dim == 0 || !vec_dist_for(metric))
        return CDN_ERR_INVALID;
    hnsw_t *h = cdn_calloc(1, sizeof(*h));
    if (!h)
        return CDN_ERR_NOMEM;
    h->p = p;
    h->metric = metric;
    h->dim = dim;
    h->m0 = 2 * p.m;
    h->level_mult = 1.0 / log((double)p.m);
    h->dist = vec_dist_for(metric);
    h->dist4 = vec_dist4_for(metric);
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    /* Writer preference: a growing insert must not starve behind a stream of searches. */
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&h->grow_lock, &ra);
    pthread_rwlock_init(&h->write_gate, &ra);
    pthread_rwlockattr_destroy(&ra);
    for (uint32_t i = 0; i < HNSW_STRIPES; i++)
        pthread_mutex_init(&h->stripes[i], NULL);
    for (uint32_t i = 0; i < HNSW_STRIPES; i++)
        atomic_init(&h->seq[i], 0);
    pthread_mutex_init(&h->top_lock, NULL);
    pthread_mutex_init(&h->pool_lock, NULL);
    pthread_mutex_init(&h->order_lock, NULL);
    atomic_init(&h->entry, HNSW_NO_ENTRY);
    atomic_init(&h->n_nodes, 0);
    atomic_init(&h->n_deleted, 0);
    atomic_init(&h->n_deleted_repaired, 0);
    atomic_init(&h->sweep_deleted, UINT32_MAX);
    atomic_init(&h->upper_words, 0);
    atomic_init(&h->order_bytes, 0);
    atomic_init(&h->near_mean, 0);
    atomic_init(&h->near_seen, 0);
    atomic_init(&h->widened, 0);
    atomic_init(&h->widened_nearer, 0);
    atomic_init(&h->widen_skipped, 0);
    *out = h;
    return CDN_OK;
}

void hnsw_free(hnsw_t *h)
{
    if (!h)
        return;
    for (uint32_t i = 0; i < h->span; i++)
        cdn_free(h->upper[i]);
    cdn_map_free(h->upper, (size_t)h->span * sizeof(*h->upper));
    cdn_map_free(h->l0, (size_t)h->span * (h->m0 + 1) * sizeof(uint32_t));
    cdn_map_free(h->levels, h->span);
    cdn_map_free(h->flags, h->span);
    while (h->pool) {
        hnsw_visited_t *v = h->pool;
        h->pool = v->next;
        cdn_map_free(v->marks, (size_t)v->cap * sizeof(uint16_t));
        cdn_free(v->scratch);
        cdn_free(v);
    }
    for (uint32_t i = 0; i < HNSW_STRIPES; i++)
        pthread_mutex_destroy(&h->stripes[i]);
    pthread_mutex_destroy(&h->top_lock);
    pthread_mutex_destroy(&h->pool_lock);
    pthread_mutex_destroy(&h->order_lock);
    hnsw_order_free(h->order);
    pthread_rwlock_destroy(&h->grow_lock);
    pthread_rwlock_destroy(&h->write_gate);
    cdn_free(h);
}

/* Grows the per-node arrays to `span` nodes; the new tail is zero. Caller holds grow_lock for
 * writing (or owns h alone). On failure the arrays that did grow are shrunk back, so the index
 * stays usable at the old span and hnsw_free releases exactly what it holds. */
static int grow_arrays(hnsw_t *h, uint32_t span)
{
    /* Mappings (base/mem.h): grown in place or moved without copying, the new part zero. */
    void **arr[4] = {(void **)&h->l0, (void **)&h->levels, (void **)&h->flags, (void **)&h->upper};
    size_t per[4] = {((size_t)h->m0 + 1) * sizeof(uint32_t), 1, 1, sizeof(*h->upper)};
    for (int i = 0; i < 4; i++) {
        if (cdn_map_resize(arr[i], h->span * per[i], span * per[i]) == CDN_OK)
            continue;
        while (i-- > 0)
            (void)cdn_map_resize(arr[i], span * per[i], h->span * per[i]);
        return CDN_ERR_NOMEM;
    }
    h->span = span;
    return CDN_OK;
}

int hnsw_reserve(hnsw_t *h, uint32_t id_span)
{
    int rc = CDN_OK;
    pthread_rwlock_wrlock(&h->grow_lock);
    if (id_span > h->span)
        rc = grow_arrays(h, id_span);
    pthread_rwlock_unlock(&h->grow_lock);
    return rc;
}

/* Makes id addressable, doubling so that a stream of growing ids costs O(log n) regrowths. */
static int ensure_span(hnsw_t *h, uint32_t id)
{
    pthread_rwlock_rdlock(&h->grow_lock);
    uint32_t span = h->span;
    pthread_rwlock_unlock(&h->grow_lock);
    if (id < span)
        return CDN_OK;
    if (id == UINT32_MAX)
        return CDN_ERR_LIMIT;
    uint64_t want = (uint64_t)span * 2;
    if (want < (uint64_t)id + 1)
        want = (uint64_t)id + 1;
    if (want < 1024)
        want = 1024;
    if (want > UINT32_MAX)
        want = UINT32_MAX;
    return hnsw_reserve(h, (uint32_t)want);
}

/* ---------- construction helpers ---------- */

/* The level of a node: -ln(U) * mL with U drawn from splitmix64(seed, id), so the graph's
 * shape does not depend on which thread inserted what first. */
static uint32_t level_for(const hnsw_t *h, uint32_t id)
{
    uint64_t z = ((uint64_t)h->p.seed << 32 | id) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    double u = ((double)(z >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double l = floor(-log(u) * h->level_mult);
    return l > HNSW_MAX_LEVEL ? HNSW_MAX_LEVEL : (uint32_t)l;
}

/* ---------- neighbour selection ---------- */

/* Heuristic 4 of the HNSW paper: walk candidates nearest first and keep one only if it is
 * nearer to the base than to every neighbour kept so far, so links spread over directions
 * instead of piling into one cluster. cand is walked in order: nearest first (link_back puts
 * the live members, nearest first, before the deleted ones); keeps up to `max` in place at the
 * front; returns how many. (hnsw_repair.c applies the same rule to fill a list
 * whose live neighbours stay.) */
static uint32_t select_diverse(const hnsw_t *h, const hnsw_scorer_t *s, hnsw_hit_t *cand,
                               uint32_t n, uint32_t max)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n && kept < max; i++) {
        int good = 1;
        for (uint32_t j = 0; j < kept && good; j++)
            if (hnsw_pair_dist(h, s, cand[i].id, cand[j].id) < cand[i].dist)
                good = 0;
        if (good)
            cand[kept++] = cand[i];
    }
    return kept;
}

/* Adds `id` to node s's list at `level`; a full list is re-chosen with the heuristic over its
 * members plus id. Holds s's stripe throughout so concurrent inserts cannot lose a link; the
 * seqlock is odd only while the new list is stored, not while it is chosen. */
static void link_back(hnsw_t *h, const hnsw_scorer_t *src, uint32_t s, uint32_t id, uint32_t level,
                      hnsw_hit_t *scratch)
{
    uint32_t cap = hnsw_list_cap(h, level), ids[2 * HNSW_M_MAX + 1];
    pthread_mutex_t *mu = hnsw_stripe(h, s);
    pthread_mutex_lock(mu);
    const uint32_t *l = hnsw_list_at(h, s, level);
    uint32_t n = l[0];
    for (uint32_t i = 0; i < n; i++)
        if (l[1 + i] == id)
            goto out;
    memcpy(ids, l + 1, n * sizeof(uint32_t));
    ids[n] = id;
    if (n < cap) {
        hnsw_list_store(h, s, level, ids, n + 1);
        goto out;
    }
    float d[2 * HNSW_M_MAX + 1];
    hnsw_scorer_t ss = hnsw_scorer_for(src, s);
    hnsw_score_src(h, &ss, ids, n + 1, d);
    /* Live members first, deleted ones after (each part nearest first): a deleted member only
     * keeps its place while the live ones leave room. Chosen together, a deleted node near the
     * newcomer pushed it out, and the repair that later drops the deleted node fills the place
     * from that node's own list: at 1M x 128 with 30% replaced, recall@10 fell to 0.987. */
    uint32_t nl = 0, nd = 0;
    uint8_t dead[2 * HNSW_M_MAX + 1]; /* read once: a delete may land meanwhile */
    for (uint32_t i = 0; i <= n; i++) {
        dead[i] = (hnsw_flags(h, ids[i]) & HNSW_F_DELETED) != 0;
        nl += !dead[i];
    }
    for (uint32_t i = 0; i <= n; i++)
        scratch[dead[i] ? nl + nd++ : i - nd] = (hnsw_hit_t){ids[i], d[i]};
    hnsw_sort_hits(scratch, nl);
    hnsw_sort_hits(scratch + nl, nd);
    uint32_t kept = select_diverse(h, src, scratch, n + 1, cap);
    for (uint32_t i = 0; i < kept; i++)
        ids[i] = scratch[i].id;
    hnsw_list_store(h, s, level, ids, kept);
out:
    pthread_mutex_unlock(mu);
}

/* ---------- insert ---------- */

typedef struct insert_ctx {
    hnsw_heap_t found;
    hnsw_heap_t wide;    /* widen's search, HNSW_WIDEN x ef_construction; allocated on first use */
    hnsw_hit_t *eps;     /* entry points for the next level down (and for widen) */
    hnsw_hit_t *scratch; /* link_back workspace: m0 + 1 hits */
} insert_ctx_t;

/* Sorts a finished construction search's list nearest first and keeps, in place, the nodes that
 * may take a link from id (not id itself, not deleted); returns how many. */
static uint32_t live_others(const hnsw_t *h, hnsw_heap_t *found, uint32_t id)
{
    hnsw_heap_sort_heap(found);
    uint32_t w = 0;
    for (uint32_t i = 0; i < found->n; i++)
        if (found->a[i].id != id && !(hnsw_flags(h, found->a[i].id) & HNSW_F_DELETED))
            found->a[w++] = found->a[i];
    return w;
}

/* Adds d to h's running mean of construction searches' nearest distances (weight 1/64: it
 * follows a collection whose rows drift) and returns the mean before d; *seen receives how many
 * had added to it before. Concurrent inserts may lose one another's updates, which a mean over
 * thousands does not notice. */
static float near_mean_add(hnsw_t *h, float d, uint32_t *seen_out)
{
    uint32_t seen = atomic_fetch_add_explicit(&h->near_seen, 1, memory_order_relaxed);
    *seen_out = seen;
    uint32_t bits = atomic_load_explicit(&h->near_mean, memory_order_relaxed);
    float mean;
    memcpy(&mean, &bits, sizeof(mean));
    float next = seen == 0 ? d : mean + (d - mean) / 64.0f;
    memcpy(&bits, &next, sizeof(bits));
    atomic_store_explicit(&h->near_mean, bits, memory_order_relaxed);
    return seen == 0 ? d : mean;
}

/* A level-0 construction search may stall. On 1M x 384 topics some rows lie far from most
 * others (their nearest rows about 0.45 away where most rows are 0.8); the descent to such a
 * row ends among rows that are all about 0.8 away with nothing nearer in reach, and the
 * heuristic keeps few of them because from so far they all lie in one direction. Its true
 * neighbours never hear of it and later rows rarely link to it, so a query next to it cannot
 * find it: such rows were most of what a 1M graph missed at ef 256 and beyond
 * (docs/internals/hnsw.md, "Stalled construction searches"). Searching again from the whole
 * list with HNSW_WIDEN times the breadth reaches its own neighbourhood.
 *
 * A stall shows as few links (fewer than m / 2) whose nearest, d0, lies far: more than
 * HNSW_WIDEN_FAR times the running mean of d0 (cosine and L2, whose distances are squares of a
 * length; not dot, whose distances have no scale). Neither sign is sure: on Fashion-MNIST half
 * of all rows keep fewer than m / 2 links, a quarter of those have d0 over 1.5 times the mean,
 * and a wider search finds nothing nearer for them. So the index counts how often a
 * wider search found a row nearer than 0.9 d0: where fewer than one in HNSW_WIDEN_PAYS did, it
 * widens only every HNSW_WIDEN_PROBE-th search that shows the signs, which keeps the count
 * current. On 1M topics 99.5% of widened searches found a nearer row, on Fashion-MNIST and
 * SciFact under 0.2%.
 *
 * The links are chosen from the wider search instead (c->found.a[0..*kept)) when it found a
 * node that may take one. n_eps entry points in c->eps. */
#define HNSW_WIDEN 4u
#define HNSW_WIDEN_FAR 1.5f
#define HNSW_WIDEN_WARM 1024u /* inserts seen before the mean is trusted */
#define HNSW_WIDEN_PAYS 8u
#define HNSW_WIDEN_PROBE 16u
#define HNSW_WIDEN_LEARN 32u /* widened searches before the count is trusted */
static int widen(hnsw_t *h, const hnsw_scorer_t *src, const hnsw_scorer_t *sq, uint32_t id,
                 insert_ctx_t *c, uint32_t n_eps, float d0, uint32_t *kept)
{
    if (h->metric == VEC_METRIC_DOT || *kept == 0)
        return CDN_OK;
    uint32_t seen;
    float mean = near_mean_add(h, d0, &seen);
    if (*kept >= h->p.m / 2 || !(d0 > HNSW_WIDEN_FAR * mean) || seen < HNSW_WIDEN_WARM)
        return CDN_OK;
    uint32_t tried = atomic_load_explicit(&h->widened, memory_order_relaxed);
    uint32_t nearer = atomic_load_explicit(&h->widened_nearer, memory_order_relaxed);
    if (tried >= HNSW_WIDEN_LEARN && (uint64_t)nearer * HNSW_WIDEN_PAYS < tried &&
        atomic_fetch_add_explicit(&h->widen_skipped, 1, memory_order_relaxed) % HNSW_WIDEN_PROBE !=
            0)
        return CDN_OK;
    uint32_t ef = h->p.ef_construction * HNSW_WIDEN;
    if (!c->wide.a && hnsw_heap_init(&c->wide, ef + 1))
        return CDN_ERR_NOMEM;
    int rc = hnsw_search_layer_build(h, sq, 0, c->eps, n_eps, ef, &c->wide);
    if (rc)
        return rc;
    uint32_t w = live_others(h, &c->wide, id);
    atomic_fetch_add_explicit(&h->widened, 1, memory_order_relaxed);
    if (w && c->wide.a[0].dist < 0.9f * d0)
        atomic_fetch_add_explicit(&h->widened_nearer, 1, memory_order_relaxed);
    if (w == 0)
        return CDN_OK;
    *kept = select_diverse(h, src, c->wide.a, w, h->p.m);
    memcpy(c->found.a, c->wide.a, *kept * sizeof(hnsw_hit_t));
    return CDN_OK;
}

/* Links id into levels min(level, top) .. 0 starting from entry point ep. */
static int insert_levels(hnsw_t *h, const hnsw_scorer_t *src, uint32_t id, uint32_t level,
                         uint32_t top, uint32_t ep, insert_ctx_t *c)
{
    hnsw_scorer_t sq = hnsw_scorer_for(src, id);
    float ep_dist = hnsw_pair_dist(h, src, id, ep);
    uint64_t nd = 0;
    if (top > level)
        hnsw_descend_src(h, &sq, top, level, &ep, &ep_dist, &nd);
    c->eps[0] = (hnsw_hit_t){ep, ep_dist};
    uint32_t n_eps = 1;
    for (int32_t lc = (int32_t)(level < top ? level : top); lc >= 0; lc--) {
        int rc = hnsw_search_layer_build(h, &sq, (uint32_t)lc, c->eps, n_eps, h->p.ef_construction,
                                         &c->found);
        if (rc)
            return rc;
        hnsw_heap_sort_heap(&c->found);
        n_eps = c->found.n;
        memcpy(c->eps, c->found.a, n_eps * sizeof(hnsw_hit_t));
        /* The node itself may already be linked from a concurrent insert's back-link. Deleted
         * nodes routed the search but are not linked to (hnsw_repair unlinks them; a new link
         * would bring one back), unless nothing else was found. */
        uint32_t w = 0, live = 0;
        for (uint32_t i = 0; i < c->found.n; i++)
            live += c->found.a[i].id != id && !(hnsw_flags(h, c->found.a[i].id) & HNSW_F_DELETED);
        for (uint32_t i = 0; i < c->found.n; i++)
            if (c->found.a[i].id != id &&
                (!live || !(hnsw_flags(h, c->found.a[i].id) & HNSW_F_DELETED)))
                c->found.a[w++] = c->found.a[i];
        float d0 = w ? c->found.a[0].dist : 0.0f;
        uint32_t kept = select_diverse(h, src, c->found.a, w, h->p.m), ids[HNSW_M_MAX];
        if (lc == 0 && (rc = widen(h, src, &sq, id, c, n_eps, d0, &kept)) != CDN_OK)
            return rc;
        for (uint32_t i = 0; i < kept; i++)
            ids[i] = c->found.a[i].id;
        pthread_mutex_t *mu = hnsw_stripe(h, id);
        pthread_mutex_lock(mu);
        hnsw_list_store(h, id, (uint32_t)lc, ids, kept);
        pthread_mutex_unlock(mu);
        for (uint32_t i = 0; i < kept; i++)
            link_back(h, src, c->found.a[i].id, id, (uint32_t)lc, c->scratch);
    }
    return CDN_OK;
}

static int insert_ctx_init(hnsw_t *h, insert_ctx_t *c)
{
    memset(c, 0, sizeof(*c));
    if (hnsw_heap_init(&c->found, h->p.ef_construction + 1))
        return CDN_ERR_NOMEM;
    c->eps = cdn_malloc(sizeof(hnsw_hit_t) * (h->p.ef_construction + 1));
    c->scratch = cdn_malloc(sizeof(hnsw_hit_t) * (h->m0 + 1));
    return c->eps && c->scratch ? CDN_OK : CDN_ERR_NOMEM;
}

static void insert_ctx_free(insert_ctx_t *c)
{
    hnsw_heap_free(&c->found);
    hnsw_heap_free(&c->wide);
    cdn_free(c->eps);
    cdn_free(c->scratch);
}

/* hnsw_link_in_locked for one node, with the workspace c. */
static int link_in_one(hnsw_t *h, const hnsw_scorer_t *src, uint32_t id, insert_ctx_t *c)
{
    uint64_t e = atomic_load(&h->entry);
    if (e == HNSW_NO_ENTRY || (uint32_t)e == id)
        return CDN_OK;
    hnsw_scorer_t sq = hnsw_scorer_for(src, id);
    uint32_t ep = (uint32_t)e, top = (uint32_t)(e >> 32);
    float ep_dist = hnsw_pair_dist(h, src, id, ep);
    uint64_t nd = 0;
    if (top > 0)
        hnsw_descend_src(h, &sq, top, 0, &ep, &ep_dist, &nd);
    c->eps[0] = (hnsw_hit_t){ep, ep_dist};
    int rc = hnsw_search_layer_build(h, &sq, 0, c->eps, 1, h->p.ef_construction, &c->found);
    if (rc)
        return rc;
    uint32_t n_eps = c->found.n; /* widen's entry points: any order */
    memcpy(c->eps, c->found.a, n_eps * sizeof(hnsw_hit_t));
    uint32_t w = live_others(h, &c->found, id);
    float d0 = w ? c->found.a[0].dist : 0.0f;
    uint32_t kept = select_diverse(h, src, c->found.a, w, h->p.m);
    if ((rc = widen(h, src, &sq, id, c, n_eps, d0, &kept)) != CDN_OK)
        return rc;
    for (uint32_t i = 0; i < kept; i++)
        link_back(h, src, c->found.a[i].id, id, 0, c->scratch);
    return CDN_OK;
}

int hnsw_link_in_locked(hnsw_t *h, const vec_view_t *view, const uint32_t *ids, uint32_t n,
                        _Atomic uint32_t *next)
{
    hnsw_scorer_t src = {.view = view};
    insert_ctx_t c;
    int rc = insert_ctx_init(h, &c);
    for (uint32_t i; rc == CDN_OK && (i = atomic_fetch_add(next, 1)) < n;)
        rc = link_in_one(h, &src, ids[i], &c);
    if (rc)
        atomic_store(next, n); /* the other threads stop too */
    insert_ctx_free(&c);
    return rc;
}

/* Claims id, sets its level and upper lists, then links it. grow_lock held for reading. */
static int insert_locked(hnsw_t *h, const hnsw_scorer_t *src, uint32_t id)
{
    uint8_t old = __atomic_fetch_or(&h->flags[id], (uint8_t)HNSW_F_CLAIMED, __ATOMIC_ACQ_REL);
    if (old & HNSW_F_CLAIMED)
        return CDN_ERR_EXISTS;
    uint32_t level = level_for(h, id);
    pthread_mutex_t *mu = hnsw_stripe(h, id);
    pthread_mutex_lock(mu);
    h->levels[id] = (uint8_t)level;
    if (level > 0 && !h->upper[id]) {
        h->upper[id] = cdn_calloc((size_t)level * (h->p.m + 1), sizeof(uint32_t));
        if (h->upper[id])
            atomic_fetch_add(&h->upper_words, (uint64_t)level * (h->p.m + 1));
    }
    int nomem = level > 0 && !h->upper[id];
    pthread_mutex_unlock(mu);
    if (nomem) {
        h->levels[id] = 0;
        __atomic_fetch_and(&h->flags[id], (uint8_t)~HNSW_F_CLAIMED, __ATOMIC_ACQ_REL);
        return CDN_ERR_NOMEM;
    }
    insert_ctx_t c;
    int rc = insert_ctx_init(h, &c);
    uint64_t e = atomic_load(&h->entry);
    int top_held = 0;
    if (!rc && (e == HNSW_NO_ENTRY || level > (uint32_t)(e >> 32))) {
        /* This node may become the entry point: serialise with other such inserts. */
        pthread_mutex_lock(&h->top_lock);
        top_held = 1;
        e = atomic_load(&h->entry);
        if (e != HNSW_NO_ENTRY && level <= (uint32_t)(e >> 32)) {
            pthread_mutex_unlock(&h->top_lock);
            top_held = 0;
        }
    }
    if (!rc && e != HNSW_NO_ENTRY)
        rc = insert_levels(h, src, id, level, (uint32_t)(e >> 32), (uint32_t)e, &c);
    insert_ctx_free(&c);
    if (!rc) {
        __atomic_fetch_or(&h->flags[id], (uint8_t)HNSW_F_PRESENT, __ATOMIC_RELEASE);
        atomic_fetch_add(&h->n_nodes, 1);
    }
    if (top_held) {
        if (!rc)
            atomic_store(&h->entry, (uint64_t)level << 32 | id);
        pthread_mutex_unlock(&h->top_lock);
    }
    /* A failed insert stays claimed (it may be partly linked, which only adds routes). */
    return rc;
}

/* hnsw_insert with the construction distances taken from src (float rows or a copy). */
static int insert_from(hnsw_t *h, const hnsw_scorer_t *src, uint32_t id)
{
    const vec_view_t *view = src->view;
    if (!h || !view || view->dim != h->dim || id >= view->count)
        return CDN_ERR_INVALID;
    pthread_rwlock_rdlock(&h->write_gate);
    int rc = ensure_span(h, id);
    if (!rc) {
        pthread_rwlock_rdlock(&h->grow_lock);
        rc = insert_locked(h, src, id);
        pthread_rwlock_unlock(&h->grow_lock);
    }
    pthread_rwlock_unlock(&h->write_gate);
    return rc;
}

int hnsw_insert(hnsw_t *h, const vec_view_t *view, uint32_t id)
{
    hnsw_scorer_t src = {.view = view};
    return insert_from(h, &src, id);
}

/* ---------- parallel build ---------- */

/* AUTO builds on an 8-bit copy from this many inserts on, when they are at least a quarter of
 * the view's rows (the copy covers every row, since the search reaches nodes inserted earlier). */
#define HNSW_COPY_MIN_BATCH 4096u

typedef struct build_job {
    hnsw_t *h;
    hnsw_scorer_t src;
    const uint32_t *ids;
    size_t n;
    _Atomic size_t next;
    _Atomic int first_err;
} build_job_t;

static void *build_worker(void *arg)
{
    build_job_t *j = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n)
            break;
        int rc = insert_from(j->h, &j->src, j->ids[i]);
        int zero = 0;
        if (rc)
            atomic_compare_exchange_strong(&j->first_err, &zero, rc);
    }
    return NULL;
}

/* The scorer's 8-bit source: rows under map, `stride` codes apart. */
static void use_i8(hnsw_scorer_t *src, vec_metric_t m, const int8_t *rows, size_t stride,
                   vec_i8_map_t map)
{
    vec_i8_isa_t isa = vec_i8_isa_best();
    src->i8 = rows;
    src->i8_stride = stride;
    src->i8_unit = map.unit;
    src->idist = vec_i8_dist_for_isa(m, isa);
    src->idist4 = vec_i8_dist4_for_isa(m, isa);
}

/* Fills j->src with a copy of every row of the view (8-bit or bf16) when prec asks for one
 * (AUTO: a large batch on a CPU with AVX2 or AVX-512). Returns 0 or CDN_ERR_NOMEM; the caller frees
 * the copy (j->src.i8 or j->src.bf). */
static int make_copy(build_job_t *j, hnsw_build_precision_t prec)
{
    const vec_view_t *v = j->src.view;
    if (prec == HNSW_BUILD_AUTO)
        prec = vec_i8_isa_best() != VEC_I8_SCALAR && j->n >= HNSW_COPY_MIN_BATCH &&
                       4 * j->n >= v->count
                   ? HNSW_BUILD_I8
                   : HNSW_BUILD_FLOAT;
    if (prec == HNSW_BUILD_FLOAT || v->count == 0)
        return CDN_OK;
    vec_i8_map_t map = vec_i8_map_of(v, j->h->metric, 1.0f);
    if (prec == HNSW_BUILD_I8 && !vec_i8_map_fits(v, map)) /* a few rows far out: no scale fits */
        prec = vec_bf16_isa_best() != VEC_BF16_SCALAR ? HNSW_BUILD_BF16 : HNSW_BUILD_FLOAT;
    if (prec == HNSW_BUILD_FLOAT)
        return CDN_OK;
    size_t stride = prec == HNSW_BUILD_I8 ? vec_i8_padded(v->dim) : vec_bf16_padded(v->dim);
    size_t bytes = (size_t)v->count * stride * (prec == HNSW_BUILD_I8 ? 1 : sizeof(uint16_t));
    void *rows = cdn_aligned_alloc(CDN_HUGE_PAGE, bytes);
    if (!rows)
        return CDN_ERR_NOMEM;
    cdn_advise_huge(rows, bytes); /* read at random by every insert */
    if (prec == HNSW_BUILD_I8) {
        for (uint32_t r = 0; r < v->count; r++)
            vec_i8_from_f32(vec_row(v, r), v->dim, map, (int8_t *)rows + (size_t)r * stride,
                            stride);
        use_i8(&j->src, j->h->metric, rows, stride, map);
        return CDN_OK;
    }
    vec_bf16_isa_t isa = vec_bf16_isa_best();
    for (uint32_t r = 0; r < v->count; r++)
        vec_bf16_from_f32(vec_row(v, r), v->dim, (uint16_t *)rows + (size_t)r * stride, stride);
    j->src.bf = rows;
    j->src.bf_stride = stride;
    j->src.bdist = vec_bf16_dist_for_isa(j->h->metric, isa);
    j->src.bdist4 = vec_bf16_dist4_for_isa(j->h->metric, isa);
    return CDN_OK;
}

/* The build of hnsw_build_ex and hnsw_build_i8: construction distances on the caller's 8-bit
 * rows when `kept` is given, else as prec says. */
static int build_run(hnsw_t *h, const vec_view_t *view, const uint32_t *ids, size_t n,
                     unsigned threads, hnsw_build_precision_t prec, const hnsw_i8_rows_t *kept)
{
    if (!h || !view || (n && !ids) || view->dim != h->dim || (unsigned)prec > HNSW_BUILD_I8)
        return CDN_ERR_INVALID;
    if (kept && (!kept->rows || kept->count < view->count ||
                 kept->stride != vec_i8_padded(view->dim) || !(kept->map.unit > 0.0f)))
        return CDN_ERR_INVALID;
    uint32_t max_id = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] > max_id)
            max_id = ids[i];
    if (n && max_id >= view->count)
        return CDN_ERR_INVALID;
    if (n && max_id >= h->span) {
        int rc = hnsw_reserve(h, max_id + 1);
        if (rc)
            return rc;
    }
    build_job_t j = {.h = h, .src = {.view = view}, .ids = ids, .n = n};
    atomic_init(&j.next, 0);
    atomic_init(&j.first_err, 0);
    if (kept)
        use_i8(&j.src, h->metric, kept->rows, kept->stride, kept->map);
    else if (make_copy(&j, prec))
        return CDN_ERR_NOMEM;
    /* A large batch goes in chunk by chunk, each grouped by region (hnsw_order.c); without
     * memory for that it goes in as given. */
    uint32_t *order = n >= HNSW_ORDER_MIN_BATCH ? cdn_malloc(n * sizeof(uint32_t)) : NULL;
    hnsw_order_t *centres = NULL;
    if (order) {
        memcpy(order, ids, n * sizeof(uint32_t));
        (void)hnsw_order_for_batch(h, view, ids, n, threads, &centres);
    }
    size_t chunk = order ? HNSW_ORDER_CHUNK : n;
    /* A failed insert stops no other: the later chunks go in too, as the rest of one do. */
    for (size_t at = 0; at < n; at += chunk) {
        size_t len = n - at < chunk ? n - at : chunk;
        j.ids = order ? order + at : ids + at;
        j.n = len;
        atomic_store(&j.next, 0);
        if (centres && atomic_load(&h->n_nodes) >= len)
            (void)hnsw_order_chunk(centres, view, order + at, len, threads);
        hnsw_run_threads(threads, build_worker, &j);
    }
    hnsw_order_free(centres);
    cdn_free(order);
    if (!kept) {
        cdn_free((void *)j.src.i8);
        cdn_free((void *)j.src.bf);
    }
    return atomic_load(&j.first_err);
}

int hnsw_build_ex(hnsw_t *h, const vec_view_t *view, const uint32_t *ids, size_t n,
                  unsigned threads, hnsw_build_precision_t prec)
{
    return build_run(h, view, ids, n, threads, prec, NULL);
}

int hnsw_build(hnsw_t *h, const vec_view_t *view, const uint32_t *ids, size_t n, unsigned threads)
{
    return hnsw_build_ex(h, view, ids, n, threads, HNSW_BUILD_AUTO);
}

int hnsw_build_i8(hnsw_t *h, const vec_view_t *view, const hnsw_i8_rows_t *rows,
                  const uint32_t *ids, size_t n, unsigned threads)
{
    if (!rows)
        return CDN_ERR_INVALID;
    return build_run(h, view, ids, n, threads, HNSW_BUILD_I8, rows);
}

/* ---------- delete and info ---------- */

int hnsw_delete(hnsw_t *h, uint32_t id)
{
    int rc = CDN_ERR_NOT_FOUND;
    pthread_rwlock_rdlock(&h->write_gate);
    pthread_rwlock_rdlock(&h->grow_lock);
    if (id < h->span && (hnsw_flags(h, id) & HNSW_F_PRESENT)) {
        uint8_t old = __atomic_fetch_or(&h->flags[id], (uint8_t)HNSW_F_DELETED, __ATOMIC_ACQ_REL);
        if (!(old & HNSW_F_DELETED))
            atomic_fetch_add(&h->n_deleted, 1);
        rc = CDN_OK;
    }
    pthread_rwlock_unlock(&h->grow_lock);
    pthread_rwlock_unlock(&h->write_gate);
    return rc;
}

void hnsw_get_info(hnsw_t *h, hnsw_info_t *out)
{
    memset(out, 0, sizeof(*out));
    pthread_rwlock_rdlock(&h->grow_lock);
    uint64_t e = atomic_load(&h->entry);
    out->nodes = atomic_load(&h->n_nodes);
    out->deleted = atomic_load(&h->n_deleted);
    uint32_t repaired = atomic_load(&h->n_deleted_repaired);
    out->deleted_linked = out->deleted > repaired ? out->deleted - repaired : 0;
    out->widened = atomic_load(&h->widened);
    out->widened_nearer = atomic_load(&h->widened_nearer);
    out->id_span = h->span;
    out->max_level = e == HNSW_NO_ENTRY ? 0 : (uint32_t)(e >> 32);
    out->dim = h->dim;
    out->metric = h->metric;
    out->params = h->p;
    out->memory_bytes =
        sizeof(*h) + (size_t)h->span * ((h->m0 + 1) * sizeof(uint32_t) + 2 + sizeof(void *)) +
        (size_t)atomic_load(&h->upper_words) * sizeof(uint32_t) + atomic_load(&h->order_bytes);
    pthread_rwlock_unlock(&h->grow_lock);
}
