/* hnsw_search.c: graph traversal for inserts and queries, including the permission-filtered
 * search (two-hop expansion, entry points from the allowed set, visit budget). Relies on
 * hnsw_int.h and CRoaring. */
#include "vector/hnsw_int.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "base/err.h"
#include "base/mem.h"
#include "base/topk.h"

/* Entry points sampled from the allowed set in FILTERED mode: they reach allowed regions the
 * greedy descent would miss when the allowed subgraph falls apart into islands. */
#define HNSW_FILTER_SEEDS 16u

void hnsw_descend_src(hnsw_t *h, const hnsw_scorer_t *s, uint32_t top, uint32_t stop, uint32_t *ep,
                      float *ep_dist, uint64_t *ndist)
{
    uint32_t buf[HNSW_M_MAX + 1];
    float d[HNSW_M_MAX + 1];
    for (uint32_t l = top; l > stop; l--) {
        int changed = 1;
        while (changed) {
            changed = 0;
            uint32_t n = hnsw_read_list(h, *ep, l, buf);
            for (uint32_t i = 0; i < n; i++)
                hnsw_prefetch_src(s, buf[i]);
            hnsw_score_src(h, s, buf, n, d);
            *ndist += n;
            /* Only fully linked nodes take the descent on: a node still being inserted is
             * linked from above before its own level-0 list is written, and a search that
             * landed on it would start level 0 with no neighbours (and return next to
             * nothing). Readers racing an insert met it as a forced postfilter with no hits. */
            for (uint32_t i = 0; i < n; i++) {
                if (d[i] < *ep_dist && (hnsw_flags(h, buf[i]) & HNSW_F_PRESENT)) {
                    *ep = buf[i];
                    *ep_dist = d[i];
                    changed = 1;
                }
            }
        }
    }
}

/* Keeps the neighbours of a popped node that are not yet visited (marking them), in place at
 * the front of buf; returns how many. The marks and rows are fetched ahead in two passes, so
 * the misses of one node's neighbours overlap instead of following one another. */
static uint32_t take_unvisited(const hnsw_scorer_t *s, uint16_t *marks, uint16_t tag, uint32_t *buf,
                               uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        __builtin_prefetch(&marks[buf[i]], 1, 3);
    uint32_t w = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t u = buf[i];
        if (marks[u] == tag)
            continue;
        marks[u] = tag;
        hnsw_prefetch_src(s, u);
        buf[w++] = u;
    }
    return w;
}

int hnsw_search_layer_build(hnsw_t *h, const hnsw_scorer_t *s, uint32_t level,
                            const hnsw_hit_t *eps, uint32_t n_eps, uint32_t ef, hnsw_heap_t *out)
{
    hnsw_visited_t *vis;
    hnsw_heap_t cand; /* min-heap: distances negated */
    int rc = hnsw_visited_get(h, &vis);
    if (rc)
        return rc;
    if (hnsw_heap_init(&cand, 2 * ef)) {
        hnsw_visited_put(h, vis);
        return CDN_ERR_NOMEM;
    }
    uint32_t buf[2 * HNSW_M_MAX + 1];
    float d[2 * HNSW_M_MAX + 1];
    uint16_t tag = vis->tag, *marks = vis->marks;
    out->n = 0;
    for (uint32_t i = 0; i < n_eps && !rc; i++) {
        if (marks[eps[i].id] == tag)
            continue;
        marks[eps[i].id] = tag;
        rc = hnsw_heap_push(&cand, eps[i].id, -eps[i].dist);
        rc = rc ? rc : hnsw_heap_push(out, eps[i].id, eps[i].dist);
        if (out->n > ef)
            hnsw_heap_pop(out);
    }
    while (cand.n && !rc) {
        hnsw_hit_t c = cand.a[0];
        if (out->n >= ef && -c.dist > out->a[0].dist)
            break;
        hnsw_heap_pop(&cand);
        uint32_t n = hnsw_read_list(h, c.id, level, buf);
        n = take_unvisited(s, marks, tag, buf, n);
        hnsw_score_src(h, s, buf, n, d);
        for (uint32_t i = 0; i < n && !rc; i++) {
            if (out->n < ef || d[i] < out->a[0].dist) {
                rc = hnsw_heap_push(&cand, buf[i], -d[i]);
                rc = rc ? rc : hnsw_heap_push(out, buf[i], d[i]);
                if (out->n > ef)
                    hnsw_heap_pop(out);
            }
        }
        /* The next node to expand is usually the candidates' top: start fetching its list. */
        if (cand.n)
            __builtin_prefetch(hnsw_list_at(h, cand.a[0].id, level), 0, 3);
    }
    hnsw_heap_free(&cand);
    hnsw_visited_put(h, vis);
    return rc;
}

/* ---------- query search ---------- */

