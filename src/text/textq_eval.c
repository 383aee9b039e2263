/* textq_eval.c: executes a query tree over a textidx: a MaxScore fast path for disjunctions of
 * terms (match / multi_match most_fields / term(s), alone or under bool filters), and a general
 * evaluator of sorted scored doc sets for everything else. Relies on bm25, invidx, fieldidx.
 * Every posting walk leapfrogs the filter (allowed ∧ live ∧ metadata), so cost follows it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "text/textidx.h"

typedef struct ectx {
    const textidx_t *ti;
    bm25_stats_t st;
    cdn_err_t *err;
    /* BM25 statistics per text field, made on first use over stats_over (NULL: the fields'
     * own) or found in the field's cache; fs[i] or shared[i] belongs to ti->tf[i] once
     * fs_ready[i]. */
    const roaring_bitmap_t *stats_over;
    fstats_t *fs;            /* the fields' own (stats_over NULL) */
    const fstats_t **shared; /* from the fields' caches (stats_over set), released at the end */
    unsigned char *fs_ready;
} ectx_t;

typedef struct clauses {
    bm25_clause_t *c;
    size_t n, cap;
    size_t nterms; /* query terms, found or not */
} clauses_t;

static int eval_scored(ectx_t *x, const textq_t *q, const roaring_bitmap_t *filter,
                       bm25_docset_t *out);
static int eval_bitmap(ectx_t *x, const textq_t *q, roaring_bitmap_t *out);

/* Analyzes query text with the field's analyzer. The analyzer's only mutable part (the
 * stemmer) is guarded by its own mutex, hence the cast. */
static int analyze(const textidx_tfield_t *f, const char *text, analyzer_tokens_t *toks)
{
    analyzer_tokens_reset(toks);
    return analyzer_run((analyzer_t *)&f->an, text, strlen(text), toks);
}

/* The statistics scoring uses for field f. 0 or CDN_ERR_NOMEM. */
static int field_stats(ectx_t *x, const textidx_tfield_t *f, const fstats_t **out)
{
    size_t i = (size_t)(f - x->ti->tf);
    int rc = CDN_OK;
    if (!x->fs_ready[i])
        rc = x->stats_over ? fscache_get(f->stats, &f->ix, x->stats_over, &x->shared[i])
                           : fstats_init(&x->fs[i], &f->ix, NULL);
    if (rc == CDN_OK)
        x->fs_ready[i] = 1;
    *out = x->stats_over ? x->shared[i] : &x->fs[i];
    return rc;
}

static int add_clause(clauses_t *cl, const bm25_clause_t *c)
{
    if (cdn_grow((void **)&cl->c, &cl->cap, cl->n + 1, sizeof *cl->c))
        return CDN_ERR_NOMEM;
    cl->c[cl->n++] = *c;
    return CDN_OK;
}

/* Clauses for every analyzed term of text in field f (missing terms only counted). */
static int text_clauses(ectx_t *x, const textidx_tfield_t *f, const char *text, float boost,
                        clauses_t *cl)
{
    analyzer_tokens_t toks = {0};
    const fstats_t *fs;
    int rc = field_stats(x, f, &fs);
    if (!rc)
        rc = analyze(f, text, &toks);
    for (size_t i = 0; i < toks.n && !rc; i++) {
        bm25_clause_t c;
        cl->nterms++;
        if (bm25_clause_make(fs, toks.pool + toks.tok[i].off, toks.tok[i].len, boost, x->ti->cfg.k1,
                             x->ti->cfg.b, &c) == CDN_OK)
            rc = add_clause(cl, &c);
    }
    analyzer_tokens_free(&toks);
    return rc;
}

/* If q is a pure disjunction of BM25 term clauses, fills cl and returns 1. */
static int collect_or(ectx_t *x, const textq_t *q, clauses_t *cl, int *rc)
{
    const textidx_tfield_t *f = q->field ? textidx_text_field(x->ti, q->field) : NULL;
    *rc = CDN_OK;
    switch (q->type) {
    case TEXTQ_MATCH:
        if (!f || q->op_and ||
            (q->msm.set && !(q->msm.value <= 1 && !q->msm.percent && q->msm.value >= 0)))
            return 0;
        *rc = text_clauses(x, f, q->text, q->boost, cl);
        return 1;
    case TEXTQ_MULTI_MATCH:
        if (q->op_and || q->msm.set || (q->mm_type == TEXTQ_MM_BEST_FIELDS && q->nfields > 1))
            return 0;
        for (size_t i = 0; i < q->nfields && !*rc; i++) {
            const textidx_tfield_t *g = textidx_text_field(x->ti, q->fields[i].name);
            if (g)
                *rc = text_clauses(x, g, q->text, q->boost * q->fields[i].boost, cl);
        }
        return 1;
    case TEXTQ_TERM:
    case TEXTQ_TERMS: {
        const fstats_t *fs;
        if (!f)
            return 0;
        *rc = field_stats(x, f, &fs);
        for (size_t i = 0; i < (q->type == TEXTQ_TERM ? 1 : q->nvalues) && !*rc; i++) {
            const char *v = q->type == TEXTQ_TERM ? q->text : q->values[i];
            bm25_clause_t c;
            if (bm25_clause_make(fs, v, strlen(v), q->boost, x->ti->cfg.k1, x->ti->cfg.b, &c) ==
                CDN_OK)
                *rc = add_clause(cl, &c);
        }
        return 1;
    }
    default: return 0;
    }
}

