/* textidx.h: one collection's text layer: its text fields (analyzer + inverted index each), its
 * metadata field index, the live set, search with permissions, and persistence.
 * Relies on invidx, fieldidx, bm25 and textq. Callers serialise writers against searchers
 * (the engine's collection rwlock); searches never mutate the index (only the fields'
 * statistics caches, which lock their own). */
#ifndef CDN_TEXTIDX_H
#define CDN_TEXTIDX_H

#include <roaring/roaring.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "text/analyzer.h"
#include "text/bm25.h"
#include "text/fieldidx.h"
#include "text/fscache.h"
#include "text/invidx.h"
#include "text/textq.h"

/* Field kinds (stored in index files: never renumber). */
typedef enum textidx_kind {
    TEXTIDX_TEXT = 0,
    TEXTIDX_KEYWORD = 1,
    TEXTIDX_NUMBER = 2,
    TEXTIDX_DATE = 3,
    TEXTIDX_BOOL = 4,
} textidx_kind_t;

typedef struct textidx_config {
    float k1; /* BM25 term saturation, default 1.2 */
    float b;  /* BM25 length normalisation, default 0.75 */
} textidx_config_t;

/* One value of a document. text fields and keyword take text/len; number takes num; date
 * takes text (ISO-8601 or epoch millis) or, when text is NULL, num as epoch ms; bool takes
 * text "true"/"false" or, when text is NULL, num != 0. A field may appear several times
 * (multi-valued; text values are 100 positions apart). */
typedef struct textidx_value {
    const char *field;
    const char *text;
    size_t len;
    double num;
} textidx_value_t;

typedef struct textidx_tfield {
    char *name;
    analyzer_t an;
    invidx_t ix;
    fscache_t *stats; /* its statistics over recent readable sets (owned) */
} textidx_tfield_t;

typedef struct textidx {
    textidx_config_t cfg;
    textidx_tfield_t *tf;
    size_t ntf, tf_cap;
    fieldidx_t fi;
    roaring_bitmap_t *live;    /* every live doc, with or without text */
    analyzer_tokens_t scratch; /* writer-side only */
} textidx_t;

typedef struct textidx_search_opts {
    const roaring_bitmap_t *allowed; /* docs the subject may read; NULL = all live docs */
    size_t k;                        /* hits wanted */
    int exhaustive;                  /* 1: score every candidate (no pruning), exact totals */
    /* The documents BM25 statistics (N, df, avgdl) are computed over: the subject's readable
     * set, so that documents it cannot read change no score; NULL = every live document (the
     * collection-wide statistics Elasticsearch uses). Metadata filters do not narrow it. */
    const roaring_bitmap_t *stats_over;
    /* Matches to count at least: a pruned search leaves total a lower bound, so it counts on
     * until total is exact or at least count_min (Elasticsearch's track_total_hits). 0: the
     * count is whatever the ranking saw. */
    uint64_t count_min;
} textidx_search_opts_t;

typedef struct textidx_result {
    bm25_hit_t *hits; /* n hits, score desc then id asc; freed by textidx_result_free */
    size_t n;
    uint64_t total;    /* matching readable docs (exact when total_exact) */
    int total_exact;   /* 0: total is a lower bound (pruning skipped some docs) */
    int complete;      /* 1: hits are the exact top-k of the readable docs */
    uint64_t readable; /* live docs the subject may read */
    bm25_stats_t stats;
    const char *plan; /* "bm25-maxscore", "bm25-exhaustive" or "tree" (static string) */
} textidx_result_t;

/* Default configuration (k1 1.2, b 0.75). */
textidx_config_t textidx_config_default(void);

/* Creates an empty index (cfg NULL = defaults); 0, INVALID (k1 < 0, b outside 0..1) or NOMEM.
 * Free with textidx_free. */
int textidx_create(const textidx_config_t *cfg, textidx_t **out, cdn_err_t *err);
void textidx_free(textidx_t *ti);

/* Maps a field. analyzer applies to text fields (NULL = "standard"; see analyzer_spec_parse).
 * Mapping an existing name again with the same kind is a no-op. 0, INVALID, EXISTS, NOMEM. */
int textidx_add_field(textidx_t *ti, const char *name, textidx_kind_t kind, const char *analyzer,
                      cdn_err_t *err);