typedef struct qctx {
    hnsw_t *h;
    hnsw_scorer_t s;     /* float rows, or estimates from 8-bit codes */
    hnsw_visited_t *vis; /* marks, tag and scratch buffer, pooled between searches */
    uint16_t *marks;
    uint16_t tag;
    hnsw_heap_t cand;  /* min-heap (negated): nodes to expand, admissible or not */
    hnsw_heap_t res;   /* max-heap of admissible nodes: the ef best so far */
    uint32_t *bridges; /* inadmissible nodes crossed by two-hop expansion, not yet routed */
    size_t n_bridges, cap_bridges, next_bridge;
    const roaring_bitmap_t *allowed; /* NULL: every live node is admissible */
    const roaring_bitmap_t *pool;    /* POOL mode's allowed set, for the seed sample's look */
    uint64_t *bits; /* allowed as a flat bitset over the span, when worth building */
    uint32_t ef;
    uint64_t max_visits;
    uint64_t adm_evaluated;
    uint64_t adm_total; /* admissible nodes that exist (an upper bound when filtering) */
    hnsw_stats_t *st;
    float *sample_d; /* the scored sample's distances, ascending (the witness) */
    uint32_t n_sample;
    uint32_t hide; /* a row the traversal must act as if absent (calibration), or UINT32_MAX */
    int stop;
    int pool_seen;      /* POOL mode: pool_thin has looked at the list */
    uint64_t pool_card; /* POOL mode: the allowed rows, for the looks' expected share */
    int rc;
} qctx_t;

/* Whether id is in the allowed set (c->allowed not NULL); kept out of line so that
 * admissible(), the check every neighbour takes, is small enough to inline: a traversal
 * whose every row is allowed then pays a flag load, not a call. */
__attribute__((noinline)) static int allowed_has(const qctx_t *c, uint32_t id)
{
    if (c->bits)
        return (int)(c->bits[id >> 6] >> (id & 63)) & 1;
    return roaring_bitmap_contains(c->allowed, id);
}

static inline int admissible(const qctx_t *c, uint32_t id)
{
    if (hnsw_flags(c->h, id) & HNSW_F_DELETED)
        return 0;
    return !c->allowed || allowed_has(c, id);
}

typedef struct bits_fill {
    uint64_t *bits;
    uint32_t span;
} bits_fill_t;

static bool set_bit(uint32_t id, void *arg)
{
    bits_fill_t *f = arg;
    if (id >= f->span)
        return false; /* ids come in ascending order: the rest are past the span too */
    f->bits[id >> 6] |= 1ull << (id & 63);
    return true;
}

/* Sparse allowed sets are held by roaring as sorted arrays (below 1/16 density per 64 Ki
 * ids), so each membership test is a binary search, and a filtered search makes tens of
 * thousands of them (two-hop expansion checks every neighbour of every bridge). For such sets
 * a flat bitset, built in one pass over the set, pays for itself; denser sets are roaring
 * bitmaps or runs already, where a test is cheap and a pass over every id is not. A failed
 * allocation just keeps the roaring path. */
#define HNSW_BITSET_MIN 64u

static void build_bits(qctx_t *c)
{
    uint32_t span = c->h->span;
    uint64_t card = roaring_bitmap_get_cardinality(c->allowed);
    if (card < HNSW_BITSET_MIN || card * 16 > span)
        return;
    c->bits = cdn_calloc(((size_t)span + 63) / 64, sizeof(uint64_t));
    if (!c->bits)
        return;
    bits_fill_t f = {c->bits, span};
    roaring_iterate(c->allowed, set_bit, &f);
}

/* Marks u visited unless the visit budget is spent; returns 0 when u must be skipped. */
static int visit(qctx_t *c, uint32_t u)
{
    if (c->marks[u] == c->tag)
        return 0;
    if (c->max_visits && c->st->visited >= c->max_visits) {
        c->st->exhausted_budget = 1;
        c->stop = 1;
        return 0;
    }
    c->marks[u] = c->tag;
    c->st->visited++;
    return 1;
}

/* Computes u's distance and keeps it as a candidate if it can still matter; only admissible
 * nodes enter the results. */
static void consider_at(qctx_t *c, uint32_t u, int adm, float d)
{
    c->st->distances++;
    c->adm_evaluated += (uint64_t)adm;
    /* Every admissible node has been seen: nothing left to find, and the result is exact. */
    if (c->adm_evaluated >= c->adm_total)
        c->stop = 1;
    if (c->res.n < c->ef || d < c->res.a[0].dist) {
        c->rc = hnsw_heap_push(&c->cand, u, -d);
        if (adm && !c->rc) {
            c->rc = hnsw_heap_push(&c->res, u, d);
            if (c->res.n > c->ef)
                hnsw_heap_pop(&c->res);
        }
        if (c->rc)
            c->stop = 1;
    }
}

/* One distance through the traversal's scorer. */
static float score1(const qctx_t *c, uint32_t u)
{
    float d;
    hnsw_score_src(c->h, &c->s, &u, 1, &d);
    return d;
}

static void consider(qctx_t *c, uint32_t u, int adm)
{
    consider_at(c, u, adm, score1(c, u));
}

/* Scores ids[0..n) (already visited) through the traversal's scorer, rows fetched a few
 * ahead and four per kernel call, and considers them in order; adm[i] says whether ids[i] may
 * enter the results (NULL: all may). */