/* ---- doc set algebra ---- */

static int ds_from_bitmap(const roaring_bitmap_t *b, float score, bm25_docset_t *out)
{
    roaring_uint32_iterator_t it;
    for (roaring_init_iterator(b, &it); it.has_value; roaring_advance_uint32_iterator(&it))
        if (bm25_docset_push(out, it.current_value, score))
            return CDN_ERR_NOMEM;
    return CDN_OK;
}

static void ds_free_all(bm25_docset_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        bm25_docset_free(&s[i]);
    cdn_free(s);
}

/* Union of n sets keeping docs present in >= min_count of them; scores summed (or, when
 * use_max, the max plus tie times the others, as dis_max), times boost. */
static int ds_merge_tie(bm25_docset_t *in, size_t n, size_t min_count, int use_max, float tie,
                        float boost, bm25_docset_t *out)
{
    size_t *p = cdn_calloc(n ? n : 1, sizeof *p);
    if (!p)
        return CDN_ERR_NOMEM;
    int rc = CDN_OK;
    for (;;) {
        uint32_t d = INVIDX_END;
        for (size_t i = 0; i < n; i++)
            if (p[i] < in[i].n && in[i].docs[p[i]] < d)
                d = in[i].docs[p[i]];
        if (d == INVIDX_END)
            break;
        size_t cnt = 0;
        float s = 0, m = 0;
        for (size_t i = 0; i < n; i++)
            if (p[i] < in[i].n && in[i].docs[p[i]] == d) {
                float v = in[i].scores[p[i]++];
                m = cnt ? fmaxf(m, v) : v;
                s += v;
                cnt++;
            }
        if (use_max)
            s = m + tie * (s - m);
        if (cnt >= min_count && (rc = bm25_docset_push(out, d, s * boost)))
            break;
    }
    cdn_free(p);
    return rc;
}

static int ds_merge(bm25_docset_t *in, size_t n, size_t min_count, int use_max, float boost,
                    bm25_docset_t *out)
{
    return ds_merge_tie(in, n, min_count, use_max, 0.0f, boost, out);
}

/* Scored sets of every child, each restricted to filter. */
static int eval_children(ectx_t *x, const textq_list_t *l, const roaring_bitmap_t *filter,
                         bm25_docset_t **out)
{
    *out = cdn_calloc(l->n ? l->n : 1, sizeof **out);
    if (!*out)
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < l->n; i++) {
        int rc = eval_scored(x, l->q[i], filter, &(*out)[i]);
        if (rc)
            return rc;
    }
    return CDN_OK;
}

static int clauses_docsets(ectx_t *x, const clauses_t *cl, const roaring_bitmap_t *filter,
                           bm25_docset_t **out)
{
    *out = cdn_calloc(cl->n ? cl->n : 1, sizeof **out);
    if (!*out)
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < cl->n; i++)
        if (bm25_clause_docset(&cl->c[i], filter, &(*out)[i], &x->st))
            return CDN_ERR_NOMEM;
    return CDN_OK;
}

/* match / multi_match in the general evaluator (operator and, minimum_should_match,
 * best_fields). */
static int eval_match(ectx_t *x, const textq_t *q, const textidx_tfield_t *f, float boost,
                      const roaring_bitmap_t *filter, bm25_docset_t *out)
{
    clauses_t cl = {0};
    bm25_docset_t *sets = NULL;
    int rc = text_clauses(x, f, q->text, 1.0f, &cl);
    if (!rc)
        rc = clauses_docsets(x, &cl, filter, &sets);
    size_t need = q->op_and ? cl.nterms : textq_msm_required(&q->msm, cl.nterms);
    if (!rc && cl.nterms && need <= cl.n)
        rc = ds_merge(sets, cl.n, need ? need : 1, 0, boost, out);
    if (sets)
        ds_free_all(sets, cl.n);
    cdn_free(cl.c);
    return rc;
}

