/* hnsw_repair.c: re-links the live nodes whose neighbour lists name deleted nodes, so that
 * searches stop walking through tombstones. Relies on hnsw_int.h.
 *
 * A delete only marks its node (hnsw_delete): the node keeps routing, and a graph where a third
 * of the nodes were replaced spends a third of every search's visits on rows it cannot return
 * (`cordon bench churn`: p50 1.3-1.6x a fresh build's at 30% replaced, 3.1x at 100%). The
 * repair is a cheaper form of FreshDiskANN's consolidation (Singh et al., 2021): a live node p
 * whose list at some level names deleted nodes takes as candidates the live neighbours of each
 * deleted one (through chains of deleted nodes, up to REPAIR_HOPS deep while too few are found),
 * scores them in float against p, and fills the deleted ones' places with the nearest candidates
 * the insert heuristic admits beside the live neighbours p keeps. (Re-choosing the whole list from
 * every candidate, as FreshDiskANN does, cost ~13 s at 100,000 x 128 with an eighth deleted; this
 * costs a fraction and measured at least as good a recall.) After it no live node links to a
 * deleted one; deleted nodes keep their own lists, so a
 * search that was already on one (or starts at a deleted entry point) still finds its way. */
#include "vector/hnsw_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/mem.h"

/* How deep a chain of deleted nodes the candidates are gathered through: with a share d of the
 * nodes deleted, a list of c links has c d^k deleted nodes k hops out, so 3 hops lose a live
 * node's whole neighbourhood only when nearly everything around it is gone. */
#define REPAIR_HOPS 3u

typedef struct repair_job {
    hnsw_t *h;
    const vec_view_t *view;
    uint32_t span;         /* ids below it have rows in the view */
    uint32_t end;          /* the range's end: nodes [first, end) are repaired */
    _Atomic uint32_t next; /* the next block of node ids to take */
    _Atomic uint64_t relinked, emptied;
    _Atomic int first_err;
} repair_job_t;

typedef struct repair_ws {
    hnsw_visited_t *vis;
    uint32_t *ids;     /* gathered candidates */
    uint32_t *deleted; /* the deleted nodes to expand, this hop and the next */
    hnsw_hit_t *hits;
    float *d;
    uint32_t cap_ids, cap_deleted;
    uint32_t buf[2 * HNSW_M_MAX + 1];
} repair_ws_t;

/* Marks u for this node's gathering; 0 when it was marked already. */
static int first_sight(repair_ws_t *w, uint32_t u)
{
    if (w->vis->marks[u] == w->vis->tag)
        return 0;
    w->vis->marks[u] = w->vis->tag;
    return 1;
}

static void next_tag(repair_ws_t *w)
{
    if (++w->vis->tag == 0) {
        memset(w->vis->marks, 0, (size_t)w->vis->cap * sizeof(uint16_t));
        w->vis->tag = 1;
    }
}

/* Adds u as a candidate (live) or to the next hop's frontier (deleted). own: u is on p's own
 * list, where a node still being inserted (claimed, not yet present: its insert linked it back
 * to p) stays; elsewhere such a node is no candidate, since its row may not be scored yet. */
static int take(const repair_job_t *j, repair_ws_t *w, uint32_t p, uint32_t u, int own,
                uint32_t *n_ids, uint32_t *n_del)
{
    hnsw_t *h = j->h;
    if (u == p || u >= j->span || !first_sight(w, u))
        return CDN_OK;
    uint8_t f = hnsw_flags(h, u);
    if (!(f & HNSW_F_PRESENT) && !own)
        return CDN_OK;
    if (f & HNSW_F_DELETED) {
        if (*n_del == w->cap_deleted) {
            size_t cap = w->cap_deleted;
            void *a = w->deleted;
            if (cdn_grow(&a, &cap, (size_t)*n_del + 1, sizeof(uint32_t)))
                return CDN_ERR_NOMEM;
            w->deleted = a;
            w->cap_deleted = (uint32_t)cap;
        }
        w->deleted[(*n_del)++] = u;
        return CDN_OK;
    }
    if (*n_ids == w->cap_ids) {
        size_t cap = w->cap_ids;
        void *a = w->ids, *b = NULL, *c = NULL;
        if (cdn_grow(&a, &cap, (size_t)*n_ids + 1, sizeof(uint32_t)))
            return CDN_ERR_NOMEM;
        w->ids = a;
        b = cdn_realloc(w->hits, cap * sizeof(hnsw_hit_t));
        if (b)
            w->hits = b;
        c = cdn_realloc(w->d, cap * sizeof(float));
        if (c)
            w->d = c;
        if (!b || !c)
            return CDN_ERR_NOMEM;
        w->cap_ids = (uint32_t)cap;
    }
    w->ids[(*n_ids)++] = u;
    return CDN_OK;
}

