/* bm25.c: BM25 term scoring and MaxScore with block-max skipping over posting cursors
 * leapfrogging a filter bitmap. Relies on invidx cursors, CRoaring and base/topk. */
#include "text/bm25.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/topk.h"

/* Queries of up to this many terms score windows a block at a time (window_batch). */
#define BATCH_TERMS 8

/* A filter drives the walk when the lists hold this many times its docs: looking each allowed
 * doc up costs a search per essential list, a window costs a pass over its postings. */
#ifndef FILTER_FIRST
#define FILTER_FIRST 4
#endif

/* How many postings ahead window_batch prefetches a document length. */
#define BM25_DL_AHEAD 16

/* Upper bounds are inflated by this factor so that float rounding in a different summation
 * order can never make a bound smaller than a real score (which would lose exactness). */
#define UB_SLACK 1.0001f

double bm25_idf(uint64_t n_docs, uint64_t df)
{
    return log(1.0 + ((double)n_docs - (double)df + 0.5) / ((double)df + 0.5));
}

int bm25_clause_make(const fstats_t *fs, const char *term, size_t len, float boost, float k1,
                     float b, bm25_clause_t *out)
{
    uint32_t tid;
    uint64_t df;
    if (invidx_lookup(fs->ix, term, len, &tid) || (df = fstats_df(fs, tid)) == 0)
        return CDN_ERR_NOT_FOUND;
    *out = (bm25_clause_t){fs->ix, tid, (float)(bm25_idf(fs->n_docs, df) * boost),
                           k1,     b,   (float)fs->avgdl};
    return CDN_OK;
}

/* Per-query constants of a clause so that scoring a posting is a few flops. */
typedef struct term_scorer {
    invidx_cursor_t cur;
    const uint32_t *dl;
    float w, c1, c2; /* score = w * tf / (tf + c1 + c2 * dl) */
    float ub;        /* upper bound over the whole list */
    uint32_t ord;    /* the clause's index: scores are summed in this order */
} term_scorer_t;

static inline float ts_score(const term_scorer_t *t, uint32_t tf, uint32_t dl)
{
    float f = (float)tf;
    return t->w * f / (f + t->c1 + t->c2 * (float)dl);
}

/* The bound of f (INVIDX_IMPACTS entries) under t's constants. */
static inline float ts_bound(const term_scorer_t *t, const invidx_impact_t *f)
{
    float m = 0;
    for (size_t j = 0; j < INVIDX_IMPACTS && f[j].tf; j++) {
        float s = ts_score(t, f[j].tf, f[j].dl);
        m = s > m ? s : m;
    }
    return m * UB_SLACK;
}

static void ts_init(term_scorer_t *t, const bm25_clause_t *c, uint32_t ord)
{
    const invidx_plist_t *p = &c->ix->pl[c->tid];
    t->cur = (invidx_cursor_t){p, 0};
    t->dl = c->ix->dl;
    t->w = c->weight;
    t->c1 = c->k1 * (1 - c->b);
    t->c2 = c->k1 * c->b / (c->avgdl > 0 ? c->avgdl : 1);
    t->ord = ord;
    t->ub = ts_bound(t, p->limp);
}

uint32_t bm25_filter_next(roaring_uint32_iterator_t *it, uint32_t d)
{
    if (!it->has_value)
        return INVIDX_END;
    if (it->current_value >= d)
        return it->current_value;
    return roaring_move_uint32_iterator_equalorlarger(it, d) ? it->current_value : INVIDX_END;
}

/* ---- the top k: base/topk keyed by the negated score, so that its order (key, then id,
 * ascending) is score descending with ties to the smaller id ---- */

/* Hands t's hits to hits best first, their scores as they were, and empties t. */
static void top_out(topk_t *t, bm25_hit_t *hits, size_t *n_hits)
{
    size_t n = topk_size(t);
    topk_hit_t h;
    for (size_t i = n; i > 0; i--) {
        topk_pop_worst(t, &h);
        hits[i - 1] = (bm25_hit_t){h.id, -h.dist};
    }
    *n_hits = n;
}