static int eval_multi_match(ectx_t *x, const textq_t *q, const roaring_bitmap_t *filter,
                            bm25_docset_t *out)
{
    bm25_docset_t *sets = cdn_calloc(q->nfields ? q->nfields : 1, sizeof *sets);
    if (!sets)
        return CDN_ERR_NOMEM;
    int rc = CDN_OK;
    for (size_t i = 0; i < q->nfields && !rc; i++) {
        const textidx_tfield_t *g = textidx_text_field(x->ti, q->fields[i].name);
        if (g)
            rc = eval_match(x, q, g, q->fields[i].boost, filter, &sets[i]);
    }
    if (!rc)
        rc = ds_merge_tie(sets, q->nfields, 1, q->mm_type == TEXTQ_MM_BEST_FIELDS, q->tie_breaker,
                          q->boost, out);
    ds_free_all(sets, q->nfields);
    return rc;
}

/* Phrase frequency at the current doc: term i's positions minus its query position are
 * aligned; a match is a choice of one per term spanning <= slop. Exact matches count 1, sloppy
 * ones 1 / (1 + span) as Lucene's sloppy frequency. */
static float phrase_freq(invidx_cursor_t *cur, const uint32_t *qpos, size_t n, uint32_t slop)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += cur[i].pl->tfs[cur[i].i];
    uint32_t *buf = cdn_malloc(total * sizeof *buf);
    size_t *start = cdn_malloc((n + 1) * sizeof *start), *p = cdn_malloc(n * sizeof *p);
    float freq = 0;
    if (!buf || !start || !p)
        goto out;
    start[0] = 0;
    for (size_t i = 0; i < n; i++) {
        invidx_cur_positions(&cur[i], buf + start[i]);
        start[i + 1] = start[i] + cur[i].pl->tfs[cur[i].i];
        p[i] = start[i];
    }
    for (;;) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        size_t lo_i = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t o = (int64_t)buf[p[i]] - qpos[i];
            if (o < lo) {
                lo = o;
                lo_i = i;
            }
            hi = o > hi ? o : hi;
        }
        if (hi - lo <= (int64_t)slop)
            freq += 1.0f / (1.0f + (float)(hi - lo));
        if (++p[lo_i] == start[lo_i + 1])
            break;
    }
out:
    cdn_free(buf);
    cdn_free(start);
    cdn_free(p);
    return freq;
}

static int eval_phrase(ectx_t *x, const textq_t *q, const textidx_tfield_t *f,
                       const roaring_bitmap_t *filter, bm25_docset_t *out)
{
    analyzer_tokens_t toks = {0};
    const fstats_t *fs;
    int rc = field_stats(x, f, &fs);
    if (!rc)
        rc = analyze(f, q->text, &toks);
    size_t n = toks.n;
    invidx_cursor_t *cur = cdn_calloc(n ? n : 1, sizeof *cur);
    uint32_t *qpos = cdn_calloc(n ? n : 1, sizeof *qpos);
    double idf = 0;
    if (rc || !cur || !qpos || !n)
        goto out;
    for (size_t i = 0; i < n; i++) {
        uint32_t tid;
        uint64_t df;
        if (invidx_lookup(&f->ix, toks.pool + toks.tok[i].off, toks.tok[i].len, &tid) ||
            !(df = fstats_df(fs, tid)))
            goto out; /* a missing term: no doc can match */
        cur[i] = (invidx_cursor_t){&f->ix.pl[tid], 0};
        qpos[i] = toks.tok[i].pos - toks.tok[0].pos;
        idf += bm25_idf(fs->n_docs, df);
    }
    float w = (float)idf * q->boost, k1 = x->ti->cfg.k1, b = x->ti->cfg.b;
    float avgdl = (float)fs->avgdl;
    roaring_uint32_iterator_t it;
    if (filter)
        roaring_init_iterator(filter, &it);
    uint32_t d = invidx_cur_doc(&cur[0]);
    while (d != INVIDX_END) { /* leapfrog all cursors and the filter to a common doc */
        uint32_t m = d;
        if (filter && (m = bm25_filter_next(&it, d)) == INVIDX_END)
            break;
        for (size_t i = 0; i < n && m != INVIDX_END; i++) {
            uint32_t c = invidx_cur_seek(&cur[i], m);
            x->st.postings++;
            m = c > m ? c : m;
        }
        if (m == INVIDX_END)
            break;
        if (m != d) {
            d = m;
            continue;
        }
        float fr = phrase_freq(cur, qpos, n, q->slop);
        if (fr > 0) {
            float dl = (float)f->ix.dl[d];
            if ((rc = bm25_docset_push(out, d, w * fr / (fr + k1 * (1 - b + b * dl / avgdl)))))
                break;
        }
        d = d + 1;
    }
out:
    analyzer_tokens_free(&toks);
    cdn_free(cur);
    cdn_free(qpos);
    return rc;
}