/* Re-chooses p's list at level l if it names a deleted node. Holds p's stripe throughout, as
 * link_back does, so an insert linking to p meanwhile is not lost. */
static int repair_list(repair_job_t *j, repair_ws_t *w, uint32_t p, uint32_t l)
{
    hnsw_t *h = j->h;
    uint32_t n_ids = 0, n_del = 0, done = 0;
    int rc = CDN_OK;
    pthread_mutex_t *mu = hnsw_stripe(h, p);
    pthread_mutex_lock(mu);
    const uint32_t *l0 = hnsw_list_at(h, p, l);
    uint32_t n = l0[0];
    int any = 0;
    for (uint32_t i = 0; i < n && !any; i++)
        any = (hnsw_flags(h, l0[1 + i]) & HNSW_F_DELETED) != 0;
    if (!any)
        goto out;
    next_tag(w);
    first_sight(w, p);
    memcpy(w->buf, l0 + 1, n * sizeof(uint32_t));
    for (uint32_t i = 0; i < n && !rc; i++)
        rc = take(j, w, p, w->buf[i], 1, &n_ids, &n_del);
    uint32_t n_live = n_ids; /* ids[0, n_live): p's live neighbours, kept as they are */
    /* Further hops only while the candidates are too few for the places to fill: each hop
     * multiplies them by the list length. */
    uint32_t want = 2 * (n - n_live) > 8 ? 2 * (n - n_live) : 8;
    for (uint32_t hop = 0;
         hop < REPAIR_HOPS && done < n_del && !rc && (hop == 0 || n_ids - n_live < want); hop++) {
        uint32_t end = n_del;
        for (; done < end && !rc; done++) {
            uint32_t m = hnsw_read_list(h, w->deleted[done], l, w->buf);
            for (uint32_t i = 0; i < m && !rc; i++)
                rc = take(j, w, p, w->buf[i], 0, &n_ids, &n_del);
        }
    }
    if (rc)
        goto out;
    /* The deleted neighbours' places go to the nearest of the new candidates that the insert
     * heuristic admits beside the neighbours p keeps (which it admitted when they were linked):
     * re-choosing the whole list from every candidate costs a pass of the heuristic over a
     * hundred or more rows per list, for links that were fine. */
    uint32_t n_new = n_ids - n_live, kept = n_live;
    const float *row = vec_row(j->view, p);
    hnsw_score(h, j->view, row, w->ids + n_live, n_new, w->d);
    for (uint32_t i = 0; i < n_new; i++)
        w->hits[i] = (hnsw_hit_t){w->ids[n_live + i], w->d[i]};
    qsort(w->hits, n_new, sizeof(hnsw_hit_t), hnsw_hit_cmp);
    memcpy(w->buf, w->ids, n_live * sizeof(uint32_t));
    for (uint32_t i = 0; i < n_new && kept < n; i++) {
        const float *x = vec_row(j->view, w->hits[i].id);
        int good = 1;
        for (uint32_t k = 0; k < kept && good; k++)
            if (h->dist(x, vec_row(j->view, w->buf[k]), h->dim) < w->hits[i].dist)
                good = 0;
        if (good)
            w->buf[kept++] = w->hits[i].id;
    }
    hnsw_list_store(h, p, l, w->buf, kept);
    atomic_fetch_add(&j->relinked, 1);
    if (kept == 0)
        atomic_fetch_add(&j->emptied, 1);
out:
    pthread_mutex_unlock(mu);
    return rc;
}

#define REPAIR_BLOCK 256u

