/* bm25.h: BM25 scoring of term clauses over posting lists, exact top-k with MaxScore and
 * block-max pruning, and sorted scored doc sets for the general query evaluator.
 * Relies on invidx.h postings and CRoaring for the filter (allowed ∧ live ∧ metadata). */
#ifndef CDN_BM25_H
#define CDN_BM25_H

#include <roaring/roaring.h>
#include <stddef.h>
#include <stdint.h>

#include "text/fstats.h"
#include "text/invidx.h"

/* One scored term in one field: score = weight * tf / (tf + k1 * (1 - b + b * dl / avgdl)),
 * weight = idf * boost (the Lucene 8+ / Elasticsearch form without the (k1 + 1) factor). */
typedef struct bm25_clause {
    const invidx_t *ix;
    uint32_t tid;
    float weight;
    float k1, b, avgdl;
} bm25_clause_t;

typedef struct bm25_hit {
    uint32_t id;
    float score;
} bm25_hit_t;

typedef struct bm25_stats {
    uint64_t postings; /* postings read (scored or stepped over by a seek landing on them) */
    uint64_t scored;   /* documents fully scored */
} bm25_stats_t;

/* A sorted set of documents with scores (ids strictly increasing). Free with
 * bm25_docset_free. */
typedef struct bm25_docset {
    uint32_t *docs;
    float *scores;
    size_t n, cap;
} bm25_docset_t;

/* Lucene's idf: log(1 + (N - df + 0.5) / (df + 0.5)). */
double bm25_idf(uint64_t n_docs, uint64_t df);

/* Builds a clause for term bytes in the field of fs, weight = idf * boost, with N, df and
 * avgdl taken from fs (the field's own, or those of a subject's readable set);
 * CDN_ERR_NOT_FOUND when the term has no live postings among the documents fs covers. */
int bm25_clause_make(const fstats_t *fs, const char *term, size_t len, float boost, float k1,
                     float b, bm25_clause_t *out);

/* Exact top-k of the sum of clause scores (added in clause order, whatever order pruning
 * visits them in, so a score does not depend on other documents' block maxima) over docs matching
 * at least one clause and, when filter is not NULL, in filter. prune=0 scores every candidate
 * (reference path). Writes up to k hits (caller's array) sorted by score desc then id asc, *n_hits,
 * and *matched: the exact number of matching docs when prune=0 or when nothing was skipped, else a
 * lower bound
 * (*matched_exact says which). Returns 0 or CDN_ERR_NOMEM. */
int bm25_topk_or(const bm25_clause_t *cl, size_t n, const roaring_bitmap_t *filter, size_t k,
                 int prune, bm25_hit_t *hits, size_t *n_hits, uint64_t *matched, int *matched_exact,
                 bm25_stats_t *st);

/* Counts the docs matching at least one clause (in filter when not NULL; without one the
 * lists must have no dead postings), stopping at cap: *count is exact (*exact 1) or cap
 * (*exact 0, there may be more). Lists with bitmaps are counted exactly whatever cap is.
 * Returns 0 or NOMEM. */
int bm25_count_or(const bm25_clause_t *cl, size_t n, const roaring_bitmap_t *filter, uint64_t cap,
                  uint64_t *count, int *exact);

/* The scored docs of one clause (restricted to filter when not NULL). 0 or NOMEM. */
int bm25_clause_docset(const bm25_clause_t *c, const roaring_bitmap_t *filter, bm25_docset_t *out,
                       bm25_stats_t *st);

/* Docset helpers. push appends (ids must increase); 0 or NOMEM. */
int bm25_docset_push(bm25_docset_t *s, uint32_t doc, float score);
void bm25_docset_free(bm25_docset_t *s);

/* Top-k of a docset into hits (caller's array of k), sorted by score desc then id asc.
 * Returns 0 or CDN_ERR_NOMEM (the heap's storage; then *n_hits is 0). */
int bm25_docset_topk(const bm25_docset_t *s, size_t k, bm25_hit_t *hits, size_t *n_hits);

/* The next doc >= d in filter, or INVIDX_END; it must be an iterator over filter. */
uint32_t bm25_filter_next(roaring_uint32_iterator_t *it, uint32_t d);

#endif