/* Levenshtein distance between a and b if <= max, else max + 1 (one row of DP, early exit). */
static uint32_t lev_bounded(const char *a, size_t la, const char *b, size_t lb, uint32_t max)
{
    if ((la > lb ? la - lb : lb - la) > max || lb > 255)
        return max + 1;
    uint32_t row[256];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (uint32_t)j;
    for (size_t i = 1; i <= la; i++) {
        uint32_t diag = row[0], best = (uint32_t)i;
        row[0] = (uint32_t)i;
        for (size_t j = 1; j <= lb; j++) {
            uint32_t up = row[j];
            uint32_t v = diag + (a[i - 1] != b[j - 1]);
            v = up + 1 < v ? up + 1 : v;
            v = row[j - 1] + 1 < v ? row[j - 1] + 1 : v;
            row[j] = v;
            diag = up;
            best = v < best ? v : best;
        }
        if (best > max)
            return max + 1;
    }
    return row[lb];
}

typedef struct fz {
    uint32_t tid, dist, df;
} fz_t;

static int cmp_fz(const void *a, const void *b)
{
    const fz_t *x = a, *y = b;
    if (x->dist != y->dist)
        return x->dist < y->dist ? -1 : 1;
    if (x->df != y->df)
        return x->df > y->df ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* fuzzy on a text field: dictionary terms within the edit budget (AUTO: 0 for 1-2 bytes, 1 for
 * 3-5, 2 beyond), the max_expansions nearest (then most frequent); a doc scores its best
 * expansion's BM25. */
static int eval_fuzzy(ectx_t *x, const textq_t *q, const textidx_tfield_t *f,
                      const roaring_bitmap_t *filter, bm25_docset_t *out)
{
    size_t vl = strlen(q->text), n = 0, cap = 0;
    uint32_t max = q->fuzziness >= 0 ? (uint32_t)q->fuzziness : vl <= 2 ? 0 : vl <= 5 ? 1 : 2;
    fz_t *c = NULL;
    const fstats_t *fs;
    int rc = field_stats(x, f, &fs);
    for (uint32_t t = 0; t < f->ix.nterms && !rc; t++) {
        size_t tl;
        const char *ts = invidx_term(&f->ix, t, &tl);
        if (!f->ix.pl[t].df || tl < q->prefix_length ||
            (q->prefix_length && (vl < q->prefix_length || memcmp(ts, q->text, q->prefix_length))))
            continue;
        uint32_t dd = lev_bounded(q->text, vl, ts, tl, max);
        /* Expansions are chosen and ordered by the df the statistics cover, so a term only
         * hidden documents hold takes no expansion slot. */
        uint64_t df = dd > max ? 0 : fstats_df(fs, t);
        if (!df)
            continue;
        if (cdn_grow((void **)&c, &cap, n + 1, sizeof *c))
            rc = CDN_ERR_NOMEM;
        else
            c[n++] = (fz_t){t, dd, (uint32_t)df};
    }
    if (n)
        qsort(c, n, sizeof *c, cmp_fz);
    if (q->max_expansions && n > q->max_expansions)
        n = q->max_expansions;
    clauses_t cl = {0};
    for (size_t i = 0; i < n && !rc; i++) {
        size_t tl;
        const char *ts = invidx_term(&f->ix, c[i].tid, &tl);
        bm25_clause_t one;
        if (bm25_clause_make(fs, ts, tl, q->boost, x->ti->cfg.k1, x->ti->cfg.b, &one) == 0)
            rc = add_clause(&cl, &one);
    }
    bm25_docset_t *sets = NULL;
    if (!rc)
        rc = clauses_docsets(x, &cl, filter, &sets);
    if (!rc)
        rc = ds_merge(sets, cl.n, 1, 1, 1.0f, out);
    if (sets)
        ds_free_all(sets, cl.n);
    cdn_free(cl.c);
    cdn_free(c);
    return rc;
}

static int parse_bound(const fieldidx_field_t *f, const char *s, const char *which, double *out,
                       cdn_err_t *err)
{
    if (f->kind == FIELDIDX_DATE) {
        if (fieldidx_parse_date(s, strlen(s), out))
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "range.%s.%s: '%s' is not a date; use ISO-8601 such as "
                               "2024-05-01T10:00:00Z or epoch milliseconds",
                               f->name, which, s);
        return CDN_OK;
    }
    char *end;
    *out = strtod(s, &end);
    if (end == s || *end || isnan(*out))
        return cdn_err_set(err, CDN_ERR_INVALID, "range.%s.%s: '%s' is not a number", f->name,
                           which, s);
    return CDN_OK;
}

static int text_term_bitmap(const textidx_tfield_t *f, const char *v, size_t len,
                            roaring_bitmap_t *out)
{
    uint32_t tid;
    if (invidx_lookup(&f->ix, v, len, &tid) == CDN_OK)
        roaring_bitmap_add_many(out, f->ix.pl[tid].n, f->ix.pl[tid].docs);
    return CDN_OK;
}