/* ---- MaxScore over windows of doc ids (the block-max variant): a window ends where the first
 * of the cursors' current blocks ends, so each term's postings in it lie in one block whose bound
 * holds for the window. Terms are ordered by that bound; those whose summed bounds cannot beat
 * the k-th score are non-essential there (only probed for candidates the others bring), and a
 * window where every term is non-essential is skipped without reading a posting. ---- */

typedef struct wterm {
    float bound;  /* the term's bound in the window */
    uint32_t idx; /* its scorer */
} wterm_t;

typedef struct window {
    wterm_t *ord; /* the terms by window bound, ascending */
    float *cum;   /* cum[j]: the sum of the bounds of ord[0..j] */
    size_t ne;    /* ord[0..ne) are non-essential */
} window_t;

static inline uint32_t block_last(const invidx_cursor_t *c)
{
    uint32_t e = (c->i / INVIDX_BLOCK + 1) * INVIDX_BLOCK;
    return c->pl->docs[(e < c->pl->n ? e : c->pl->n) - 1];
}

static int cmp_wterm(const void *a, const void *b)
{
    const wterm_t *x = a, *y = b;
    return x->bound < y->bound ? -1 : x->bound > y->bound;
}

/* Orders the terms of window [.., hi] by their bound in it. */
static void window_plan(const term_scorer_t *ts, size_t n, uint32_t hi, window_t *w)
{
    for (size_t i = 0; i < n; i++) {
        const invidx_cursor_t *c = &ts[i].cur;
        float b =
            invidx_cur_doc(c) > hi
                ? 0
                : ts_bound(&ts[i], c->pl->bimp + (size_t)(c->i / INVIDX_BLOCK) * INVIDX_IMPACTS);
        size_t j = i;
        if (n <= 16) /* insertion: the usual few terms */
            for (; j > 0 && w->ord[j - 1].bound > b; j--)
                w->ord[j] = w->ord[j - 1];
        w->ord[j] = (wterm_t){b, (uint32_t)i};
    }
    if (n > 16)
        qsort(w->ord, n, sizeof *w->ord, cmp_wterm);
    for (size_t j = 0; j < n; j++)
        w->cum[j] = (j ? w->cum[j - 1] : 0) + w->ord[j].bound;
}

/* Scores doc d (allowed, in the window): the essential cursors on d, then the non-essential ones
 * from the largest bound down while the doc can still beat theta. Returns 1 when fully scored
 * into *score, 0 when it cannot enter. The running sum only prunes; the score is the sum of
 * part[] in clause order, because the visiting order follows bounds, which come from every
 * posting (hidden documents' too), and float addition is not associative. */
static int score_doc(term_scorer_t *ts, size_t n, const window_t *w, uint32_t d, float theta,
                     float *part, float *score, bm25_stats_t *st)
{
    float s = 0;
    memset(part, 0, n * sizeof *part);
    for (size_t j = w->ne; j < n; j++) {
        term_scorer_t *t = &ts[w->ord[j].idx];
        if (invidx_cur_doc(&t->cur) != d)
            continue;
        s += part[t->ord] = ts_score(t, t->cur.pl->tfs[t->cur.i], t->dl[d]);
        t->cur.i++;
        st->postings++;
    }
    for (size_t j = w->ne; j-- > 0;) {
        term_scorer_t *t = &ts[w->ord[j].idx];
        if (s + w->cum[j] <= theta)
            return 0;
        if (invidx_cur_seek(&t->cur, d) == d) {
            s += part[t->ord] = ts_score(t, t->cur.pl->tfs[t->cur.i], t->dl[d]);
            st->postings++;
        }
    }
    s = 0;
    for (size_t i = 0; i < n; i++)
        s += part[i];
    *score = s;
    return 1;
}

/* The candidates of a window (window_batch): docs ascending, their running sums (for pruning only)
 * and n parts each, the score from every clause in clause order. */
