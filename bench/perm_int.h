/* perm_int.h: shared state of `cordon bench permissions` (bench_permissions.c, perm_data.c,
 * perm_truth.c, perm_out.c): corpora, the team hierarchy, subjects and ground truth.
 * Relies on include/cordon.h for the engine under test and base/err.h for messages. */
#ifndef CDN_BENCH_PERM_INT_H
#define CDN_BENCH_PERM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "bench_gen.h"
#include "cordon.h"

#define PERM_K 10
#define PERM_TEAMS 1000 /* ten teams to a department, ten departments to a division */
#define PERM_DEPTS 100
#define PERM_DIVS 10
#define PERM_GROUPS (PERM_TEAMS + PERM_DEPTS + PERM_DIVS) /* group g: team, dept, div */
#define PERM_SHARES 5
#define PERM_LAYOUTS 3
#define PERM_STRATS 5
#define PERM_MAX_HELD 10 /* groups a subject holds: 10 divisions at 100% */

enum { PERM_RANDOM = 0, PERM_ALIGNED = 1, PERM_MISALIGNED = 2 };
enum {
    PERM_AUTO = 0,
    PERM_PREFILTER = 1,
    PERM_POSTFILTER = 2,
    PERM_NAIVE = 3,
    PERM_UNPROTECTED = 4
};

/* A share readable and the fewest groups that express it. */
typedef struct perm_share {
    double frac;
    int level; /* 0 team, 1 department, 2 division */
    int count;
} perm_share_t;

extern const perm_share_t perm_shares[PERM_SHARES];
extern const char *const perm_layout_names[PERM_LAYOUTS];
extern const char *const perm_strat_names[PERM_STRATS];

typedef struct perm_opts {
    const char *corpus;   /* a BEIR directory, "fashion-mnist" or "generated" */
    const char *data_dir; /* engine data directory; NULL = a fresh one under /tmp */
    const char *dump_dir; /* NULL = no dump for the peers */
    const char *json_out; /* also write the JSON object here (NULL = no) */
    size_t size, queries; /* generated size; queries to use (0 = the corpus's default) */
    uint32_t dim, m, efc, ef;
    uint64_t seed, exact_floats;
    size_t max_candidates;
    unsigned strat_mask; /* bit i: measure perm_strat_names[i] */
    unsigned share_mask; /* bit i: measure the rows of perm_shares[i] */
    int json, selftest, keep, progress;
    int int8_scan;          /* cordon_collection_spec.int8_scan: 0 automatic, 1 always, -1 never */
    int cold;               /* drop the data directory from the page cache before the reopen */
    int warmup;             /* run every row once untimed before the measured pass */
    int compact;            /* compact the collection after loading (rows numbered by ACL) */
    double memory_limit_mb; /* > 0: reopen the engine in a memory cgroup of this size */
    bench_gen_kind_t gen;   /* generator of --corpus generated */
} perm_opts_t;

typedef struct perm_corpus {
    char name[64];
    cordon_metric metric; /* COSINE rows are unit length here already */
    float *base;          /* n x dim */
    float *queries;       /* nq x dim */
    size_t n, nq;
    uint32_t dim;
} perm_corpus_t;

/* Ground truth of one (layout, share, query): the exact top-k over the readable chunks. */
typedef struct perm_truth {
    uint32_t ids[PERM_K];
    float dist[PERM_K];
    uint32_t n;        /* min(k, readable) */
    uint64_t readable; /* chunks the subject may read */
} perm_truth_t;

typedef struct perm_world {
    perm_opts_t o;
    perm_corpus_t c;
    uint16_t *team[2]; /* per chunk: [0] random teams, [1] topical teams */
    /* held[layout * nq + query][share][j]: the groups a subject holds, perm_shares[share].count
     * of them (g < 1000 a team, < 1100 a department, else a division). */
    uint16_t (*held)[PERM_SHARES][PERM_MAX_HELD];
    float *centroid;     /* [PERM_GROUPS][dim]: mean of each topical group's chunks */
    perm_truth_t *truth; /* [layout][share][query] */
} perm_world_t;

/* The plans results name, as the table counts them; the last slot counts any other. */
#define PERM_PLANS 7
extern const char *const perm_plan_names[PERM_PLANS];

/* Statistics of one row of the table. */
typedef struct perm_row {
    int layout, share, strat;
    double recall, complete_rate, p50_ms, p95_ms, qps, candidates;
    uint64_t leaks, readable_sum;
    uint64_t plans[PERM_PLANS]; /* by perm_plan_names */
} perm_row_t;

