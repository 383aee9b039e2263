/* quant.h: per-dimension 8-bit scalar codes of a collection's rows and an exact top-k search that
 * prunes with them, then re-ranks the survivors in float32. Relies on distance.h, exact.h, topk.h.
 *
 * Codes: c_j = round((x_j - lo_j) / s_j) clamped to 0..255, lo_j / s_j from a training sample's
 * per-dimension min / max. Each row also keeps e_r = ||x - x^||_2 (x^_j = lo_j + s_j c_j, rounded
 * up), its true reconstruction error, so rows outside the training range or inserted after
 * training stay correct: their e_r is just larger. The codes depend on no metric.
 *
 * Thread-safety (the engine's collection lock): quant_train, and quant_encode_rows over ids below
 * quant_count (rewrites, filling gaps), need exclusive access (write lock). Appends (first >=
 * quant_count) by a single writer may run while searches read: code storage is chunked
 * (QUANT_CHUNK_ROWS rows per chunk, 64-byte aligned), chunks never move, a directory outgrown
 * is replaced by a copy and kept until quant_free, and the row count is published (release)
 * only after the rows below it are written; a search snapshots directory and count (acquire)
 * at its start. quant_exact_search only reads q: any number may run at once (read lock). */
#ifndef CDN_QUANT_H
#define CDN_QUANT_H

#include <roaring/roaring.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/topk.h"
#include "vector/distance.h"

#define QUANT_CHUNK_SHIFT 12
#define QUANT_CHUNK_ROWS (1u << QUANT_CHUNK_SHIFT)

typedef struct quant quant_t;

/* What one search did: rows whose codes were scored, rows re-ranked in float32, and the bytes
 * of codes and float rows it read (the cost model: both scans are memory-bound). */
typedef struct quant_stats {
    uint64_t scanned;
    uint64_t reranked;
    uint64_t code_bytes;
    uint64_t float_bytes;
    uint64_t filtered; /* quant_bits_search: rows the 1-bit codes ruled out */
} quant_stats_t;

/* Makes an empty, untrained quantizer for rows of `dim` floats (1..65536) into *out; free with
 * quant_free. Returns 0, CDN_ERR_INVALID (dim out of range) or CDN_ERR_NOMEM. */
int quant_create(uint32_t dim, quant_t **out, cdn_err_t *err);

/* Frees q and all its codes. NULL-safe. */
void quant_free(quant_t *q);

/* Sets lo_j / s_j from the per-dimension min / max of rows ids[0..n) of v (ids NULL: rows
 * 0..n-1); non-finite values are ignored. Forgets every encoded row (quant_count becomes 0):
 * encode them again. A few thousand representative rows are plenty; values outside their range
 * only widen the bound of the rows that hold them. Needs exclusive access. Returns 0,
 * CDN_ERR_INVALID (n == 0, v->dim != dim, an id >= v->count, bad view) or CDN_ERR_NOMEM; after
 * a bad id q is untrained (searches fall back to exact_search), after other errors unchanged. */
int quant_train(quant_t *q, const vec_view_t *v, const uint32_t *ids, size_t n, cdn_err_t *err);

/* Encodes rows first..first+n-1 of v (they must be < v->count), overwriting any earlier codes
 * for those ids; quant_count becomes at least first+n. Ids between the old count and `first`
 * that were never encoded are treated as unknown by searches (always re-ranked), never wrong.
 * Needs exclusive access. Returns 0, CDN_ERR_INVALID (untrained, dim mismatch, range outside v)
 * or CDN_ERR_NOMEM (then rows already encoded stay valid). */
int quant_encode_rows(quant_t *q, const vec_view_t *v, uint32_t first, uint32_t n, cdn_err_t *err);