static void *repair_worker(void *arg)
{
    repair_job_t *j = arg;
    hnsw_t *h = j->h;
    repair_ws_t w;
    memset(&w, 0, sizeof w);
    int rc = hnsw_visited_get(h, &w.vis);
    for (;;) {
        uint32_t first = atomic_fetch_add(&j->next, REPAIR_BLOCK);
        if (rc || first >= j->end || atomic_load(&j->first_err))
            break;
        uint32_t last = first + REPAIR_BLOCK < j->end ? first + REPAIR_BLOCK : j->end;
        for (uint32_t p = first; p < last && !rc; p++) {
            uint8_t f = hnsw_flags(h, p);
            if (!(f & HNSW_F_PRESENT) || (f & HNSW_F_DELETED))
                continue;
            for (uint32_t l = 0; l <= h->levels[p] && !rc; l++)
                rc = repair_list(j, &w, p, l);
        }
    }
    int zero = 0;
    if (rc)
        atomic_compare_exchange_strong(&j->first_err, &zero, rc);
    if (w.vis)
        hnsw_visited_put(h, w.vis);
    cdn_free(w.ids);
    cdn_free(w.deleted);
    cdn_free(w.hits);
    cdn_free(w.d);
    return NULL;
}

/* A deleted entry point is replaced by a live node of the highest level, so that descents start
 * on the repaired part of the graph. */
static void live_entry(hnsw_t *h)
{
    pthread_mutex_lock(&h->top_lock);
    uint64_t e = atomic_load(&h->entry);
    if (e != HNSW_NO_ENTRY && (hnsw_flags(h, (uint32_t)e) & HNSW_F_DELETED)) {
        uint32_t best = UINT32_MAX, level = 0;
        for (uint32_t id = 0; id < h->span; id++) {
            uint8_t f = hnsw_flags(h, id);
            if ((f & HNSW_F_PRESENT) && !(f & HNSW_F_DELETED) &&
                (best == UINT32_MAX || h->levels[id] > level)) {
                best = id;
                level = h->levels[id];
            }
        }
        if (best != UINT32_MAX)
            atomic_store(&h->entry, (uint64_t)level << 32 | best);
    }
    pthread_mutex_unlock(&h->top_lock);
}

int hnsw_repair_range(hnsw_t *h, const vec_view_t *view, uint32_t first, uint32_t count,
                      unsigned threads, hnsw_repair_stats_t *stats)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!h || !view || view->dim != h->dim)
        return CDN_ERR_INVALID;
    pthread_rwlock_rdlock(&h->write_gate);
    pthread_rwlock_rdlock(&h->grow_lock);
    repair_job_t j = {.h = h, .view = view, .span = h->span};
    if (view->count < j.span)
        j.span = view->count; /* nodes past the view have no rows to score */
    j.end = count < j.span - (first < j.span ? first : j.span) ? first + count : j.span;
    if (first == 0) /* a sweep begins: every node deleted by now is unlinked when it ends */
        atomic_store(&h->sweep_deleted, atomic_load(&h->n_deleted));
    atomic_init(&j.next, first);
    atomic_init(&j.relinked, 0);
    atomic_init(&j.emptied, 0);
    atomic_init(&j.first_err, 0);
    if (first < j.end)
        hnsw_run_threads(threads, repair_worker, &j);
    int rc = atomic_load(&j.first_err);
    if (rc)
        atomic_store(&h->sweep_deleted, UINT32_MAX); /* this sweep proves nothing */
    if (!rc && j.end >= j.span) {
        live_entry(h);
        uint32_t swept = atomic_load(&h->sweep_deleted);
        if (swept != UINT32_MAX)
            atomic_store(&h->n_deleted_repaired, swept);
        atomic_store(&h->sweep_deleted, UINT32_MAX);
    }
    pthread_rwlock_unlock(&h->grow_lock);
    pthread_rwlock_unlock(&h->write_gate);
    if (stats) {
        stats->lists_relinked = atomic_load(&j.relinked);
        stats->lists_emptied = atomic_load(&j.emptied);
        stats->next = rc ? first : (j.end >= j.span ? 0 : j.end);
    }
    return rc;
}

/* ---------- linking in the nodes the deletes left with few in-links ---------- */