#define SCORE_AHEAD 8u
static void score_batch(qctx_t *c, const uint32_t *ids, const uint8_t *adm, uint32_t n)
{
    float d[4];
    for (uint32_t i = 0; i < n && i < SCORE_AHEAD; i++)
        hnsw_prefetch_src(&c->s, ids[i]);
    for (uint32_t i = 0; i < n && !c->rc; i += 4) {
        uint32_t g = n - i < 4 ? n - i : 4;
        for (uint32_t j = i + SCORE_AHEAD; j < i + SCORE_AHEAD + g && j < n; j++)
            hnsw_prefetch_src(&c->s, ids[j]);
        hnsw_score_src(c->h, &c->s, ids + i, g, d);
        for (uint32_t j = 0; j < g && !c->rc; j++)
            consider_at(c, ids[i + j], adm ? adm[i + j] : 1, d[j]);
    }
}

/* ACORN-style bridge: u is not admissible and sits in a mostly inadmissible neighbourhood, so
 * instead of routing through u we look straight at u's admissible neighbours, which are
 * visited and appended to out (scored later, in one batch). u is remembered in case the
 * admissible nodes alone run dry. Returns the new length of out. */
static uint32_t expand_two_hop(qctx_t *c, uint32_t u, uint32_t *buf, uint32_t *out, uint32_t n_out)
{
    if (c->n_bridges == c->cap_bridges) {
        void *p = c->bridges;
        if (cdn_grow(&p, &c->cap_bridges, c->n_bridges + 1, sizeof(uint32_t)) == CDN_OK)
            c->bridges = p;
    }
    if (c->n_bridges < c->cap_bridges)
        c->bridges[c->n_bridges++] = u;
    uint32_t n = hnsw_read_list(c->h, u, 0, buf);
    c->st->two_hop_expansions++;
    for (uint32_t i = 0; i < n; i++)
        __builtin_prefetch(&c->marks[buf[i]], 1, 3);
    for (uint32_t i = 0; i < n && !c->stop; i++) {
        uint32_t w = buf[i];
        if (c->marks[w] == c->tag || !admissible(c, w))
            continue;
        if (visit(c, w))
            out[n_out++] = w;
    }
    return n_out;
}

/* When the admissible nodes reachable by two hops are used up before ef results are found
 * (islands of allowed nodes), the search goes on through the bridges it skipped, oldest (so
 * nearest the query's start) first, as ordinary routing nodes. */
static int resume_from_bridges(qctx_t *c)
{
    size_t before = c->cand.n;
    while (c->next_bridge < c->n_bridges && c->cand.n == before && !c->stop)
        consider(c, c->bridges[c->next_bridge++], 0);
    return c->cand.n > before;
}

/* The dense case of search_level0: every unvisited neighbour is scored. Without a visit
 * budget the unvisited ones are kept without a branch: whether a neighbour was visited is a
 * coin toss the predictor loses, and those mispredictions were the largest part of the
 * traversal's own time at SciFact's size, where every mark is in L1. */
static void consider_batch(qctx_t *c, uint32_t *buf, uint8_t *adm, uint32_t n)
{
    uint32_t w = 0;
    if (!c->max_visits && !c->stop) {
        uint16_t tag = c->tag, *marks = c->marks;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t u = buf[i];
            uint32_t fresh = marks[u] != tag;
            marks[u] = tag; /* a repeat of u later in buf reads it visited */
            adm[w] = adm[i];
            buf[w] = u;
            w += fresh;
        }
        c->st->visited += w;
        score_batch(c, buf, adm, w);
        return;
    }
    for (uint32_t i = 0; i < n && !c->stop; i++) {
        if (!visit(c, buf[i]))
            continue;
        adm[w] = adm[i];
        buf[w++] = buf[i];
    }
    /* Nodes visited before the budget ran out are still considered, as one by one they were. */
    score_batch(c, buf, adm, w);
}

/* The sparse case: admissible neighbours are scored, inadmissible ones are crossed (two-hop
 * expansion); every list is fetched before any is read, and everything found is scored in
 * one batch. two (room for m0 * (m0 + 1) ids) collects them. */
static void consider_sparse(qctx_t *c, uint32_t *buf, const uint8_t *adm, uint32_t n, uint32_t *two)
{
    uint32_t lists[2 * HNSW_M_MAX + 1], n_two = 0, n_bridge = 0;
    uint32_t *bridge = buf; /* compacted in place: bridge ids never outrun buf's reads */
    for (uint32_t i = 0; i < n && !c->stop; i++) {
        uint32_t u = buf[i];
        if (!visit(c, u))
            continue;
        if (adm[i]) {
            two[n_two++] = u;
        } else {
            __builtin_prefetch(hnsw_list_at(c->h, u, 0), 0, 3);
            bridge[n_bridge++] = u;
        }
    }
    for (uint32_t i = 0; i < n_bridge && !c->stop; i++)
        n_two = expand_two_hop(c, bridge[i], lists, two, n_two);
    score_batch(c, two, NULL, n_two);
}