/* A copy of q's training and of the codes of the rows map keeps, renumbered: row i
 * (i < n_map, i < quant_count(q)) becomes row map[i] of *out, or is left out when map[i] is
 * UINT32_MAX; quant_count(*out) is n_new, and a row of it no kept row lands on stays unknown
 * (re-ranked, as a row never encoded). The codes restate the same floats under their new row
 * numbers, so they need no re-encoding. Safe alongside searches of q. Returns 0,
 * CDN_ERR_INVALID (untrained q, a target row >= n_new) or CDN_ERR_NOMEM; *out is freed with
 * quant_free. */
int quant_compact(const quant_t *q, const uint32_t *map, uint32_t n_map, uint32_t n_new,
                  quant_t **out);

/* 1 once quant_train has succeeded. */
int quant_is_trained(const quant_t *q);

/* Rows 0..count-1 have a code slot (encoded or unknown). */
uint32_t quant_count(const quant_t *q);

/* Bytes q holds (parameters, directory, code chunks); per row it is about
 * round_up(dim, 32) + 8 bytes of 8-bit codes and 64 bytes of 1-bit codes (384-d; in general
 * round_up(dim, 64) / 8 + 16, at least 64, a multiple of 16), allocated QUANT_CHUNK_ROWS rows
 * at a time. */
size_t quant_memory(const quant_t *q);

/* Exactly what exact_search(v, m, query, allowed, k, ...) returns (same ids, same float
 * distances, ties by smaller id) but reading 8-bit codes for every allowed row and float rows
 * only for those whose lower bound could still reach the top k. v must be the view the rows were
 * encoded from (same rows); allowed ids >= v->count are ignored, ids >= quant_count or never
 * encoded are re-ranked unconditionally. Untrained q, or a query with a non-finite value, falls
 * back to exact_search. stats (may be NULL) gets what was read. Allocates a candidate list
 * (freed before returning). Returns 0, CDN_ERR_INVALID (as exact_search, or v->dim != dim) or
 * CDN_ERR_NOMEM. Thread-safe against other searches (read-only on q). */
int quant_exact_search(const quant_t *q, const vec_view_t *v, vec_metric_t m, const float *query,
                       const roaring_bitmap_t *allowed, size_t k, topk_hit_t *out, size_t *n_out,
                       quant_stats_t *stats);

/* As quant_exact_search with the code kernels of a given instruction set (the float re-rank is
 * always exact_search's own); CDN_ERR_UNSUPPORTED if this CPU lacks it. For tests and benches. */
int quant_exact_search_isa(const quant_t *q, const vec_view_t *v, vec_metric_t m, vec_isa_t isa,
                           const float *query, const roaring_bitmap_t *allowed, size_t k,
                           topk_hit_t *out, size_t *n_out, quant_stats_t *stats);

/* The code-space kernel alone, for tests: *out = sum_j w[j] * code_j(id) over dim entries of w
 * (|w[j]| at most the bound the search uses, 2^31 / (255 * round_up(dim, 32)) - 1), in exact int32
 * arithmetic with instruction set isa. Returns 0, CDN_ERR_INVALID (id not encoded, weight too
 * large, NULL args), CDN_ERR_UNSUPPORTED or CDN_ERR_NOMEM. */
int quant_code_dot(const quant_t *q, vec_isa_t isa, const int16_t *w, uint32_t id, int32_t *out);

/* Writes q's parameters and codes (rows below quant_count) to path atomically (temporary file,
 * fsync, rename, directory fsync). Safe alongside searches and a single appending writer (rows
 * below the count it reads are complete); not alongside quant_train or rewrites. Returns 0,
 * CDN_ERR_INVALID (untrained q, NULL, path too long), CDN_ERR_IO or CDN_ERR_NOMEM. */
int quant_save(const quant_t *q, const char *path);

/* Reads a quantizer written by quant_save for the rows of v: rows the file holds past
 * v->count are dropped (never acknowledged), and sample rows are re-encoded from v and must
 * match the file exactly, so stale or foreign codes are refused. *out: free with quant_free.
 * Returns 0, CDN_ERR_IO (cannot open or read), CDN_ERR_CORRUPT (bad header, size, checksum,
 * dimension, or codes that do not restate v) or CDN_ERR_NOMEM. */