/* A live node with fewer in-links than this at level 0 (from live nodes) is linked in again
 * after a whole-graph repair. The repair re-chooses the lists that named deleted nodes, but a
 * node whose in-links came from deleted nodes only gets new ones where a repaired list admits
 * it: at 1M x 128 with 30% replaced and compacted, 1,182 nodes had at most 4 in-links (371 in a
 * fresh build of the same rows), 8 none, and searches missed every true answer among them at
 * any breadth (recall@10 0.9938 against 0.9986 at ef 192). */
#define LINK_IN_MIN(h) ((h)->p.m / 2)

typedef struct link_in_job {
    hnsw_t *h;
    const vec_view_t *view;
    const uint32_t *ids;
    uint32_t n;
    _Atomic uint32_t next;
    _Atomic int first_err;
} link_in_job_t;

static void *link_in_worker(void *arg)
{
    link_in_job_t *j = arg;
    int rc = hnsw_link_in_locked(j->h, j->view, j->ids, j->n, &j->next), zero = 0;
    if (rc)
        atomic_compare_exchange_strong(&j->first_err, &zero, rc);
    return NULL;
}

/* The live nodes below span with fewer than min in-links from live nodes at level 0: a new
 * array in *out (the caller frees it), *n of them. */
static int weak_nodes(hnsw_t *h, uint32_t span, uint32_t min, uint32_t **out, uint32_t *n)
{
    uint16_t *in = cdn_calloc(span ? span : 1, sizeof *in);
    uint32_t buf[2 * HNSW_M_MAX + 1];
    size_t cap = 0;
    int rc = in ? CDN_OK : CDN_ERR_NOMEM;
    *out = NULL;
    *n = 0;
    for (uint32_t p = 0; p < span && rc == CDN_OK; p++) {
        uint8_t f = hnsw_flags(h, p);
        if (!(f & HNSW_F_PRESENT) || (f & HNSW_F_DELETED))
            continue;
        uint32_t c = hnsw_read_list(h, p, 0, buf);
        for (uint32_t i = 0; i < c; i++)
            if (buf[i] < span && in[buf[i]] < UINT16_MAX)
                in[buf[i]]++;
    }
    for (uint32_t p = 0; p < span && rc == CDN_OK; p++) {
        uint8_t f = hnsw_flags(h, p);
        if (!(f & HNSW_F_PRESENT) || (f & HNSW_F_DELETED) || in[p] >= min)
            continue;
        void *a = *out;
        if (*n == cap && cdn_grow(&a, &cap, (size_t)*n + 1, sizeof(uint32_t))) {
            rc = CDN_ERR_NOMEM;
            break;
        }
        *out = a;
        (*out)[(*n)++] = p;
    }
    cdn_free(in);
    return rc;
}

/* Links in again every live node with fewer than LINK_IN_MIN in-links at level 0. */
static int link_in_weak(hnsw_t *h, const vec_view_t *view, unsigned threads,
                        hnsw_repair_stats_t *stats)
{
    uint32_t *ids = NULL, n = 0;
    pthread_rwlock_rdlock(&h->write_gate);
    pthread_rwlock_rdlock(&h->grow_lock);
    uint32_t span = view->count < h->span ? view->count : h->span;
    int rc = weak_nodes(h, span, LINK_IN_MIN(h), &ids, &n);
    if (rc == CDN_OK && n) {
        link_in_job_t j = {.h = h, .view = view, .ids = ids, .n = n};
        atomic_init(&j.next, 0);
        atomic_init(&j.first_err, 0);
        hnsw_run_threads(threads, link_in_worker, &j);
        rc = atomic_load(&j.first_err);
    }
    pthread_rwlock_unlock(&h->grow_lock);
    pthread_rwlock_unlock(&h->write_gate);
    cdn_free(ids);
    if (stats && rc == CDN_OK)
        stats->nodes_linked_in = n;
    return rc;
}

int hnsw_repair(hnsw_t *h, const vec_view_t *view, unsigned threads, hnsw_repair_stats_t *stats)
{
    int rc = hnsw_repair_range(h, view, 0, UINT32_MAX, threads, stats);
    return rc ? rc : link_in_weak(h, view, threads, stats);
}
