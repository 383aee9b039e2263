/* bm25.c: BM25 term scoring and MaxScore with block-max skipping over posting cursors
 * leapfrogging a filter bitmap. Relies on invidx cursors, CRoaring and base/topk. */
#include "text/bm25.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/topk.h"

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

static inline float ts_block_ub(const term_scorer_t *t)
{
    uint32_t b = t->cur.i / INVIDX_BLOCK;
    return ts_score(t, t->cur.pl->bmax_tf[b], t->cur.pl->bmin_dl[b]) * UB_SLACK;
}

static void ts_init(term_scorer_t *t, const bm25_clause_t *c, uint32_t ord)
{
    const invidx_plist_t *p = &c->ix->pl[c->tid];
    t->cur = (invidx_cursor_t){p, 0};
    t->dl = c->ix->dl;
    t->w = c->weight;
    t->c1 = c->k1 * (1 - c->b);
    t->c2 = c->k1 * c->b / (c->avgdl > 0 ? c->avgdl : 1);
    t->ub = 0;
    t->ord = ord;
    for (uint32_t b = 0; b * INVIDX_BLOCK < p->n; b++) {
        float s = ts_score(t, p->bmax_tf[b], p->bmin_dl[b]);
        t->ub = s > t->ub ? s : t->ub;
    }
    t->ub *= UB_SLACK;
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

static int cmp_ub(const void *a, const void *b)
{
    float x = ((const term_scorer_t *)a)->ub, y = ((const term_scorer_t *)b)->ub;
    return x < y ? -1 : x > y;
}

/* Scores doc d (already known to be allowed): essential cursors on d first, then the
 * non-essential ones from the largest bound down while the doc can still enter. Returns 1 when
 * fully scored into *score, 0 when skipped. The running sum only prunes; the score is the sum
 * of part[] in clause order, because the visiting order follows upper bounds, which come from
 * every posting (hidden documents' too), and float addition is not associative. */
static int score_doc(term_scorer_t *ts, size_t n, size_t ne, const float *cum, uint32_t d, int full,
                     float theta, float *part, float *score, bm25_stats_t *st)
{
    float s = 0;
    memset(part, 0, n * sizeof *part);
    if (full) { /* block-max check before touching any tf */
        float bound = ne ? cum[ne - 1] : 0;
        for (size_t i = ne; i < n; i++)
            if (invidx_cur_doc(&ts[i].cur) == d)
                bound += ts_block_ub(&ts[i]);
        if (bound <= theta) {
            for (size_t i = ne; i < n; i++)
                if (invidx_cur_doc(&ts[i].cur) == d)
                    ts[i].cur.i++;
            return 0;
        }
    }
    for (size_t i = ne; i < n; i++) {
        if (invidx_cur_doc(&ts[i].cur) != d)
            continue;
        s += part[ts[i].ord] = ts_score(&ts[i], ts[i].cur.pl->tfs[ts[i].cur.i], ts[i].dl[d]);
        ts[i].cur.i++;
        st->postings++;
    }
    for (size_t i = ne; i-- > 0;) {
        if (full && s + cum[i] <= theta)
            return 0;
        if (invidx_cur_seek(&ts[i].cur, d) == d) {
            s += part[ts[i].ord] = ts_score(&ts[i], ts[i].cur.pl->tfs[ts[i].cur.i], ts[i].dl[d]);
            st->postings++;
        }
    }
    s = 0;
    for (size_t i = 0; i < n; i++)
        s += part[i];
    *score = s;
    return 1;
}

int bm25_topk_or(const bm25_clause_t *cl, size_t n, const roaring_bitmap_t *filter, size_t k,
                 int prune, bm25_hit_t *hits, size_t *n_hits, uint64_t *matched, int *matched_exact,
                 bm25_stats_t *st)
{
    *n_hits = 0;
    *matched = 0;
    *matched_exact = 1;
    prune = prune && k > 0; /* k = 0 is a count: every match must be seen */
    term_scorer_t *ts = cdn_malloc((n ? n : 1) * sizeof *ts);
    float *cum = cdn_malloc((n ? n : 1) * 2 * sizeof *cum), *part;
    topk_t top;
    if (!ts || !cum || topk_init(&top, k)) {
        cdn_free(ts);
        cdn_free(cum);
        return CDN_ERR_NOMEM;
    }
    part = cum + (n ? n : 1);
    for (size_t i = 0; i < n; i++)
        ts_init(&ts[i], &cl[i], (uint32_t)i);
    qsort(ts, n, sizeof *ts, cmp_ub);
    for (size_t i = 0; i < n; i++)
        cum[i] = (i ? cum[i - 1] : 0) + ts[i].ub;
    roaring_uint32_iterator_t it;
    if (filter)
        roaring_init_iterator(filter, &it);
    size_t ne = 0;
    float theta = -INFINITY;
    for (;;) {
        uint32_t d = INVIDX_END;
        for (size_t i = ne; i < n; i++) {
            uint32_t x = invidx_cur_doc(&ts[i].cur);
            d = x < d ? x : d;
        }
        if (d == INVIDX_END)
            break;
        if (filter) {
            uint32_t a = bm25_filter_next(&it, d);
            if (a == INVIDX_END)
                break;
            if (a != d) { /* leapfrog: every essential cursor jumps to the next allowed doc */
                for (size_t i = ne; i < n; i++)
                    invidx_cur_seek(&ts[i].cur, a);
                continue;
            }
        }
        float s;
        int full = prune && topk_full(&top);
        if (!score_doc(ts, n, ne, cum, d, full, theta, part, &s, st)) {
            *matched_exact = 0;
            continue;
        }
        (*matched)++;
        st->scored++;
        topk_push(&top, d, -s);
        if (prune && topk_full(&top)) {
            theta = -topk_worst(&top);
            while (ne < n && cum[ne] <= theta)
                ne++;
            if (ne > 0)
                *matched_exact = 0;
        }
    }
    top_out(&top, hits, n_hits);
    topk_free(&top);
    cdn_free(ts);
    cdn_free(cum);
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