/* Either look's verdict: the traversal stops, its results dropped, stats.pool_far set. */
static void pool_stop(qctx_t *c)
{
    c->stop = 1;
    c->st->pool_far = 1;
    c->res.n = 0;
}

/* A pool's second look, when its list first holds ef rows (a few hundred distances into level
 * 0, nearly all of it still ahead): those rows are the query's neighbourhood, and were the
 * allowed rows spread evenly they would hold about ef x share of them. Fewer than a quarter of
 * that says the subject's rows lie elsewhere, and the traversal stops with no hit for the
 * caller's next plan, as pool_far's look at the seed sample does (which sees a wider
 * neighbourhood and fires far less often). For evenly spread rows a quarter of the mean is a
 * tail of exp(-0.28 mean) (mean 33 at 1M, ef 166, a fifth readable: 1e-4), and a wrong stop
 * costs time, not recall. At that cell the list held 19 - 51 allowed rows for subjects reading
 * random teams (median 33), 8 - 166 for teams near their questions (median 111), and 0 - 69
 * (median 3) for teams far from them, whose pools then failed 193 times in 200. */
#define HNSW_POOL_THIN_DIV 4u
static int pool_thin(qctx_t *c)
{
    uint64_t found = 0;
    c->pool_seen = 1;
    for (uint32_t i = 0; i < c->res.n; i++)
        found += roaring_bitmap_contains(c->pool, c->res.a[i].id);
    if (!c->adm_total ||
        found * HNSW_POOL_THIN_DIV * c->adm_total >= (uint64_t)c->res.n * c->pool_card)
        return 0;
    pool_stop(c);
    return 1;
}

/* Expands the nearest candidate until the ef-th admissible result is nearer than every
 * remaining candidate, the budget runs out or nothing is left. */
static void search_level0(qctx_t *c)
{
    uint32_t buf[2 * HNSW_M_MAX + 1];
    uint8_t adm[2 * HNSW_M_MAX];
    size_t cap_two = (size_t)c->h->m0 * (c->h->m0 + 1);
    if (c->vis->scratch_cap < cap_two) {
        uint32_t *p = cdn_realloc(c->vis->scratch, cap_two * sizeof(uint32_t));
        if (!p) {
            c->rc = CDN_ERR_NOMEM;
            return;
        }
        c->vis->scratch = p;
        c->vis->scratch_cap = cap_two;
    }
    uint32_t *two = c->vis->scratch;
    while (!c->stop) {
        if (!c->cand.n && (c->res.n >= c->ef || !resume_from_bridges(c)))
            break;
        hnsw_hit_t top = c->cand.a[0];
        if (c->res.n >= c->ef && -top.dist > c->res.a[0].dist)
            break;
        hnsw_heap_pop(&c->cand);
        uint32_t n = hnsw_read_list(c->h, top.id, 0, buf), n_adm = 0;
        for (uint32_t i = 0; i < n; i++) {
            __builtin_prefetch(&c->marks[buf[i]], 1, 3);
            __builtin_prefetch(&c->h->flags[buf[i]], 0, 3);
        }
        for (uint32_t i = 0; i < n; i++) {
            adm[i] = (uint8_t)admissible(c, buf[i]);
            n_adm += adm[i];
        }
        if (2 * n_adm < n)
            consider_sparse(c, buf, adm, n, two);
        else
            consider_batch(c, buf, adm, n);
        if (c->pool && !c->pool_seen && c->res.n >= c->ef && pool_thin(c))
            break;
        /* The next node to expand is usually the candidates' top: start fetching its list. */
        if (c->cand.n)
            __builtin_prefetch(hnsw_list_at(c->h, c->cand.a[0].id, 0), 0, 3);
    }
}

/* How many allowed ids are scored to choose the seeds from, at most (and at least 8 per seed). */
#define HNSW_SEED_SAMPLE 1024u

typedef struct seed {
    float d;
    uint32_t id;
} seed_t;

static int seed_cmp(const void *a, const void *b)
{
    const seed_t *x = a, *y = b;
    return x->d < y->d ? -1 : x->d > y->d ? 1 : (x->id > y->id) - (x->id < y->id);
}

/* Moves the s nearest of cand[0..n) to its front, in no order (a quickselect). */
static void select_nearest(seed_t *cand, size_t n, size_t s)
{
    size_t lo = 0, hi = n;
    if (s >= n)
        return;
    while (hi - lo > 1) { /* invariant: the s-th smallest lies in [lo, hi) */
        seed_t pivot = cand[lo + (hi - lo) / 2], t;
        size_t i = lo, j = hi - 1;
        while (i <= j) {
            while (seed_cmp(&cand[i], &pivot) < 0)
                i++;
            while (seed_cmp(&cand[j], &pivot) > 0)
                j--;
            if (i <= j) {
                t = cand[i], cand[i] = cand[j], cand[j] = t;
                i++;
                if (j-- == 0)
                    break;
            }
        }
        if (s <= j)
            hi = j + 1;
        else if (s >= i)
            lo = i;
        else
            break;
    }
}

/* Moves the s nearest of cand[0..n) to its front, ascending: the unfiltered sample needs its
 * best 16 of up to 1,024, not the whole order. */
