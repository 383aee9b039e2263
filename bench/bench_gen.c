/* bench_gen.c: the generators described in bench_gen.h. The topics parameters were chosen by
 * matching the local intrinsic dimension of SciFact's USE-lite vectors (see bench_gen.h).
 * Relies on bench_util.h and vector/distance.h (vec_normalize). */
#include "bench_gen.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/mem.h"
#include "bench_util.h"
#include "vector/distance.h"

#define GEN_TOPICS 64
#define GEN_SUBTOPICS 16
#define GEN_RANK 64
#define GEN_SUB_SPREAD 0.6f /* subtopic centre = topic centre + 0.6 x N(0,1) */
#define GEN_LOW_SCALE 2.0f  /* low-rank term: direction r scaled by 2 / sqrt(r + 1) */
#define GEN_ISO_NOISE 0.2f  /* isotropic noise on top */
#define GEN_ISO_CENTRES 256
#define GEN_ISO_SPREAD 0.5f

int bench_gen_parse(const char *bench, const char *val, bench_gen_kind_t *out)
{
    if (val && !strcmp(val, "topics"))
        *out = BENCH_GEN_TOPICS;
    else if (val && !strcmp(val, "isotropic"))
        *out = BENCH_GEN_ISOTROPIC;
    else {
        fprintf(stderr, "cordon bench %s: --generator must be topics or isotropic (got '%s')\n",
                bench, val ? val : "");
        return 2;
    }
    return 0;
}

const char *bench_gen_name(bench_gen_kind_t kind)
{
    return kind == BENCH_GEN_TOPICS ? "topics" : "isotropic";
}

static void fill_gauss(float *a, size_t n, float scale, uint64_t *s)
{
    for (size_t i = 0; i < n; i++)
        a[i] = scale * bench_rng_gauss(s);
}

int bench_gen_init(bench_gen_t *g, bench_gen_kind_t kind, uint32_t dim, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    g->kind = kind;
    g->dim = dim;
    g->s = seed;
    g->clusters = kind == BENCH_GEN_TOPICS ? GEN_TOPICS * GEN_SUBTOPICS : GEN_ISO_CENTRES;
    g->centre = cdn_malloc(sizeof(float) * g->clusters * dim);
    if (!g->centre)
        return CDN_ERR_NOMEM;
    if (kind == BENCH_GEN_ISOTROPIC) {
        fill_gauss(g->centre, (size_t)g->clusters * dim, 1.0f, &g->s);
        return CDN_OK;
    }
    g->basis = cdn_malloc(sizeof(float) * GEN_TOPICS * GEN_RANK * dim);
    if (!g->basis)
        return CDN_ERR_NOMEM;
    for (uint32_t t = 0; t < GEN_TOPICS; t++) {
        float *tc = g->centre + (size_t)t * GEN_SUBTOPICS * dim; /* subtopic 0 holds it first */
        fill_gauss(tc, dim, 1.0f, &g->s);
        for (uint32_t k = GEN_SUBTOPICS; k-- > 0;) {
            float *c = tc + (size_t)k * dim;
            for (uint32_t d = 0; d < dim; d++)
                c[d] = tc[d] + GEN_SUB_SPREAD * bench_rng_gauss(&g->s);
        }
    }
    for (uint32_t r = 0; r < GEN_TOPICS * GEN_RANK; r++)
        fill_gauss(g->basis + (size_t)r * dim, dim,
                   GEN_LOW_SCALE / sqrtf((float)(r % GEN_RANK) + 1), &g->s);
    return CDN_OK;
}

void bench_gen_rows_of(bench_gen_t *g, float *out, size_t n, uint32_t *cluster_of)
{
    uint32_t dim = g->dim;
    for (size_t i = 0; i < n; i++) {
        float *row = out + i * dim;
        uint32_t c = (uint32_t)(bench_rng_next(&g->s) % g->clusters);
        const float *ce = g->centre + (size_t)c * dim;
        if (cluster_of)
            cluster_of[i] = c;
        float spread = g->kind == BENCH_GEN_TOPICS ? GEN_ISO_NOISE : GEN_ISO_SPREAD;
        for (uint32_t d = 0; d < dim; d++)
            row[d] = ce[d] + spread * bench_rng_gauss(&g->s);
        if (g->kind == BENCH_GEN_TOPICS) {
            const float *b = g->basis + (size_t)(c / GEN_SUBTOPICS) * GEN_RANK * dim;
            for (uint32_t r = 0; r < GEN_RANK; r++) {
                float z = bench_rng_gauss(&g->s);
                for (uint32_t d = 0; d < dim; d++)
                    row[d] += z * b[(size_t)r * dim + d];
            }
        }
        vec_normalize(row, dim);
    }
}

void bench_gen_free(bench_gen_t *g)
{
    cdn_free(g->centre);
    cdn_free(g->basis);
    g->centre = g->basis = NULL;
}