int quant_load(const char *path, const vec_view_t *v, quant_t **out);

/* ---- 1-bit codes, for scans of large readable sets ----
 * Every encoded row also keeps the signs of its randomly rotated coordinates (minus the
 * training rows' mean) and three numbers (quant_bits.c explains the estimate). */

/* The k allowed rows nearest to query, as quant_exact_search with a filter in front: each
 * allowed row's 1-bit code gives an estimated distance interval (probabilistic, not a bound),
 * and rows whose interval cannot reach the 8-bit scan's running threshold (the k-th smallest
 * 8-bit upper bound, never below the true k-th distance) are not read further; the rest go
 * through the 8-bit bounds and the float re-rank as in quant_exact_search. The hits carry
 * exact float distances; a true top-k row is lost only when its estimate errs beyond its
 * interval (none lost at 1M x 384 in `cordon bench permissions`), so callers report the
 * result incomplete. Same arguments, fallbacks and returns as quant_exact_search;
 * stats->filtered counts the rows the filter ruled out. Read-only on q. */
int quant_bits_search(const quant_t *q, const vec_view_t *v, vec_metric_t m, const float *query,
                      const roaring_bitmap_t *allowed, size_t k, topk_hit_t *out, size_t *n_out,
                      quant_stats_t *stats);

/* As quant_bits_search with the 8-bit and popcount kernels of isa (popcount SCALAR: portable,
 * AVX2: the popcnt instruction, AVX512: VPOPCNTQ); CDN_ERR_UNSUPPORTED if this CPU lacks
 * them. All give the same results. For tests and benches. */
int quant_bits_search_isa(const quant_t *q, const vec_view_t *v, vec_metric_t m, vec_isa_t isa,
                          const float *query, const roaring_bitmap_t *allowed, size_t k,
                          topk_hit_t *out, size_t *n_out, quant_stats_t *stats);

/* ---- approximate scoring, for graph traversal ----
 * A query prepared against the codes: estimates of each row's float distance from its codes
 * alone (the distance to the reconstruction x^: L2 ||q - x^||^2, dot -q.x^, cosine 1 - q.x^),
 * a quarter of the memory a float row costs. Estimates, not bounds: a traversal that ranks with
 * them re-scores its final list in float. Rows without codes (never encoded, past quant_count,
 * non-finite values) are scored from the float view instead. */
typedef struct quant_query quant_query_t;

/* Prepares `query` (dim floats) for scoring rows of v (the view the codes were encoded from)
 * under metric m. *out is freed with quant_query_free. Returns 0, CDN_ERR_INVALID (untrained
 * q, dim mismatch, a non-finite query value, NULL arguments) or CDN_ERR_NOMEM. Read-only on q:
 * any number may run at once, and alongside appends (the row count is taken here). */
int quant_query_new(const quant_t *q, const vec_view_t *v, vec_metric_t m, const float *query,
                    quant_query_t **out);
void quant_query_free(quant_query_t *qq);

/* out[i] = the estimate for row ids[i] (every id < v->count). */
void quant_query_score(const quant_query_t *qq, const uint32_t *ids, uint32_t n, float *out);

/* Bounds on the float distance of rows ids[0..n) to the query, as any float kernel of this
 * library returns it (exact_search's, or vec_dist_for's: the slack covers every summation
 * order): lo[i] <= d <= hi[i]; rows without codes get -inf / +inf. From the codes and their
 * e_r line only, no float row: for a traversal's list before its float re-rank, whose rows
 * it has just scored (a row whose lo is above the k-th smallest hi of the list cannot be
 * among the list's k nearest). */
void quant_query_bounds(const quant_query_t *qq, const uint32_t *ids, uint32_t n, float *lo,
                        float *hi);

/* Starts fetching what quant_query_score will read for row id. */
void quant_query_prefetch(const quant_query_t *qq, uint32_t id);

#endif