typedef struct cands {
    uint32_t *doc;
    float *sum, *part;
} cands_t;

/* The state of one top-k run. */
typedef struct run {
    term_scorer_t *ts;
    size_t n;
    float *part;
    window_t w;
    topk_t top;
    float theta; /* the k-th score once the heap is full and pruning is on, else -inf */
    int prune;
    uint64_t matched;
    int exact;
    bm25_stats_t *st;
    /* window_batch's candidates (two sets: merges go from one to the other), up to
     * INVIDX_BLOCK x n each; NULL when the query has more than BATCH_TERMS terms */
    cands_t *cand;
} run_t;

/* Pushes doc d, fully scored as parts (clause order), and raises theta. */
static void run_push(run_t *r, uint32_t d, const float *part)
{
    float s = 0;
    for (size_t i = 0; i < r->n; i++)
        s += part[i];
    r->matched++;
    r->st->scored++;
    topk_push(&r->top, d, -s);
    if (r->prune && topk_full(&r->top)) {
        r->theta = -topk_worst(&r->top);
        while (r->w.ne < r->n && r->w.cum[r->w.ne] <= r->theta)
            r->w.ne++;
        if (r->w.ne)
            r->exact = 0;
    }
}

/* Offers doc d to the heap (d is allowed and on an essential cursor, or any doc when nothing is
 * non-essential): scored through the cursors, pushed unless it cannot enter. */
static void run_offer(run_t *r, uint32_t d)
{
    float sc;
    if (!score_doc(r->ts, r->n, &r->w, d, r->theta, r->part, &sc, r->st))
        r->exact = 0;
    else
        run_push(r, d, r->part);
}

static void cand_copy(const cands_t *from, size_t c, cands_t *to, size_t m, size_t n)
{
    to->doc[m] = from->doc[c];
    to->sum[m] = from->sum[c];
    memcpy(to->part + m * n, from->part + c * n, n * sizeof *to->part);
}

/* window_batch's pass over the postings of e in the window up to hi when it is the only
 * essential term (the usual case once theta has risen): each allowed doc is scored and kept
 * as a candidate in *to only when the non-essential terms' bounds could lift it above theta,
 * as their merge would decide, but without writing and re-reading the candidates it drops.
 * Returns the posting index after the window; *m the candidates kept. */
static uint32_t window_single(run_t *r, const term_scorer_t *e, uint32_t hi,
                              const roaring_bitmap_t *filter, cands_t *to, size_t *m)
{
    const window_t *w = &r->w;
    const invidx_plist_t *p = e->cur.pl;
    size_t n = r->n, kept = 0;
    float lift = w->ne ? w->cum[w->ne - 1] : 0, theta = r->theta;
    uint32_t i = e->cur.i;
    int dropped = 0;
    for (; i < p->n && p->docs[i] <= hi; i++) {
        if (i + BM25_DL_AHEAD < p->n)
            __builtin_prefetch(&e->dl[p->docs[i + BM25_DL_AHEAD]]);
        uint32_t d = p->docs[i];
        if (filter && !roaring_bitmap_contains(filter, d))
            continue;
        float x = ts_score(e, p->tfs[i], e->dl[d]);
        if (x + lift <= theta) {
            dropped = 1;
            continue;
        }
        to->doc[kept] = d;
        to->sum[kept] = x;
        for (size_t o = 0; o < n; o++) /* a few floats: cheaper than a call to memset */
            to->part[kept * n + o] = o == e->ord ? x : 0;
        kept++;
    }
    if (dropped)
        r->exact = 0;
    *m = kept;
    return i;
}

/* A window, a block at a time (queries of up to BATCH_TERMS terms): the essential terms'
 * postings in it are scored in one pass each and merged into candidates; those the non-essential
 * terms' bounds could lift above theta and the filter allows stay; then each non-essential term,
 * from the largest bound down, is merged into the survivors (its postings in the window against
 * theirs, instead of one search per candidate), and those that can no longer beat theta drop
 * out. The rest are offered to the heap. Leaves the cursors it read inside or past the window. */