/* Leaves evaluated as doc sets without BM25: metadata terms, ranges, exists, ids, prefix,
 * match_all. Unmapped fields match nothing, as in Elasticsearch. */
static int eval_leaf_bitmap(ectx_t *x, const textq_t *q, roaring_bitmap_t *out)
{
    const textidx_t *ti = x->ti;
    size_t fno;
    int meta = q->field && fieldidx_find(&ti->fi, q->field, &fno) == CDN_OK;
    const textidx_tfield_t *tf = q->field ? textidx_text_field(ti, q->field) : NULL;
    switch (q->type) {
    case TEXTQ_MATCH_ALL: roaring_bitmap_or_inplace(out, ti->live); return CDN_OK;
    case TEXTQ_IDS: roaring_bitmap_add_many(out, q->nids, q->ids); return CDN_OK;
    case TEXTQ_MATCH: /* on a keyword field: the whole text as one term */
    case TEXTQ_TERM:
        if (meta && fieldidx_term(&ti->fi, fno, q->text, strlen(q->text), out))
            return cdn_err_set(x->err, CDN_ERR_INVALID, "term.%s: '%s' does not fit the field",
                               q->field, q->text);
        if (tf)
            return text_term_bitmap(tf, q->text, strlen(q->text), out);
        return CDN_OK;
    case TEXTQ_TERMS:
        for (size_t i = 0; i < q->nvalues; i++) {
            size_t l = strlen(q->values[i]);
            if (meta && fieldidx_term(&ti->fi, fno, q->values[i], l, out))
                return cdn_err_set(x->err, CDN_ERR_INVALID, "terms.%s: '%s' does not fit the field",
                                   q->field, q->values[i]);
            if (tf)
                text_term_bitmap(tf, q->values[i], l, out);
        }
        return CDN_OK;
    case TEXTQ_EXISTS:
        if (meta)
            fieldidx_exists(&ti->fi, fno, out);
        if (tf)
            roaring_bitmap_or_inplace(out, tf->ix.live);
        return CDN_OK;
    case TEXTQ_PREFIX: {
        size_t pl = strlen(q->text);
        if (meta && fieldidx_prefix(&ti->fi, fno, q->text, pl, out))
            return cdn_err_set(x->err, CDN_ERR_INVALID,
                               "prefix.%s: prefix queries need a keyword or text field", q->field);
        for (uint32_t t = 0; tf && t < tf->ix.nterms; t++) {
            size_t tl;
            const char *ts = invidx_term(&tf->ix, t, &tl);
            if (tl >= pl && !memcmp(ts, q->text, pl)) {
                x->st.postings += tf->ix.pl[t].n;
                roaring_bitmap_add_many(out, tf->ix.pl[t].n, tf->ix.pl[t].docs);
            }
        }
        return CDN_OK;
    }
    case TEXTQ_RANGE: {
        if (!meta)
            return tf ? cdn_err_set(x->err, CDN_ERR_INVALID,
                                    "range.%s: ranges need a numeric, date or keyword field",
                                    q->field)
                      : CDN_OK;
        const fieldidx_field_t *f = &ti->fi.f[fno];
        if (f->kind == FIELDIDX_KEYWORD)
            return fieldidx_keyword_range(&ti->fi, fno, q->lo, q->lo_incl || !q->lo, q->hi,
                                          q->hi_incl || !q->hi, out);
        if (f->kind == FIELDIDX_BOOL)
            return cdn_err_set(x->err, CDN_ERR_INVALID,
                               "range.%s: the field is a boolean; ranges need a number, a date or "
                               "a keyword",
                               q->field);
        double lo = -INFINITY, hi = INFINITY;
        if ((q->lo && parse_bound(f, q->lo, q->lo_incl ? "gte" : "gt", &lo, x->err)) ||
            (q->hi && parse_bound(f, q->hi, q->hi_incl ? "lte" : "lt", &hi, x->err)))
            return CDN_ERR_INVALID;
        return fieldidx_range(&ti->fi, fno, lo, q->lo_incl || !q->lo, hi, q->hi_incl || !q->hi,
                              out);
    }
    default: return cdn_err_set(x->err, CDN_ERR_INTERNAL, "query type %d is not a leaf", q->type);
    }
}

/* Scores of must and should over a required base set B (docs of must, or of the filter). */
static int ds_bool_combine(const bm25_docset_t *base, bm25_docset_t *sh, size_t nsh, size_t req,
                           float boost, bm25_docset_t *out)
{
    size_t *p = cdn_calloc(nsh ? nsh : 1, sizeof *p);
    if (!p)
        return CDN_ERR_NOMEM;
    int rc = CDN_OK;
    for (size_t i = 0; i < base->n && !rc; i++) {
        uint32_t d = base->docs[i];
        float s = base->scores[i];
        size_t cnt = 0;
        for (size_t j = 0; j < nsh; j++) {
            while (p[j] < sh[j].n && sh[j].docs[p[j]] < d)
                p[j]++;
            if (p[j] < sh[j].n && sh[j].docs[p[j]] == d) {
                s += sh[j].scores[p[j]];
                cnt++;
            }
        }
        if (cnt >= req)
            rc = bm25_docset_push(out, d, s * boost);
    }
    cdn_free(p);
    return rc;
}