static void nearest_first(seed_t *cand, size_t n, size_t s)
{
    select_nearest(cand, n, s);
    qsort(cand, s < n ? s : n, sizeof *cand, seed_cmp);
}

/* Takes allowed id `id` as a seed candidate, scored later by score_seeds (or, without room to
 * choose, seeds it). */
static void seed_one(qctx_t *c, uint32_t id, seed_t *cand, size_t *n)
{
    if (id >= c->h->span || !(hnsw_flags(c->h, id) & HNSW_F_PRESENT))
        return;
    if (cand) {
        cand[(*n)++].id = id;
    } else if (visit(c, id)) {
        c->st->seeds++;
        consider(c, id, admissible(c, id));
    }
}

/* Scores the sampled seed candidates: rows fetched a few groups ahead and scored four per
 * kernel call, so the sample's misses overlap instead of following one another. */
#define SEED_AHEAD 16u
static void score_seeds(qctx_t *c, seed_t *cand, size_t n)
{
    uint32_t ids[4];
    float d[4];
    for (size_t i = 0; i < n && i < SEED_AHEAD; i++)
        hnsw_prefetch_src(&c->s, cand[i].id);
    for (size_t i = 0; i < n; i += 4) {
        uint32_t g = n - i < 4 ? (uint32_t)(n - i) : 4;
        for (uint32_t j = 0; j < g; j++) {
            if (i + j + SEED_AHEAD < n)
                hnsw_prefetch_src(&c->s, cand[i + j + SEED_AHEAD].id);
            ids[j] = cand[i + j].id;
        }
        hnsw_score_src(c->h, &c->s, ids, g, d);
        for (uint32_t j = 0; j < g; j++)
            cand[i + j].d = d[j];
    }
    c->st->distances += n;
}

/* Scores m of the card admissible ids and seeds the traversal with the nearest s; witness:
 * keep the sample's distances for hnsw_sample_suspect. */
static void seed_sample(qctx_t *c, uint64_t card, uint64_t s, uint64_t m, int witness);

/* A pool's look at the seed sample. POOL mode asks the unfiltered traversal for the allowed
 * rows among the nearest of its list; when the subject's rows lie elsewhere (a subject whose
 * documents are about other things) the list holds too few of them, the traversal was for
 * nothing, and the caller's next plan answers. The unfiltered seed sample is uniform over the
 * graph, so its nearest rows show the query's wider neighbourhood: where the allowed share
 * would leave HNSW_POOL_LOOK_EXPECT allowed rows among the nearest `look` of it and none is
 * there, the traversal stops before level 0 and returns no hit. Were the allowed rows spread
 * evenly, that would happen with probability about exp(-6) = 0.25%, and it costs that query
 * time, not recall (the caller's next plan is at least as exact). */
#define HNSW_POOL_LOOK_EXPECT 6u

/* How many of a sample of n the look reads: 0 for no look (not POOL, or a share so small that
 * the look would reach past the sample's nearest quarter). */
static uint64_t pool_look(const qctx_t *c, size_t n)
{
    uint64_t card = c->pool_card;
    if (!c->pool || !c->adm_total || !card)
        return 0;
    uint64_t look = (HNSW_POOL_LOOK_EXPECT * c->adm_total + card - 1) / card;
    return look * 4 <= n ? look : 0;
}

/* 1 (and the traversal stopped, its results dropped) when none of the sample's `look` nearest
 * (cand[0..look), in any order) is allowed. */
static int pool_far(qctx_t *c, const seed_t *cand, uint64_t look)
{
    for (uint64_t i = 0; i < look; i++)
        if (roaring_bitmap_contains(c->pool, cand[i].id))
            return 0;
    pool_stop(c);
    return 1;
}

/* Seeds the traversal with allowed ids. When the allowed set is no larger than the seed count
 * (max(ef, HNSW_FILTER_SEEDS)), all of it. Otherwise a sample of the set is scored and the
 * nearest become the seeds: when the readable rows form a region far from the query, the
 * traversal then starts at the region's edge nearest the query instead of wherever the descent
 * through the unfiltered upper levels lands (misaligned 1% recall 0.90 -> 1.00, 5% 0.81 -> 0.91
 * on generated 100k x 128). Sparse sets are sampled evenly over their ranks (select()); dense
 * ones (a tenth of the graph or more) by drawing ids at random and keeping the allowed ones,
 * which costs about 1 / share membership tests a sample instead of a select() each. */
static void seed_from_allowed(qctx_t *c)
{
    uint64_t card = roaring_bitmap_get_cardinality(c->allowed);
    uint64_t s = c->ef > HNSW_FILTER_SEEDS ? c->ef : HNSW_FILTER_SEEDS;
    seed_sample(c, card, s, s * 8 > HNSW_SEED_SAMPLE ? s * 8 : HNSW_SEED_SAMPLE, 1);
}