static void window_batch(run_t *r, uint32_t hi, const roaring_bitmap_t *filter)
{
    window_t *w = &r->w;
    size_t n = r->n, ne = w->ne, nc = 0, merged = 0;
    cands_t *a = &r->cand[0], *b = &r->cand[1], *t;
    for (size_t j = ne; j < n; j++, t = a, a = b, b = t) {
        term_scorer_t *e = &r->ts[w->ord[j].idx];
        const invidx_plist_t *p = e->cur.pl;
        uint32_t i = e->cur.i, start = i;
        size_t c = 0, m = 0;
        if (j == n - 1 && nc == 0) /* the only essential term: nothing to merge with */
            i = window_single(r, e, hi, filter, b, &m);
        else
            for (;; m++) {
                /* the length of a doc a few postings on: a posting's dl[] entry is a cache miss of
                 * its own (4 bytes a doc, scattered), and the next ones are known */
                if (i + BM25_DL_AHEAD < p->n)
                    __builtin_prefetch(&e->dl[p->docs[i + BM25_DL_AHEAD]]);
                uint32_t dc = c < nc ? a->doc[c] : INVIDX_END;
                uint32_t dt = i < p->n && p->docs[i] <= hi ? p->docs[i] : INVIDX_END;
                if (dc == INVIDX_END && dt == INVIDX_END)
                    break;
                /* a doc the filter refuses is never a candidate: neither scored nor copied */
                while (dt < dc && filter && !roaring_bitmap_contains(filter, dt)) {
                    i++;
                    dt = i < p->n && p->docs[i] <= hi ? p->docs[i] : INVIDX_END;
                }
                if (dc == INVIDX_END && dt == INVIDX_END)
                    break;
                if (dc <= dt) {
                    cand_copy(a, c++, b, m, n);
                } else {
                    b->doc[m] = dt;
                    b->sum[m] = 0;
                    memset(b->part + m * n, 0, n * sizeof *b->part);
                }
                if (dt <= dc) {
                    float x = ts_score(e, p->tfs[i], e->dl[dt]);
                    b->part[m * n + e->ord] = x;
                    b->sum[m] += x;
                    i++;
                }
            }
        r->st->postings += i - start;
        e->cur.i = i;
        nc = m;
    }
    merged = nc;
    if (filter) { /* the candidates (all allowed) that the other terms could lift above theta */
        size_t keep = 0;
        float lift = ne ? w->cum[ne - 1] : 0;
        for (size_t c = 0; c < nc; c++) {
            if (a->sum[c] + lift <= r->theta)
                continue; /* pruned: the count becomes a lower bound below */
            if (keep != c)
                cand_copy(a, c, a, keep, n);
            keep++;
        }
        nc = keep;
    }
    for (size_t j = ne; j-- > 0 && nc;) { /* the non-essential terms, merged into the survivors */
        term_scorer_t *e = &r->ts[w->ord[j].idx];
        const invidx_plist_t *q = e->cur.pl;
        uint32_t at = e->cur.i;
        size_t keep = 0;
        for (size_t c = 0; c < nc; c++) {
            uint32_t d = a->doc[c];
            float s = a->sum[c];
            if (s + w->cum[j] <= r->theta)
                continue;
            while (at < q->n && q->docs[at] < d)
                at++;
            if (at < q->n && q->docs[at] == d) {
                float x = ts_score(e, q->tfs[at], e->dl[d]);
                a->part[c * n + e->ord] = x;
                s += x;
                r->st->postings++;
            }
            if (keep != c)
                cand_copy(a, c, a, keep, n);
            a->sum[keep++] = s;
        }
        e->cur.i = at;
        nc = keep;
    }
    if (nc < merged)
        r->exact = 0;
    /* One short of theta whatever the order of its sum (run_push adds the parts in clause
     * order) cannot enter: it is not pushed, and the count of matches is no longer exact. */
    for (size_t c = 0; c < nc; c++)
        if (a->sum[c] * UB_SLACK < r->theta)
            r->exact = 0;
        else
            run_push(r, a->doc[c], a->part + c * n);
}