/* The filter a bool's scoring clauses run under: outer filter (or all live docs) ∧ filter
 * clauses \ must_not clauses. Caller frees *out. */
static int bool_filter(ectx_t *x, const textq_t *q, const roaring_bitmap_t *filter,
                       roaring_bitmap_t **out)
{
    roaring_bitmap_t *f = roaring_bitmap_copy(filter ? filter : x->ti->live);
    int rc = f ? CDN_OK : CDN_ERR_NOMEM;
    for (size_t i = 0; i < q->filter.n + q->must_not.n && !rc; i++) {
        int neg = i >= q->filter.n;
        const textq_t *c = neg ? q->must_not.q[i - q->filter.n] : q->filter.q[i];
        roaring_bitmap_t *b = roaring_bitmap_create();
        rc = b ? eval_bitmap(x, c, b) : CDN_ERR_NOMEM;
        if (!rc && neg)
            roaring_bitmap_andnot_inplace(f, b);
        else if (!rc)
            roaring_bitmap_and_inplace(f, b);
        if (b)
            roaring_bitmap_free(b);
    }
    if (rc && f)
        roaring_bitmap_free(f);
    *out = rc ? NULL : f;
    return rc;
}

static int eval_bool(ectx_t *x, const textq_t *q, const roaring_bitmap_t *filter,
                     bm25_docset_t *out)
{
    roaring_bitmap_t *f;
    bm25_docset_t *must = NULL, *sh = NULL, base = {0};
    int rc = bool_filter(x, q, filter, &f);
    if (!rc)
        rc = eval_children(x, &q->must, f, &must);
    if (!rc)
        rc = eval_children(x, &q->should, f, &sh);
    size_t nm = q->must.n, ns = q->should.n;
    /* Lucene: optional clauses only (no must, no filter) still need one match */
    size_t req = q->msm.set ? textq_msm_required(&q->msm, ns) : 0;
    if (!nm && !q->filter.n && ns && req == 0)
        req = 1;
    if (rc)
        goto out;
    if (nm)
        rc = ds_merge(must, nm, nm, 0, 1.0f, &base);
    else if (req == 0)
        rc = ds_from_bitmap(f, 0.0f, &base);
    if (!rc && (nm || req == 0))
        rc = ds_bool_combine(&base, sh, ns, req, q->boost, out);
    else if (!rc)
        rc = ds_merge(sh, ns, req, 0, q->boost, out);
out:
    if (must)
        ds_free_all(must, nm);
    if (sh)
        ds_free_all(sh, ns);
    bm25_docset_free(&base);
    if (f)
        roaring_bitmap_free(f);
    return rc;
}

static int eval_scored(ectx_t *x, const textq_t *q, const roaring_bitmap_t *filter,
                       bm25_docset_t *out)
{
    const textidx_tfield_t *tf = q->field ? textidx_text_field(x->ti, q->field) : NULL;
    switch (q->type) {
    case TEXTQ_BOOL: return eval_bool(x, q, filter, out);
    case TEXTQ_MULTI_MATCH: return eval_multi_match(x, q, filter, out);
    case TEXTQ_MATCH:
        if (tf)
            return eval_match(x, q, tf, q->boost, filter, out);
        break;
    case TEXTQ_PHRASE: return tf ? eval_phrase(x, q, tf, filter, out) : CDN_OK;
    case TEXTQ_FUZZY: return tf ? eval_fuzzy(x, q, tf, filter, out) : CDN_OK;
    case TEXTQ_TERM:
    case TEXTQ_TERMS:
        if (tf) {
            clauses_t cl = {0};
            bm25_docset_t *sets = NULL;
            int rc;
            collect_or(x, q, &cl, &rc);
            if (!rc)
                rc = clauses_docsets(x, &cl, filter, &sets);
            if (!rc)
                rc = ds_merge(sets, cl.n, 1, 0, 1.0f, out);
            if (sets)
                ds_free_all(sets, cl.n);
            cdn_free(cl.c);
            return rc;
        }
        break;
    default: break;
    }
    roaring_bitmap_t *b = roaring_bitmap_create();
    int rc = b ? eval_leaf_bitmap(x, q, b) : CDN_ERR_NOMEM;
    if (!rc) {
        roaring_bitmap_and_inplace(b, filter ? filter : x->ti->live);
        rc = ds_from_bitmap(b, q->boost, out);
    }
    if (b)
        roaring_bitmap_free(b);
    return rc;
}