/* Unfiltered traversals are seeded too, from a fixed random sample of the graph. When the rows
 * form separate topics, the greedy descent through the upper levels can end in another topic,
 * and level 0 then finds nothing of the query's own (recall 0) unless ef is wide enough to
 * cross over: 1M x 384 topics, held-out queries, 4 - 5% of them below ef 256. Scoring a sample
 * of sqrt(n) rows (at most HNSW_UNFILTERED_SAMPLE_MAX) and starting from the nearest
 * HNSW_UNFILTERED_SEEDS as well puts a start in the query's topic: recall@10 on codes at ef 64
 * / 96 / 128, 0.787 / 0.869 / 0.893 -> 0.974 / 0.988 / 0.993 (a 256-row sample left 4% of the
 * queries at recall 0 at ef 128: topics without a sampled row). */
#define HNSW_UNFILTERED_SEEDS 16u
#define HNSW_UNFILTERED_SAMPLE_MAX 1024u

static void seed_unfiltered(qctx_t *c)
{
    uint64_t m = (uint64_t)sqrt((double)c->adm_total);
    if (m > HNSW_UNFILTERED_SAMPLE_MAX)
        m = HNSW_UNFILTERED_SAMPLE_MAX;
    /* seed_sample draws ids at random only where most of the graph is admissible */
    if (m >= 2 * HNSW_UNFILTERED_SEEDS && c->adm_total * 10 > atomic_load(&c->h->n_nodes))
        seed_sample(c, c->adm_total, HNSW_UNFILTERED_SEEDS, m, 0);
}

static void seed_sample(qctx_t *c, uint64_t card, uint64_t s, uint64_t m, int witness)
{
    uint64_t off = card ? ((uint64_t)c->h->p.seed * 0x9e3779b97f4a7c15ull) % card : 0;
    uint32_t span = c->h->span;
    seed_t *cand = NULL;
    size_t n = 0;
    if (s > card)
        s = card;
    if (m > card)
        m = card;
    if (m > s && !(cand = cdn_malloc(m * sizeof *cand)))
        m = s; /* no room to choose: fall back to the spread itself */
    if (card * 10 > atomic_load(&c->h->n_nodes) && m > s) {
        uint64_t z = (uint64_t)c->h->p.seed ^ 0x2545f4914f6cdd1dull;
        for (uint64_t tries = 0; n < m && tries < 40 * m && span; tries++) {
            z = z * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t id = (uint32_t)((z >> 32) % span);
            if (admissible(c, id))
                seed_one(c, id, cand, &n);
        }
    } else if (c->allowed) { /* unfiltered sampling draws at random or not at all */
        for (uint64_t i = 0; i < m; i++) {
            uint32_t id;
            uint64_t rank = (off + i * card / m) % card;
            if (roaring_bitmap_select(c->allowed, (uint32_t)rank, &id))
                seed_one(c, id, cand, &n);
        }
    }
    if (cand) {
        uint64_t look = witness ? 0 : pool_look(c, n);
        score_seeds(c, cand, n);
        if (witness) {
            qsort(cand, n, sizeof *cand, seed_cmp);
        } else { /* the look's rows first, in any order; the seeds sorted among them */
            size_t w = look > s ? look : s;
            w = w < n ? w : n;
            select_nearest(cand, n, w);
            nearest_first(cand, w, s);
        }
        if (look && pool_far(c, cand, look)) {
            cdn_free(cand);
            return;
        }
        for (size_t i = 0; i < n && i < s && !c->stop; i++)
            if (visit(c, cand[i].id)) {
                c->st->seeds++;
                consider(c, cand[i].id, admissible(c, cand[i].id));
            }
        /* Keep the distances as the witness; a sample that is the whole set proves nothing. */
        if (witness && n < card && (c->sample_d = cdn_malloc(n * sizeof(float) + 1)) != NULL) {
            for (size_t i = 0; i < n; i++)
                c->sample_d[i] = cand[i].d;
            c->n_sample = (uint32_t)n;
            c->st->sampled = (uint32_t)n;
            c->st->sample_allowed = card;
        }
        cdn_free(cand);
    }
}

/* How many of the sample are strictly nearer than d (sample_d is ascending). */
static uint32_t sample_below(const qctx_t *c, float d)
{
    uint32_t lo = 0, hi = c->n_sample;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->sample_d[mid] < d)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int hnsw_sample_suspect(const hnsw_stats_t *st, uint32_t k)
{
    if (!st->sampled || !st->sample_allowed || st->sampled >= st->sample_allowed || k == 0)
        return 0;
    /* P(X >= t) for X ~ Binomial(k, f): the smallest t with tail below 1% is the alarm. */
    double f = (double)st->sampled / (double)st->sample_allowed, pmf = pow(1 - f, k), tail = 1;
    for (uint32_t t = 0; t <= k; t++) {
        if (tail < 0.01)
            return st->sample_closer >= t;
        tail -= pmf;
        pmf = t < k ? pmf * (double)(k - t) / (double)(t + 1) * f / (1 - f) : 0;
    }
    return 0;
}