/* Postings first: windows of doc ids, each cursor leapfrogging the filter (when there is one,
 * and it holds more docs than the lists). */
static void run_windows(run_t *r, const roaring_bitmap_t *filter)
{
    term_scorer_t *ts = r->ts;
    size_t n = r->n;
    window_t *w = &r->w;
    roaring_uint32_iterator_t it;
    if (filter)
        roaring_init_iterator(filter, &it);
    for (int done = 0; !done;) {
        uint32_t lo = INVIDX_END, hi = INVIDX_END;
        for (size_t i = 0; i < n; i++) {
            uint32_t x = invidx_cur_doc(&ts[i].cur);
            lo = x < lo ? x : lo;
        }
        if (lo == INVIDX_END)
            break;
        if (filter) {
            uint32_t a = bm25_filter_next(&it, lo);
            if (a == INVIDX_END)
                break;
            if (a != lo) { /* leapfrog: every cursor jumps to the next allowed doc */
                for (size_t i = 0; i < n; i++)
                    invidx_cur_seek(&ts[i].cur, a);
                continue;
            }
        }
        for (size_t i = 0; i < n; i++)
            if (invidx_cur_doc(&ts[i].cur) != INVIDX_END) {
                uint32_t e = block_last(&ts[i].cur);
                hi = e < hi ? e : hi;
            }
        window_plan(ts, n, hi, w);
        w->ne = 0;
        while (w->ne < n && w->cum[w->ne] <= r->theta)
            w->ne++;
        if (w->ne)
            r->exact = 0;
        if (n <= BATCH_TERMS)
            window_batch(r, hi, filter);
        else
            while (w->ne < n) { /* the window's candidates, from its essential cursors */
                uint32_t d = INVIDX_END;
                for (size_t j = w->ne; j < n; j++) {
                    uint32_t x = invidx_cur_doc(&ts[w->ord[j].idx].cur);
                    d = x < d ? x : d;
                }
                if (d > hi)
                    break;
                if (filter) {
                    uint32_t a = bm25_filter_next(&it, d);
                    if (a == INVIDX_END) {
                        done = 1;
                        break;
                    }
                    if (a != d) {
                        for (size_t j = w->ne; j < n; j++)
                            invidx_cur_seek(&ts[w->ord[j].idx].cur, a);
                        continue;
                    }
                }
                run_offer(r, d);
            }
        if (hi == INVIDX_END)
            break;
        for (size_t i = 0; i < n; i++) /* on past the window */
            invidx_cur_seek(&ts[i].cur, hi + 1);
    }
}

/* The filter first, for a filter smaller than the lists: each allowed doc is looked up in the
 * essential lists (by whole-list bounds), and scored when one holds it. */
static void run_filter(run_t *r, const roaring_bitmap_t *filter)
{
    term_scorer_t *ts = r->ts;
    size_t n = r->n;
    window_t *w = &r->w;
    uint32_t buf[256], got;
    roaring_uint32_iterator_t it;
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        for (; j > 0 && w->ord[j - 1].bound > ts[i].ub; j--)
            w->ord[j] = w->ord[j - 1];
        w->ord[j] = (wterm_t){ts[i].ub, (uint32_t)i};
    }
    for (size_t j = 0; j < n; j++)
        w->cum[j] = (j ? w->cum[j - 1] : 0) + w->ord[j].bound;
    w->ne = 0;
    roaring_init_iterator(filter, &it);
    while (w->ne < n && (got = roaring_read_uint32_iterator(&it, buf, 256)) > 0)
        for (uint32_t b = 0; b < got && w->ne < n; b++) {
            uint32_t d = buf[b];
            int on = 0, left = 0;
            for (size_t j = w->ne; j < n; j++) {
                uint32_t x = invidx_cur_seek(&ts[w->ord[j].idx].cur, d);
                on |= x == d;
                left |= x != INVIDX_END;
            }
            if (!left)
                return;
            if (on)
                run_offer(r, d);
        }
}