/* perm_data.c */
int perm_corpus_load(const perm_opts_t *o, perm_corpus_t *c, cdn_err_t *err);
void perm_corpus_free(perm_corpus_t *c);
int perm_assign_teams(perm_world_t *w, cdn_err_t *err);
int perm_choose_subjects(perm_world_t *w, cdn_err_t *err);

/* perm_truth.c */
int perm_truth_compute(perm_world_t *w, cdn_err_t *err);
/* The bench's own distance (lower is nearer) between two rows of the corpus's metric. */
float perm_dist(const perm_corpus_t *c, const float *a, const float *b);
/* held flags for one subject: flags[g] = 1 for each group held. */
void perm_held_flags(const perm_world_t *w, int layout, int share, size_t q,
                     uint8_t flags[PERM_GROUPS]);
/* Whether chunk i is readable with these flags under the layout's teams. */
static inline int perm_readable(const perm_world_t *w, int layout, const uint8_t *flags, size_t i)
{
    unsigned t = w->team[layout == PERM_RANDOM ? 0 : 1][i];
    return flags[t] | flags[PERM_TEAMS + t / 10] | flags[PERM_TEAMS + PERM_DEPTS + t / 100];
}
/* The name of group g in the layout's principals, e.g. "topic-dept-12". */
void perm_group_name(int layout, unsigned g, char *buf, size_t size);
static inline perm_truth_t *perm_truth_at(const perm_world_t *w, int layout, int share, size_t q)
{
    return &w->truth[((size_t)layout * PERM_SHARES + (size_t)share) * w->c.nq + q];
}

/* One point of the unfiltered ef sweep. */
#define PERM_SWEEP_MAX 12
typedef struct perm_sweep {
    uint32_t ef;
    double recall, qps, p50_ms, p95_ms;
} perm_sweep_t;

/* perm_sweep.c: runs every query as the all-seeing principal `all` with a plain HNSW
 * traversal for ef = 10 ... 512 (stopping past recall 0.999); fills out[0..*n). */
int perm_sweep_unfiltered(const perm_world_t *w, cordon_t *db, const char *all, perm_sweep_t *out,
                          size_t *n);

/* perm_cold.c: drops every file under dir from the page cache (those the engine has mapped
 * and touched stay); *before_mb and *after_mb are the cached bytes found before and left. */
void perm_evict_dir(const char *dir, double *before_mb, double *after_mb);

/* The first searches after a cold reopen: one row per share of the random layout, strategy
 * auto, 100% first. */
typedef struct perm_cold {
    int ran;
    double cached_mb, left_mb; /* the directory in the page cache before and after the drop */
    perm_row_t rows[PERM_SHARES];
} perm_cold_t;

/* perm_memcg.c: the engine's own memory cgroup (--memory-limit). perm_memcg_enter makes a
 * group limited to limit_mb and moves the process into it: what the process allocates or
 * reads into the page cache from then on is charged to it. perm_memcg_read fills peak_mb,
 * end_mb (-1 where the kernel does not say) and hits (times the limit was reached);
 * perm_memcg_leave moves the process back to the group it came from and removes its own. */
typedef struct perm_memcg {
    int on, v2;
    char home[384], dir[128], procs[32]; /* the group the process came from, its own */
    double limit_mb, peak_mb, end_mb;
    uint64_t hits;
} perm_memcg_t;
int perm_memcg_enter(perm_memcg_t *m, double limit_mb, cdn_err_t *err);
void perm_memcg_read(perm_memcg_t *m);
void perm_memcg_leave(perm_memcg_t *m);

/* perm_out.c */
int perm_dump(const perm_world_t *w, const char *dir, cdn_err_t *err);
/* Results of one run, for printing. load_s < 0: the data directory was reused. */
typedef struct perm_report {
    const perm_row_t *rows;
    size_t n;
    const perm_sweep_t *sweep;
    size_t n_sweep;
    double load_s, reopen_s, rss_mb;
    /* Resident memory without the benchmark's own arrays, after the reopen and at the end,
     * and how much of it is file pages (float rows mapped from the page cache). */
    double engine_rss_open_mb, engine_rss_end_mb, file_open_mb, file_end_mb;
    const perm_cold_t *cold;
    const perm_memcg_t *memcg;
} perm_report_t;

/* Prints the table (or JSON with --format json) to stdout, and JSON to o.json_out if set. */
void perm_print(const perm_world_t *w, const perm_report_t *rep);

#endif