/* Filter context: the docs q matches, scores ignored. */
static int eval_bitmap(ectx_t *x, const textq_t *q, roaring_bitmap_t *out)
{
    switch (q->type) {
    case TEXTQ_BOOL:
    case TEXTQ_MULTI_MATCH:
    case TEXTQ_MATCH:
    case TEXTQ_PHRASE:
    case TEXTQ_FUZZY:
    case TEXTQ_TERM:
    case TEXTQ_TERMS: {
        bm25_docset_t s = {0};
        int rc = eval_scored(x, q, NULL, &s);
        if (!rc)
            roaring_bitmap_add_many(out, s.n, s.docs);
        bm25_docset_free(&s);
        return rc;
    }
    default: return eval_leaf_bitmap(x, q, out);
    }
}

/* A bool whose only scoring clause is one disjunction can run under MaxScore with its filter
 * clauses folded into the filter bitmap. Returns that clause or NULL. */
static const textq_t *bool_single_scorer(const textq_t *q)
{
    if (q->type != TEXTQ_BOOL)
        return NULL;
    if (q->must.n == 1 && q->should.n == 0)
        return q->must.q[0];
    if (q->must.n == 0 && q->should.n == 1 &&
        (q->filter.n == 0 || (q->msm.set && textq_msm_required(&q->msm, 1) >= 1)))
        return q->should.q[0];
    return NULL;
}

static int exec_fast(ectx_t *x, const textq_t *q, const roaring_bitmap_t *base,
                     const textidx_search_opts_t *o, textidx_result_t *res, int *done)
{
    const textq_t *scorer = bool_single_scorer(q);
    float boost = scorer ? q->boost : 1.0f;
    clauses_t cl = {0};
    roaring_bitmap_t *f = NULL;
    int rc;
    *done = collect_or(x, scorer ? scorer : q, &cl, &rc);
    if (!*done || rc)
        goto out;
    for (size_t i = 0; i < cl.n; i++)
        cl.c[i].weight *= boost;
    if (scorer && (q->filter.n || q->must_not.n) && (rc = bool_filter(x, q, base, &f)))
        goto out;
    int exact;
    rc = bm25_topk_or(cl.c, cl.n, f ? f : base, o->k, !o->exhaustive, res->hits, &res->n,
                      &res->total, &exact, &x->st);
    if (!rc && !exact && res->total < o->count_min)
        rc = bm25_count_or(cl.c, cl.n, f ? f : base, o->count_min, &res->total, &exact);
    res->total_exact = exact;
    res->plan = o->exhaustive ? "bm25-exhaustive" : "bm25-maxscore";
out:
    if (f)
        roaring_bitmap_free(f);
    cdn_free(cl.c);
    return rc;
}

/* Frees the per-field statistics a context made. */
static void ectx_release(ectx_t *x)
{
    for (size_t i = 0; x->fs_ready && i < x->ti->ntf; i++)
        if (x->fs_ready[i] && x->stats_over)
            fscache_release(x->ti->tf[i].stats, x->shared[i]);
        else if (x->fs_ready[i])
            fstats_free(&x->fs[i]);
    cdn_free(x->fs);
    cdn_free(x->shared);
    cdn_free(x->fs_ready);
}

/* Whether q can be evaluated as sets alone: leaves read as bitmaps (metadata terms, ranges,
 * exists, ids, prefix, match_all; terms on metadata fields), and bools of such whose optional
 * clauses need at most one match. */
static int settable(const textidx_t *ti, const textq_t *q)
{
    switch (q->type) {
    case TEXTQ_MATCH:
    case TEXTQ_MULTI_MATCH:
    case TEXTQ_PHRASE:
    case TEXTQ_FUZZY: return 0;
    case TEXTQ_TERM:
    case TEXTQ_TERMS: return !(q->field && textidx_text_field(ti, q->field));
    case TEXTQ_BOOL: {
        const textq_list_t *l[] = {&q->must, &q->filter, &q->must_not, &q->should};
        for (size_t k = 0; k < 4; k++)
            for (size_t i = 0; i < l[k]->n; i++)
                if (!settable(ti, l[k]->q[i]))
                    return 0;
        return !q->msm.set || textq_msm_required(&q->msm, q->should.n) <= 1;
    }
    default: return 1;
    }
}