/* The whole search with grow_lock held for reading and c's heaps ready. */
static void search_locked(qctx_t *c, hnsw_mode_t mode)
{
    hnsw_t *h = c->h;
    uint64_t e = atomic_load(&h->entry);
    c->adm_total = atomic_load(&h->n_nodes) - atomic_load(&h->n_deleted);
    if (mode == HNSW_MODE_FILTERED && c->allowed) {
        c->adm_total = roaring_bitmap_get_cardinality(c->allowed);
        build_bits(c);
    }
    if (e == HNSW_NO_ENTRY)
        return;
    if (c->hide < h->span)
        c->marks[c->hide] = c->tag; /* as if visited: never scored, never expanded */
    uint32_t ep = (uint32_t)e;
    float ep_dist = score1(c, ep);
    c->st->distances++;
    hnsw_descend_src(h, &c->s, (uint32_t)(e >> 32), 0, &ep, &ep_dist, &c->st->distances);
    if (visit(c, ep))
        consider(c, ep, admissible(c, ep));
    if (mode == HNSW_MODE_FILTERED && c->allowed)
        seed_from_allowed(c);
    else
        seed_unfiltered(c);
    search_level0(c);
}

/* On codes, the first HNSW_RERANK_FACTOR * k of the ef-list (by estimate) are re-scored in
 * float: the estimates' errors are small beside the gaps between a query's neighbours, so the
 * true top k sit well inside them (200k x 384 topics: recall at factor 2 equals the whole
 * list's at every ef and share measured; 4 keeps a margin), and each float row re-scored is
 * a cold 1.5 KB read at 384 dimensions. */
#define HNSW_RERANK_FACTOR 4u

/* Re-scores the best HNSW_RERANK_FACTOR * k of a traversal's ef-list on codes in float and
 * sorts them by the float distance, dropping the rest; returns the k-th estimate of the
 * list as it was ranked (the witness compares the sample's estimates with it), or +inf with
 * fewer than k. Rows whose codes prove them farther than k others of the list (their lower
 * bound above the k-th smallest upper bound, quant_query_bounds) are not read in float: they
 * could not be among the k returned, so they keep +inf and sort last. At 4k = 40 that skips
 * 27 of 40 float rows a query on Fashion-MNIST, 16 of 34 on SciFact, 13 of 38 at 1M x 384. */
static float rerank_float(qctx_t *c, const vec_view_t *view, const float *query, uint32_t k)
{
    if (!c->pool) /* keep_pool left it sorted */
        hnsw_heap_sort_heap(&c->res);
    float kth = c->res.n >= k ? c->res.a[k - 1].dist : INFINITY;
    uint32_t keep = HNSW_RERANK_FACTOR * k, n;
    if (keep < c->res.n)
        c->res.n = keep;
    n = c->res.n;
    /* One block: the rows' ids, their lower and upper bounds, and the heap (base/topk) that
     * finds the k-th smallest upper bound; lo is set only once the bounds are in. */
    uint32_t *ids = n > k ? cdn_malloc((size_t)n * (sizeof(uint32_t) + 2 * sizeof(float)) +
                                       (size_t)k * sizeof(topk_hit_t))
                          : NULL;
    const float *lo = NULL;
    float t = INFINITY;
    if (ids) {
        float *l = (float *)(ids + n), *hi = l + n;
        topk_t top;
        topk_init_buf(&top, (topk_hit_t *)(hi + n), k);
        for (uint32_t i = 0; i < n; i++)
            ids[i] = c->res.a[i].id;
        quant_query_bounds(c->s.codes, ids, n, l, hi);
        for (uint32_t i = 0; i < n; i++)
            topk_push(&top, ids[i], hi[i]);
        t = topk_bound(&top);
        lo = l;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!(lo && lo[i] > t)) {
            hnsw_prefetch_row(view, c->res.a[i].id);
            c->st->rescored++;
        }
    for (uint32_t i = 0; i < n; i++)
        c->res.a[i].dist = lo && lo[i] > t
                               ? INFINITY
                               : c->h->dist(query, vec_row(view, c->res.a[i].id), c->h->dim);
    hnsw_heap_sort(&c->res);
    cdn_free(ids);
    return kth;
}

static int search_impl(hnsw_t *h, const vec_view_t *view, const quant_t *codes, const float *query,
                       uint32_t k, uint32_t ef, const roaring_bitmap_t *allowed, hnsw_mode_t mode,
                       uint64_t max_visits, uint32_t hide, hnsw_stats_t *stats,
                       hnsw_hit_t *out_hits, uint32_t *n_out);

/* POOL mode keeps only the allowed nodes among the k nearest of its list (by the traversal's
 * distances) before they are re-scored in float: the caller drops the others, and each float
 * row is a cold 1.5 KB read at 384 dimensions (1M x 384, a fifth readable: the list's 166
 * rows took 0.16 ms a query to re-score, a third of the search). */
static void keep_pool(qctx_t *c, uint32_t k)
{
    uint32_t w = 0;
    hnsw_heap_sort_heap(&c->res);
    if (c->res.n > k)
        c->res.n = k;
    for (uint32_t i = 0; i < c->res.n; i++)
        if (roaring_bitmap_contains(c->pool, c->res.a[i].id))
            c->res.a[w++] = c->res.a[i];
    c->res.n = w; /* no longer a heap, still sorted */
}