/* Indexes doc id with its values. 0; CDN_ERR_EXISTS when id is live (delete it first: an
 * update gives the chunk a new id); CDN_ERR_INVALID naming an unmapped field or a bad value
 * (nothing is indexed then); CDN_ERR_NOMEM. */
int textidx_add_doc(textidx_t *ti, uint32_t id, const textidx_value_t *vals, size_t n,
                    cdn_err_t *err);
/* Removes doc id from every field; unknown ids are a no-op. 0 or CDN_ERR_NOMEM. */
int textidx_delete_doc(textidx_t *ti, uint32_t id);
/* Drops the postings of deleted docs now (they are otherwise dropped a term at a time when a
 * quarter of its list is dead, and on save); searches then skip the live-set check. */
void textidx_compact(textidx_t *ti);
/* Live documents. */
uint64_t textidx_doc_count(const textidx_t *ti);

/* The first field q names that the index does not hold (neither a text nor a metadata field),
 * or NULL when every one is known. A query on such a field could only match nothing, which
 * hides a typo or an undeclared metadata key: callers refuse it. The name is q's. */
const char *textidx_unknown_field(const textidx_t *ti, const textq_t *q);

/* Runs q for a subject: only docs in opts->allowed (and live) are evaluated or returned.
 * Returns 0 with *res filled (free with textidx_result_free), INVALID (bad query value, e.g. a
 * range bound that is not a number, err says which) or NOMEM. */
int textidx_search(const textidx_t *ti, const textq_t *q, const textidx_search_opts_t *opts,
                   textidx_result_t *res, cdn_err_t *err);
void textidx_result_free(textidx_result_t *res);
/* Narrows allowed to the live docs q matches, as a filter: no ranking, no statistics kept. 0,
 * INVALID (err says which value is bad) or NOMEM. */
int textidx_filter(const textidx_t *ti, const textq_t *q, roaring_bitmap_t *allowed,
                   cdn_err_t *err);

/* Writes the whole index to path (temp file + fsync + rename + directory fsync), tagged with
 * revision. 0 or CDN_ERR_IO / NOMEM. */
int textidx_save(const textidx_t *ti, const char *path, uint64_t revision, cdn_err_t *err);
/* The same with every doc id written as map[id] (a compaction's renumbering: ascending on the
 * live docs, which must all be below n_map and mapped, not UINT32_MAX; dead docs are dropped
 * as by any save). Reads ti only: searches may run meanwhile. CDN_ERR_INVALID for a map that
 * leaves out a live doc. */
int textidx_save_mapped(const textidx_t *ti, const char *path, uint64_t revision,
                        const uint32_t *map, uint32_t n_map, cdn_err_t *err);
/* Reads an index written by textidx_save without re-analyzing any document. 0 with *out
 * (free with textidx_free) and *revision; CDN_ERR_IO (cannot read), CDN_ERR_CORRUPT (bad
 * magic, version, checksum, truncation or contents) or NOMEM. */
int textidx_load(const char *path, textidx_t **out, uint64_t *revision, cdn_err_t *err);

/* Internal, for textidx.c, textidx_io.c and textq_eval.c: the text field called name, or NULL.
 * Here, below all three, so that the evaluator textidx.c calls never calls back into it. */
static inline const textidx_tfield_t *textidx_text_field(const textidx_t *ti, const char *name)
{
    for (size_t i = 0; i < ti->ntf; i++)
        if (!strcmp(ti->tf[i].name, name))
            return &ti->tf[i];
    return NULL;
}

/* Internal (textq_eval.c): narrows inout (live docs) to those q matches, in filter context (no
 * ranking, scores ignored); 0, INVALID (a bad query value) or NOMEM. */
int textq_filter(const textidx_t *ti, const textq_t *q, roaring_bitmap_t *inout, cdn_err_t *err);
/* Internal (textq_eval.c): evaluates q restricted to base (NULL = all live docs, used only when
 * no dead postings exist) into top-k hits as opts says (its allowed and stats_over are replaced
 * by base and stats_over: the statistics of stats_over, live docs only; NULL = every live doc).*/
int textq_exec(const textidx_t *ti, const textq_t *q, const roaring_bitmap_t *base,
               const roaring_bitmap_t *stats_over, const textidx_search_opts_t *opts,
               textidx_result_t *res, cdn_err_t *err);

#endif
