/* perm_data.c: the corpora of `cordon bench permissions` (BEIR directories with use-lite
 * vectors, Fashion-MNIST from its Debian package, generated Gaussian clusters), the team
 * hierarchy (random and topical) and the subjects of each layout and share.
 * Relies on base/fvecs.h, vector/distance.h (for clustering only) and gzip on PATH. */
#include "base/fvecs.h"
#include "base/mem.h"
#include "bench_util.h"
#include "perm_int.h"
#include "vector/distance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#define KM_SAMPLE 4000
#define KM_ITERS 6

const perm_share_t perm_shares[PERM_SHARES] = {
    {0.001, 0, 1}, {0.01, 1, 1}, {0.05, 1, 5}, {0.2, 2, 2}, {1.0, 2, 10},
};
const char *const perm_layout_names[PERM_LAYOUTS] = {"random", "aligned", "misaligned"};
const char *const perm_strat_names[PERM_STRATS] = {"auto", "prefilter", "postfilter", "naive",
                                                   "unprotected"};

static int load_beir(const perm_opts_t *o, perm_corpus_t *c, cdn_err_t *err)
{
    char path[4096];
    uint32_t qdim = 0;
    size_t nq = 0;
    const char *base = strrchr(o->corpus, '/');
    int rc;
    snprintf(path, sizeof path, "%s/use-lite/corpus.fvecs", o->corpus);
    if ((rc = cdn_fvecs_read(path, &c->base, &c->n, &c->dim, err)) != 0)
        return rc;
    snprintf(path, sizeof path, "%s/use-lite/queries.fvecs", o->corpus);
    if ((rc = cdn_fvecs_read(path, &c->queries, &nq, &qdim, err)) != 0)
        return rc;
    if (qdim != c->dim)
        return cdn_err_set(err, CDN_ERR_INVALID, "%s has %u-d queries for %u-d chunks", path, qdim,
                           c->dim);
    c->nq = o->queries && o->queries < nq ? o->queries : nq;
    c->metric = CORDON_METRIC_COSINE;
    for (size_t i = 0; i < c->n; i++)
        vec_normalize(c->base + i * c->dim, c->dim);
    for (size_t i = 0; i < c->nq; i++)
        vec_normalize(c->queries + i * c->dim, c->dim);
    base = base && base[1] ? base + 1 : o->corpus;
    snprintf(c->name, sizeof c->name, "%s", base);
    return CDN_OK;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Reads up to `want` images of an IDX3 file (gzipped) as floats 0..255. */
static int read_idx(const char *file, size_t want, float **out, size_t *n, uint32_t *dim,
                    cdn_err_t *err)
{
    char cmd[512];
    unsigned char h[16], *px = NULL;
    FILE *f;
    int rc = CDN_OK;
    snprintf(cmd, sizeof cmd, "gzip -dc '%s/%s'", FMNIST_DIR, file);
    if (!(f = popen(cmd, "r")))
        return cdn_err_set(err, CDN_ERR_IO, "cannot run `%s`", cmd);
    if (fread(h, 1, 16, f) != 16 || be32(h) != 0x803) {
        pclose(f);
        return cdn_err_set(err, CDN_ERR_IO,
                           "%s/%s is missing or not an IDX image file; "
                           "install the Debian package dataset-fashion-mnist (make bench-deps)",
                           FMNIST_DIR, file);
    }
    *n = be32(h + 4) < want ? be32(h + 4) : want;
    *dim = be32(h + 8) * be32(h + 12);
    px = cdn_malloc(*dim ? *dim : 1);
    *out = cdn_malloc(*n * *dim * sizeof(float) + 1);
    if (!px || !*out)
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory reading %s", file);
    for (size_t i = 0; rc == CDN_OK && i < *n; i++) {
        if (fread(px, 1, *dim, f) != *dim)
            rc = cdn_err_set(err, CDN_ERR_IO, "%s ends at image %zu", file, i);
        for (uint32_t d = 0; rc == CDN_OK && d < *dim; d++)
            (*out)[i * *dim + d] = px[d];
    }
    while (fread(h, 1, sizeof h, f) > 0) /* let gzip finish rather than die of SIGPIPE */
        ;
    pclose(f);
    cdn_free(px);
    return rc;
}

static int load_fmnist(const perm_opts_t *o, perm_corpus_t *c, cdn_err_t *err)
{
    uint32_t qdim = 0;
    int rc = read_idx("train-images-idx3-ubyte.gz", 60000, &c->base, &c->n, &c->dim, err);
    if (rc == CDN_OK)
        rc = read_idx("t10k-images-idx3-ubyte.gz", o->queries ? o->queries : 1000, &c->queries,
                      &c->nq, &qdim, err);
    c->metric = CORDON_METRIC_L2;
    snprintf(c->name, sizeof c->name, "fashion-mnist");
    return rc;
}

/* Generated: rows and queries from bench_gen.h's generator (topics or isotropic), seeded. */
static int load_generated(const perm_opts_t *o, perm_corpus_t *c, cdn_err_t *err)
{
    bench_gen_t g;
    c->n = o->size;
    c->nq = o->queries ? o->queries : 100;
    c->dim = o->dim;
    c->metric = CORDON_METRIC_COSINE;
    c->base = cdn_malloc(sizeof(float) * c->n * c->dim);
    c->queries = cdn_malloc(sizeof(float) * c->nq * c->dim);
    int rc = bench_gen_init(&g, o->gen, o->dim, o->seed);
    if (rc == CDN_OK && c->base && c->queries) {
        bench_gen_rows_of(&g, c->base, c->n, NULL);
        bench_gen_rows_of(&g, c->queries, c->nq, NULL);
    }
    bench_gen_free(&g);
    if (rc || !c->base || !c->queries)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory for %zu x %u rows", c->n, c->dim);
    snprintf(c->name, sizeof c->name, "generated-%s-%zux%u", bench_gen_name(o->gen), c->n, c->dim);
    return CDN_OK;
}

int perm_corpus_load(const perm_opts_t *o, perm_corpus_t *c, cdn_err_t *err)
{
    int rc;
    memset(c, 0, sizeof *c);
    if (!strcmp(o->corpus, "generated"))
        rc = load_generated(o, c, err);
    else if (!strcmp(o->corpus, "fashion-mnist"))
        rc = load_fmnist(o, c, err);
    else
        rc = load_beir(o, c, err);
    if (rc == CDN_OK && (c->n < PERM_TEAMS || c->nq == 0))
        rc = cdn_err_set(err, CDN_ERR_INVALID,
                         "corpus %s has %zu chunks and %zu queries; the "
                         "benchmark needs at least %d chunks (one per team) and one query",
                         o->corpus, c->n, c->nq, PERM_TEAMS);
    if (rc)
        perm_corpus_free(c);
    return rc;
}

void perm_corpus_free(perm_corpus_t *c)
{
    cdn_free(c->base);
    cdn_free(c->queries);
    c->base = c->queries = NULL;
}

/* ---- Topical teams: a balanced 10-way split, three levels deep. ---- */

/* A row's margin between its nearest and second-nearest centre, for the greedy order. */
typedef struct margin {
    float m;
    uint32_t j;
} margin_t;

typedef struct split_ctx {
    const perm_corpus_t *c;
    uint64_t *seed;
    float *cent;     /* 10 x dim */
    float *d;        /* n x 10 scratch */
    margin_t *order; /* n */
    uint32_t *tmp;
} split_ctx_t;

/* k-means (k = 10) on a sample of idx: a few Lloyd iterations from random rows. */
static void split_centres(split_ctx_t *x, const uint32_t *idx, size_t n)
{
    uint32_t dim = x->c->dim, cnt[10];
    size_t ns = n < KM_SAMPLE ? n : KM_SAMPLE;
    double *acc = cdn_calloc((size_t)10 * dim, sizeof *acc);
    for (int p = 0; p < 10; p++)
        memcpy(x->cent + (size_t)p * dim,
               x->c->base + (size_t)idx[bench_rng_next(x->seed) % n] * dim, dim * sizeof(float));
    for (int it = 0; acc && it < KM_ITERS; it++) {
        memset(acc, 0, sizeof *acc * 10 * dim);
        memset(cnt, 0, sizeof cnt);
        for (size_t j = 0; j < ns; j++) {
            const float *row = x->c->base + (size_t)idx[j * n / ns] * dim;
            int best = 0;
            float bd = INFINITY;
            for (int p = 0; p < 10; p++) {
                float dd = vec_l2sq(row, x->cent + (size_t)p * dim, dim);
                if (dd < bd) {
                    bd = dd;
                    best = p;
                }
            }
            cnt[best]++;
            for (uint32_t k = 0; k < dim; k++)
                acc[(size_t)best * dim + k] += row[k];
        }
        for (int p = 0; p < 10; p++)
            for (uint32_t k = 0; cnt[p] && k < dim; k++)
                x->cent[(size_t)p * dim + k] = (float)(acc[(size_t)p * dim + k] / cnt[p]);
    }
    cdn_free(acc);
}

static int cmp_margin(const void *a, const void *b)
{
    float x = ((const margin_t *)a)->m, y = ((const margin_t *)b)->m;
    return (x < y) - (x > y);
}

/* Reorders idx[0..n) into ten topical parts of near-equal size: part p is
 * [p*n/10, (p+1)*n/10). Rows most sure of their nearest centre choose first. */
static void split10(split_ctx_t *x, uint32_t *idx, size_t n)
{
    uint32_t dim = x->c->dim;
    size_t fill[10], cap[10];
    split_centres(x, idx, n);
    for (size_t j = 0; j < n; j++) {
        float b1 = INFINITY, b2 = INFINITY;
        for (int p = 0; p < 10; p++) {
            float dd = vec_l2sq(x->c->base + (size_t)idx[j] * dim, x->cent + (size_t)p * dim, dim);
            x->d[j * 10 + p] = dd;
            if (dd < b1) {
                b2 = b1;
                b1 = dd;
            } else if (dd < b2) {
                b2 = dd;
            }
        }
        x->order[j] = (margin_t){b2 - b1, (uint32_t)j};
    }
    qsort(x->order, n, sizeof *x->order, cmp_margin);
    for (int p = 0; p < 10; p++) {
        fill[p] = 0;
        cap[p] = (size_t)(p + 1) * n / 10 - (size_t)p * n / 10;
    }
    for (size_t r = 0; r < n; r++) {
        size_t j = x->order[r].j;
        int best = -1;
        for (int p = 0; p < 10; p++)
            if (fill[p] < cap[p] && (best < 0 || x->d[j * 10 + p] < x->d[j * 10 + best]))
                best = p;
        x->tmp[(size_t)best * n / 10 + fill[best]++] = idx[j];
    }
    memcpy(idx, x->tmp, n * sizeof *idx);
}

/* Splits idx into divisions, departments and teams; writes each chunk's topical team. */
static void split_tree(split_ctx_t *x, uint32_t *idx, size_t n, int level, unsigned first,
                       uint16_t *team)
{
    split10(x, idx, n);
    for (unsigned p = 0; p < 10; p++) {
        size_t lo = (size_t)p * n / 10, hi = (size_t)(p + 1) * n / 10;
        if (level == 2)
            for (size_t j = lo; j < hi; j++)
                team[idx[j]] = (uint16_t)(first + p);
        else if (hi > lo)
            split_tree(x, idx + lo, hi - lo, level + 1, (first + p) * 10, team);
    }
}

static void group_centroids(perm_world_t *w)
{
    uint32_t dim = w->c.dim;
    size_t cnt[PERM_GROUPS] = {0};
    double *acc = cdn_calloc((size_t)PERM_GROUPS * dim, sizeof *acc);
    if (!acc)
        return;
    for (size_t i = 0; i < w->c.n; i++) {
        unsigned t = w->team[1][i],
                 g[3] = {t, PERM_TEAMS + t / 10, PERM_TEAMS + PERM_DEPTS + t / 100};
        for (int l = 0; l < 3; l++) {
            cnt[g[l]]++;
            for (uint32_t k = 0; k < dim; k++)
                acc[(size_t)g[l] * dim + k] += w->c.base[i * dim + k];
        }
    }
    for (size_t g = 0; g < PERM_GROUPS; g++)
        for (uint32_t k = 0; k < dim; k++)
            w->centroid[g * dim + k] = cnt[g] ? (float)(acc[g * dim + k] / cnt[g]) : 0;
    cdn_free(acc);
}

int perm_assign_teams(perm_world_t *w, cdn_err_t *err)
{
    size_t n = w->c.n;
    uint64_t seed = w->o.seed ^ 0x7ea3;
    uint32_t *idx = cdn_malloc(n * sizeof *idx);
    split_ctx_t x = {.c = &w->c, .seed = &seed};
    x.cent = cdn_malloc((size_t)10 * w->c.dim * sizeof(float));
    x.d = cdn_malloc(n * 10 * sizeof(float));
    x.order = cdn_malloc(n * sizeof *x.order);
    x.tmp = cdn_malloc(n * sizeof(uint32_t));
    w->team[0] = cdn_malloc(n * sizeof(uint16_t));
    w->team[1] = cdn_malloc(n * sizeof(uint16_t));
    w->centroid = cdn_malloc((size_t)PERM_GROUPS * w->c.dim * sizeof(float));
    int rc = idx && x.cent && x.d && x.order && x.tmp && w->team[0] && w->team[1] && w->centroid
                 ? CDN_OK
                 : cdn_err_set(err, CDN_ERR_NOMEM, "out of memory assigning teams");
    if (rc == CDN_OK) {
        /* Random: a seeded shuffle dealt round the teams, so every team has n/1000 chunks. */
        for (size_t i = 0; i < n; i++)
            idx[i] = (uint32_t)i;
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = bench_rng_next(&seed) % (i + 1);
            uint32_t t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
        for (size_t i = 0; i < n; i++)
            w->team[0][idx[i]] = (uint16_t)(i % PERM_TEAMS);
        split_tree(&x, idx, n, 0, 0, w->team[1]);
        group_centroids(w);
    }
    cdn_free(idx);
    cdn_free(x.cent);
    cdn_free(x.d);
    cdn_free(x.order);
    cdn_free(x.tmp);
    return rc;
}

/* ---- Subjects. ---- */

typedef struct gdist {
    float d;
    uint16_t g;
} gdist_t;

static int cmp_gdist(const void *a, const void *b)
{
    float x = ((const gdist_t *)a)->d, y = ((const gdist_t *)b)->d;
    return (x > y) - (x < y);
}

static const unsigned level_first[3] = {0, PERM_TEAMS, PERM_TEAMS + PERM_DEPTS};
static const unsigned level_count[3] = {PERM_TEAMS, PERM_DEPTS, PERM_DIVS};

/* The topical subjects of query q: the groups nearest (aligned) and farthest (misaligned). */
static void topical_subjects(perm_world_t *w, size_t q, gdist_t *gd)
{
    const float *qv = w->c.queries + q * w->c.dim;
    for (int s = 0; s < PERM_SHARES; s++) {
        int lv = perm_shares[s].level, cnt = perm_shares[s].count;
        unsigned nl = level_count[lv];
        for (unsigned j = 0; j < nl; j++) {
            gd[j].g = (uint16_t)(level_first[lv] + j);
            gd[j].d = vec_l2sq(qv, w->centroid + (size_t)gd[j].g * w->c.dim, w->c.dim);
        }
        qsort(gd, nl, sizeof *gd, cmp_gdist);
        for (int j = 0; j < cnt; j++) {
            w->held[PERM_ALIGNED * w->c.nq + q][s][j] = gd[j].g;
            w->held[PERM_MISALIGNED * w->c.nq + q][s][j] = gd[nl - 1 - (unsigned)j].g;
        }
    }
}

int perm_choose_subjects(perm_world_t *w, cdn_err_t *err)
{
    uint64_t seed = w->o.seed ^ 0x5b1ec7;
    gdist_t *gd = cdn_malloc(PERM_TEAMS * sizeof *gd);
    w->held = cdn_calloc(PERM_LAYOUTS * w->c.nq, sizeof *w->held);
    if (!gd || !w->held) {
        cdn_free(gd);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory choosing subjects");
    }
    for (size_t q = 0; q < w->c.nq; q++) {
        for (int s = 0; s < PERM_SHARES; s++) {
            int lv = perm_shares[s].level, cnt = perm_shares[s].count;
            uint16_t *h = w->held[PERM_RANDOM * w->c.nq + q][s];
            for (int j = 0; j < cnt; j++) { /* distinct random groups of the level */
                int dup;
                do {
                    h[j] = (uint16_t)(level_first[lv] + bench_rng_next(&seed) % level_count[lv]);
                    dup = 0;
                    for (int i = 0; i < j; i++)
                        dup |= h[i] == h[j];
                } while (dup);
            }
        }
        topical_subjects(w, q, gd);
    }
    cdn_free(gd);
    return CDN_OK;
}