int bm25_topk_or(const bm25_clause_t *cl, size_t n, const roaring_bitmap_t *filter, size_t k,
                 int prune, bm25_hit_t *hits, size_t *n_hits, uint64_t *matched, int *matched_exact,
                 bm25_stats_t *st)
{
    size_t m = n ? n : 1;
    run_t r = {.n = n, .theta = -INFINITY, .prune = prune && k > 0, .exact = 1, .st = st};
    /* k = 0 is a count: every match must be seen (prune off) */
    *n_hits = 0;
    r.ts = cdn_malloc(m * sizeof *r.ts);
    r.part = cdn_malloc(m * 2 * sizeof *r.part);
    r.w.ord = cdn_malloc(m * sizeof *r.w.ord);
    size_t cc = INVIDX_BLOCK * m; /* candidates a window can have: n blocks' postings */
    cands_t cand[2];
    void *cmem = m <= BATCH_TERMS ? cdn_malloc(2 * cc * (2 + m) * sizeof(float)) : NULL;
    if (!r.ts || !r.part || !r.w.ord || (m <= BATCH_TERMS && !cmem) || topk_init(&r.top, k)) {
        cdn_free(r.ts);
        cdn_free(r.part);
        cdn_free(r.w.ord);
        cdn_free(cmem);
        return CDN_ERR_NOMEM;
    }
    for (int h = 0; cmem && h < 2; h++) {
        float *base = (float *)cmem + (size_t)h * cc * (2 + m);
        cand[h] = (cands_t){(uint32_t *)base, base + cc, base + 2 * cc};
    }
    r.cand = cmem ? cand : NULL;
    r.w.cum = r.part + m;
    uint64_t postings = 0;
    for (size_t i = 0; i < n; i++) {
        ts_init(&r.ts[i], &cl[i], (uint32_t)i);
        postings += r.ts[i].cur.pl->n;
    }
    if (filter && roaring_bitmap_get_cardinality(filter) * FILTER_FIRST < postings)
        run_filter(&r, filter);
    else
        run_windows(&r, filter);
    top_out(&r.top, hits, n_hits);
    topk_free(&r.top);
    cdn_free(r.ts);
    cdn_free(r.part);
    cdn_free(r.w.ord);
    cdn_free(cmem);
    *matched = r.matched;
    *matched_exact = r.exact;
    return CDN_OK;
}

/* bm25_count_or when a list has a bitmap. The union holds at least the largest list: when one
 * list (in the filter) reaches cap, that is the answer; else the union of the bitmaps and of
 * the shorter lists' docs, counted in the filter, exactly. Either costs a few container
 * operations where a walk would step through every matching doc up to the cap. Dead postings
 * need no care: without a filter there are none, and a filter holds live docs only. */
static int count_by_bitmaps(const bm25_clause_t *cl, size_t n, const roaring_bitmap_t *filter,
                            uint64_t cap, uint64_t *count, int *exact)
{
    for (size_t i = 0; i < n; i++) {
        const invidx_plist_t *p = &cl[i].ix->pl[cl[i].tid];
        uint64_t in = !p->rb ? 0 : filter ? roaring_bitmap_and_cardinality(p->rb, filter) : p->df;
        if (in >= cap) {
            *count = cap;
            *exact = 0;
            return CDN_OK;
        }
    }
    roaring_bitmap_t *u = roaring_bitmap_create();
    if (!u)
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const invidx_plist_t *p = &cl[i].ix->pl[cl[i].tid];
        if (p->rb)
            roaring_bitmap_or_inplace(u, p->rb);
        else
            roaring_bitmap_add_many(u, p->n, p->docs);
    }
    *count = filter ? roaring_bitmap_and_cardinality(u, filter) : roaring_bitmap_get_cardinality(u);
    roaring_bitmap_free(u);
    return CDN_OK;
}