int hnsw_search(hnsw_t *h, const vec_view_t *view, const float *query, uint32_t k, uint32_t ef,
                const roaring_bitmap_t *allowed, hnsw_mode_t mode, uint64_t max_visits,
                hnsw_stats_t *stats, hnsw_hit_t *out_hits, uint32_t *n_out)
{
    return hnsw_search_codes(h, view, NULL, query, k, ef, allowed, mode, max_visits, stats,
                             out_hits, n_out);
}

int hnsw_search_codes(hnsw_t *h, const vec_view_t *view, const quant_t *codes, const float *query,
                      uint32_t k, uint32_t ef, const roaring_bitmap_t *allowed, hnsw_mode_t mode,
                      uint64_t max_visits, hnsw_stats_t *stats, hnsw_hit_t *out_hits,
                      uint32_t *n_out)
{
    return search_impl(h, view, codes, query, k, ef, allowed, mode, max_visits, UINT32_MAX, stats,
                       out_hits, n_out);
}

int hnsw_search_hiding(hnsw_t *h, const vec_view_t *view, const quant_t *codes, const float *query,
                       uint32_t k, uint32_t ef, const roaring_bitmap_t *allowed, hnsw_mode_t mode,
                       uint32_t hide, hnsw_stats_t *stats, hnsw_hit_t *out_hits, uint32_t *n_out)
{
    return search_impl(h, view, codes, query, k, ef, allowed, mode, 0, hide, stats, out_hits,
                       n_out);
}

/* hnsw_search_codes, with `hide` (UINT32_MAX: none) treated as visited from the start. */
static int search_impl(hnsw_t *h, const vec_view_t *view, const quant_t *codes, const float *query,
                       uint32_t k, uint32_t ef, const roaring_bitmap_t *allowed, hnsw_mode_t mode,
                       uint64_t max_visits, uint32_t hide, hnsw_stats_t *stats,
                       hnsw_hit_t *out_hits, uint32_t *n_out)
{
    hnsw_stats_t local;
    hnsw_stats_t *st = stats ? stats : &local;
    memset(st, 0, sizeof(*st));
    st->incomplete = 1;
    *n_out = 0;
    if (!h || !view || !query || !out_hits || k == 0 || view->dim != h->dim)
        return CDN_ERR_INVALID;
    if (ef == 0)
        ef = h->p.ef_search;
    if (ef < k)
        ef = k;
    if (ef > HNSW_EF_MAX)
        ef = HNSW_EF_MAX;
    qctx_t c = {.h = h,
                .s = {.view = view, .q = query},
                .ef = ef,
                .max_visits = max_visits,
                .st = st,
                .hide = hide};
    c.allowed = mode == HNSW_MODE_FILTERED ? allowed : NULL;
    c.pool = mode == HNSW_MODE_POOL ? allowed : NULL;
    c.pool_card = c.pool ? roaring_bitmap_get_cardinality(c.pool) : 0;
    quant_query_t *qq = NULL;
    if (codes && quant_is_trained(codes)) {
        int qrc = quant_query_new(codes, view, h->metric, query, &qq);
        if (qrc == CDN_ERR_NOMEM)
            return qrc;
        c.s.codes = qq; /* a non-finite query keeps the float traversal */
    }
    if (hnsw_heap_init(&c.cand, 4 * ef) || hnsw_heap_init(&c.res, ef + 1)) {
        hnsw_heap_free(&c.cand);
        quant_query_free(qq);
        return CDN_ERR_NOMEM;
    }
    pthread_rwlock_rdlock(&h->grow_lock);
    hnsw_visited_t *vis = NULL;
    c.rc = hnsw_visited_get(h, &vis);
    if (!c.rc) {
        c.vis = vis;
        c.marks = vis->marks;
        c.tag = vis->tag;
        search_locked(&c, mode);
        hnsw_visited_put(h, vis);
    }
    pthread_rwlock_unlock(&h->grow_lock);
    if (!c.rc && c.pool)
        keep_pool(&c, k);
    if (!c.rc) {
        float kth = INFINITY;
        if (qq)
            kth = rerank_float(&c, view, query, k);
        else if (!c.pool)
            hnsw_heap_sort_heap(&c.res);
        uint32_t n = c.res.n < k ? c.res.n : k;
        memcpy(out_hits, c.res.a, n * sizeof(hnsw_hit_t));
        *n_out = n;
        if (c.n_sample && n == k)
            st->sample_closer = sample_below(&c, qq ? kth : out_hits[k - 1].dist);
        /* Exact only if every admissible node was evaluated (conservative when the allowed
         * set names ids the graph lacks); on codes, only if every one of them also made the
         * ef-list, since the estimates rank them only roughly. */
        st->incomplete = !(c.adm_evaluated >= c.adm_total && !st->exhausted_budget &&
                           (!qq || c.res.n >= c.adm_total));
    }
    hnsw_heap_free(&c.cand);
    hnsw_heap_free(&c.res);
    cdn_free(c.bridges);
    cdn_free(c.bits);
    cdn_free(c.sample_d);
    quant_query_free(qq);
    return c.rc;
}