/* Narrows in (live docs) to those settable q matches. */
static int set_narrow(ectx_t *x, const textq_t *q, roaring_bitmap_t *in)
{
    int rc = CDN_OK;
    if (q->type != TEXTQ_BOOL) {
        roaring_bitmap_t *b = roaring_bitmap_create();
        if (!b || (rc = eval_leaf_bitmap(x, q, b)) != CDN_OK) {
            if (b)
                roaring_bitmap_free(b);
            return b ? rc : CDN_ERR_NOMEM;
        }
        roaring_bitmap_and_inplace(in, b);
        roaring_bitmap_free(b);
        return CDN_OK;
    }
    for (size_t i = 0; rc == CDN_OK && i < q->must.n; i++)
        rc = set_narrow(x, q->must.q[i], in);
    for (size_t i = 0; rc == CDN_OK && i < q->filter.n; i++)
        rc = set_narrow(x, q->filter.q[i], in);
    for (size_t i = 0; rc == CDN_OK && i < q->must_not.n; i++) {
        roaring_bitmap_t *m = roaring_bitmap_copy(in);
        if (!m || (rc = set_narrow(x, q->must_not.q[i], m)) != CDN_OK) {
            rc = m ? rc : CDN_ERR_NOMEM;
        } else {
            roaring_bitmap_andnot_inplace(in, m);
        }
        if (m)
            roaring_bitmap_free(m);
    }
    /* optional clauses: one must match when nothing else is required (or msm says 1) */
    size_t req = q->msm.set ? textq_msm_required(&q->msm, q->should.n) : 0;
    if (!q->must.n && !q->filter.n && q->should.n && req == 0)
        req = 1;
    if (rc == CDN_OK && req == 1) {
        roaring_bitmap_t *any = roaring_bitmap_create();
        for (size_t i = 0; any && rc == CDN_OK && i < q->should.n; i++) {
            roaring_bitmap_t *m = roaring_bitmap_copy(in);
            if (!m || (rc = set_narrow(x, q->should.q[i], m)) != CDN_OK)
                rc = m ? rc : CDN_ERR_NOMEM;
            else
                roaring_bitmap_or_inplace(any, m);
            if (m)
                roaring_bitmap_free(m);
        }
        if (!any)
            rc = CDN_ERR_NOMEM;
        else if (rc == CDN_OK)
            roaring_bitmap_and_inplace(in, any);
        if (any)
            roaring_bitmap_free(any);
    }
    return rc;
}

int textq_filter(const textidx_t *ti, const textq_t *q, roaring_bitmap_t *inout, cdn_err_t *err)
{
    if (settable(ti, q)) { /* sets only: no docsets, no scores */
        ectx_t sx = {.ti = ti, .err = err};
        roaring_bitmap_and_inplace(inout, ti->live);
        int src = set_narrow(&sx, q, inout);
        return src == CDN_ERR_NOMEM ? cdn_err_set(err, src, "out of memory filtering") : src;
    }
    ectx_t x = {.ti = ti, .err = err};
    bm25_docset_t s = {0};
    roaring_bitmap_t *m = NULL;
    x.fs = cdn_calloc(ti->ntf ? ti->ntf : 1, sizeof *x.fs);
    x.fs_ready = cdn_calloc(ti->ntf ? ti->ntf : 1, 1);
    int rc = x.fs && x.fs_ready ? eval_scored(&x, q, inout, &s) : CDN_ERR_NOMEM;
    if (rc == CDN_OK && !(m = roaring_bitmap_of_ptr(s.n, s.docs)))
        rc = CDN_ERR_NOMEM;
    if (rc == CDN_OK) {
        roaring_bitmap_and_inplace(m, ti->live);
        roaring_bitmap_and_inplace(inout, m);
    }
    if (m)
        roaring_bitmap_free(m);
    bm25_docset_free(&s);
    ectx_release(&x);
    return rc == CDN_ERR_NOMEM ? cdn_err_set(err, rc, "out of memory filtering") : rc;
}

int textq_exec(const textidx_t *ti, const textq_t *q, const roaring_bitmap_t *base,
               const roaring_bitmap_t *stats_over, const textidx_search_opts_t *o,
               textidx_result_t *res, cdn_err_t *err)
{
    size_t k = o->k;
    ectx_t x = {.ti = ti, .err = err, .stats_over = stats_over};
    res->hits = cdn_calloc(k ? k : 1, sizeof *res->hits);
    x.fs = cdn_calloc(ti->ntf ? ti->ntf : 1, sizeof *x.fs);
    x.shared = cdn_calloc(ti->ntf ? ti->ntf : 1, sizeof *x.shared);
    x.fs_ready = cdn_calloc(ti->ntf ? ti->ntf : 1, 1);
    int done = 1, rc = CDN_ERR_NOMEM;
    if (res->hits && x.fs && x.shared && x.fs_ready)
        rc = exec_fast(&x, q, base, o, res, &done);
    if (!rc && !done) {
        bm25_docset_t s = {0};
        rc = eval_scored(&x, q, base, &s);
        if (!rc) {
            rc = bm25_docset_topk(&s, k, res->hits, &res->n);
            res->total = s.n;
            res->total_exact = 1;
            res->plan = "tree";
            x.st.scored += s.n;
        }
        bm25_docset_free(&s);
    }
    ectx_release(&x);
    res->stats = x.st;
    res->complete = rc == CDN_OK;
    return rc;
}