int bm25_count_or(const bm25_clause_t *cl, size_t n, const roaring_bitmap_t *filter, uint64_t cap,
                  uint64_t *count, int *exact)
{
    invidx_cursor_t *cur;
    roaring_uint32_iterator_t it;
    uint64_t c = 0;
    *count = 0;
    *exact = 1;
    for (size_t i = 0; i < n; i++)
        if (cl[i].ix->pl[cl[i].tid].rb)
            return count_by_bitmaps(cl, n, filter, cap, count, exact);
    if (!(cur = cdn_malloc((n ? n : 1) * sizeof *cur)))
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        cur[i] = (invidx_cursor_t){&cl[i].ix->pl[cl[i].tid], 0};
    if (filter)
        roaring_init_iterator(filter, &it);
    for (;;) {
        uint32_t d = INVIDX_END;
        for (size_t i = 0; i < n; i++) {
            uint32_t x = invidx_cur_doc(&cur[i]);
            d = x < d ? x : d;
        }
        if (d == INVIDX_END)
            break;
        if (filter) {
            uint32_t a = bm25_filter_next(&it, d);
            if (a == INVIDX_END)
                break;
            if (a != d) {
                for (size_t i = 0; i < n; i++)
                    invidx_cur_seek(&cur[i], a);
                continue;
            }
        }
        if (c == cap) {
            *exact = 0;
            break;
        }
        c++;
        for (size_t i = 0; i < n; i++)
            if (invidx_cur_doc(&cur[i]) == d)
                cur[i].i++;
    }
    cdn_free(cur);
    *count = c;
    return CDN_OK;
}

int bm25_docset_push(bm25_docset_t *s, uint32_t doc, float score)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        uint32_t *d = cdn_realloc(s->docs, cap * sizeof *d);
        if (!d)
            return CDN_ERR_NOMEM;
        s->docs = d;
        float *f = cdn_realloc(s->scores, cap * sizeof *f);
        if (!f)
            return CDN_ERR_NOMEM;
        s->scores = f;
        s->cap = cap;
    }
    s->docs[s->n] = doc;
    s->scores[s->n++] = score;
    return CDN_OK;
}

void bm25_docset_free(bm25_docset_t *s)
{
    cdn_free(s->docs);
    cdn_free(s->scores);
    memset(s, 0, sizeof *s);
}

int bm25_clause_docset(const bm25_clause_t *c, const roaring_bitmap_t *filter, bm25_docset_t *out,
                       bm25_stats_t *st)
{
    term_scorer_t t;
    ts_init(&t, c, 0);
    roaring_uint32_iterator_t it;
    if (filter)
        roaring_init_iterator(filter, &it);
    for (uint32_t d = invidx_cur_doc(&t.cur); d != INVIDX_END;) {
        if (filter) {
            uint32_t a = bm25_filter_next(&it, d);
            if (a == INVIDX_END)
                break;
            if (a != d) {
                d = invidx_cur_seek(&t.cur, a);
                continue;
            }
        }
        st->postings++;
        if (!filter && t.cur.i + BM25_DL_AHEAD < t.cur.pl->n) /* as in window_batch */
            __builtin_prefetch(&t.dl[t.cur.pl->docs[t.cur.i + BM25_DL_AHEAD]]);
        if (bm25_docset_push(out, d, ts_score(&t, t.cur.pl->tfs[t.cur.i], t.dl[d])))
            return CDN_ERR_NOMEM;
        t.cur.i++;
        d = invidx_cur_doc(&t.cur);
    }
    return CDN_OK;
}

int bm25_docset_topk(const bm25_docset_t *s, size_t k, bm25_hit_t *hits, size_t *n_hits)
{
    topk_t top;
    *n_hits = 0;
    if (topk_init(&top, k))
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < s->n; i++)
        topk_push(&top, s->docs[i], -s->scores[i]);
    top_out(&top, hits, n_hits);
    topk_free(&top);
    return CDN_OK;
}
