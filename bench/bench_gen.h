/* bench_gen.h: generated embeddings for `cordon bench hnsw` and `cordon bench permissions`.
 * Relies on bench_util.h (splitmix64, normal variates) and base/mem.h. */
#ifndef CDN_BENCH_GEN_H
#define CDN_BENCH_GEN_H

#include <stddef.h>
#include <stdint.h>

/* topics: rows shaped like text embeddings (the default). 64 topics with 16 subtopics each; a
 * row is its subtopic's centre plus a topic-specific low-rank term (64 directions whose scales
 * fall as 1/sqrt(rank)) plus small isotropic noise, then unit length. Its local intrinsic
 * dimension (MLE, 20 neighbours) is about 24 at 200k rows, close to the 24.8 measured on
 * SciFact's real USE-lite vectors (docs/benchmarks.md, "Generated data").
 * isotropic: 256 Gaussian centres plus 0.5 x N(0,1) noise in every dimension, then unit length.
 * Its local intrinsic dimension is about 80 at 200k rows: a stress case far harder for graph
 * indexes than real embeddings. */
typedef enum { BENCH_GEN_TOPICS = 0, BENCH_GEN_ISOTROPIC = 1 } bench_gen_kind_t;

typedef struct bench_gen {
    bench_gen_kind_t kind;
    uint32_t dim;
    uint32_t clusters; /* TOPICS: topics x subtopics; ISOTROPIC: centres */
    float *centre;     /* clusters x dim */
    float *basis;      /* TOPICS: topics x rank x dim, NULL otherwise */
    uint64_t s;        /* generator state */
} bench_gen_t;

/* Parses "topics" or "isotropic"; returns 0, or 2 after printing what is wrong. */
int bench_gen_parse(const char *bench, const char *val, bench_gen_kind_t *out);
const char *bench_gen_name(bench_gen_kind_t kind);

/* Draws the centres (and bases) from seed. Returns 0 or CDN_ERR_NOMEM; free with
 * bench_gen_free either way. */
int bench_gen_init(bench_gen_t *g, bench_gen_kind_t kind, uint32_t dim, uint64_t seed);

/* Writes n unit rows of g->dim floats to out, continuing g's stream. cluster_of (may be NULL)
 * receives each row's cluster, below g->clusters; for TOPICS, cluster / 16 is the topic. */
void bench_gen_rows_of(bench_gen_t *g, float *out, size_t n, uint32_t *cluster_of);

void bench_gen_free(bench_gen_t *g);

#endif
