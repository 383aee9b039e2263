/* perm_out.c: the output of `cordon bench permissions`: the readable table, the JSON object, and
 * the dump that bench/peers/peers.py reads so the peers see the same vectors, permissions and
 * ground truth. Relies on perm_int.h and stdio. */
#include "perm_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const perm_plan_names[PERM_PLANS] = {
    "exact", "hnsw-filtered", "hnsw-unfiltered", "hnsw+exact", "exact-far", "scan-1bit", "other"};

static void print_rows(const perm_row_t *rows, size_t n)
{
    printf("%-10s %7s %-11s %7s %6s %8s %8s %8s %10s  %s\n", "layout", "share", "strategy",
           "recall", "leaks", "complete", "p50 ms", "p95 ms", "candidates", "plans");
    for (size_t i = 0; i < n; i++) {
        const perm_row_t *r = &rows[i];
        char plans[128] = "";
        size_t len = 0;
        for (int p = 0; p < PERM_PLANS; p++)
            if (r->plans[p] && len < sizeof plans)
                len +=
                    (size_t)snprintf(plans + len, sizeof plans - len, "%s%s:%llu", len ? " " : "",
                                     perm_plan_names[p], (unsigned long long)r->plans[p]);
        printf("%-10s %6.1f%% %-11s %7.4f %6llu %8.3f %8.3f %8.3f %10.0f  %s\n",
               perm_layout_names[r->layout], perm_shares[r->share].frac * 100,
               perm_strat_names[r->strat], r->recall, (unsigned long long)r->leaks,
               r->complete_rate, r->p50_ms, r->p95_ms, r->candidates, plans);
    }
}

static void print_table(const perm_world_t *w, const perm_report_t *rep)
{
    const perm_row_t *rows = rep->rows;
    size_t n = rep->n;
    double load_s = rep->load_s, reopen_s = rep->reopen_s, rss_mb = rep->rss_mb;
    printf("permissions benchmark: %s, %zu x %u (%s), %zu queries, k=%d\n", w->c.name, w->c.n,
           w->c.dim, w->c.metric == CORDON_METRIC_L2 ? "l2" : "cosine", w->c.nq, PERM_K);
    if (load_s < 0)
        printf("reused the loaded data directory, reopen %.2f s, RSS %.0f MB\n", reopen_s, rss_mb);
    else
        printf("load %.1f s (cordon_put in batches of 10,000, HNSW built), reopen %.2f s, "
               "RSS %.0f MB\n",
               load_s, reopen_s, rss_mb);
    printf("engine RSS (the benchmark's own corpus, truth and subjects left out): %.0f MB after "
           "the reopen, %.0f MB after every query; file pages mapped from the page cache %.0f "
           "and %.0f MB of it\n",
           rep->engine_rss_open_mb, rep->engine_rss_end_mb, rep->file_open_mb, rep->file_end_mb);
    if (rep->memcg->on)
        printf("engine in a memory cgroup of %.0f MB from the reopen on (its memory and the page "
               "cache it read): peak %.0f MB, %.0f MB after every query, limit reached %llu "
               "times\n",
               rep->memcg->limit_mb, rep->memcg->peak_mb, rep->memcg->end_mb,
               (unsigned long long)rep->memcg->hits);
    if (rep->cold->ran) {
        printf("cold start: %.0f MB of the data directory dropped from the page cache (%.0f MB "
               "left); the first searches after the reopen:\n",
               rep->cold->cached_mb - rep->cold->left_mb, rep->cold->left_mb);
        print_rows(rep->cold->rows, PERM_SHARES);
        printf("then:\n");
    }
    printf("\n");
    print_rows(rows, n);
    printf("\nunfiltered (all-seeing subject, plain HNSW traversal, ef swept):\n");
    printf("%6s %7s %9s %8s %8s\n", "ef", "recall", "qps", "p50 ms", "p95 ms");
    for (size_t i = 0; i < rep->n_sweep; i++)
        printf("%6u %7.4f %9.1f %8.3f %8.3f\n", rep->sweep[i].ef, rep->sweep[i].recall,
               rep->sweep[i].qps, rep->sweep[i].p50_ms, rep->sweep[i].p95_ms);
}

/* The rows as JSON objects, comma-separated. */
static void json_rows(FILE *f, const perm_world_t *w, const perm_row_t *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const perm_row_t *r = &rows[i];
        fprintf(f,
                "%s{\"corpus\":\"%s\",\"layout\":\"%s\",\"readable\":%g,\"strategy\":\"%s\","
                "\"recall_at_10\":%.4f,\"leaks\":%llu,\"complete_rate\":%.4f,\"p50_ms\":%.4f,"
                "\"p95_ms\":%.4f,\"qps\":%.1f,\"candidates\":%.1f,\"readable_chunks\":%.1f,"
                "\"plans\":{",
                i ? "," : "", w->c.name, perm_layout_names[r->layout], perm_shares[r->share].frac,
                perm_strat_names[r->strat], r->recall, (unsigned long long)r->leaks,
                r->complete_rate, r->p50_ms, r->p95_ms, r->qps, r->candidates,
                (double)r->readable_sum / (double)w->c.nq);
        for (int p = 0, first = 1; p < PERM_PLANS; p++)
            if (r->plans[p]) {
                fprintf(f, "%s\"%s\":%llu", first ? "" : ",", perm_plan_names[p],
                        (unsigned long long)r->plans[p]);
                first = 0;
            }
        fprintf(f, "}}");
    }
}

static void print_json(FILE *f, const perm_world_t *w, const perm_report_t *rep)
{
    const perm_row_t *rows = rep->rows;
    size_t n = rep->n;
    double load_s = rep->load_s, reopen_s = rep->reopen_s, rss_mb = rep->rss_mb;
    fprintf(f,
            "{\"bench\":\"permissions\",\"corpus\":\"%s\",\"size\":%zu,\"dim\":%u,"
            "\"metric\":\"%s\",\"queries\":%zu,\"k\":%d,\"seed\":%llu,\"m\":%u,\"efc\":%u,"
            "\"ef\":%u,\"max_candidates\":%zu,\"exact_floats\":%llu,\"load_s\":%.3f,"
            "\"reused\":%s,\"reopen_s\":%.3f,\"rss_mb\":%.1f,\"engine_rss_open_mb\":%.1f,"
            "\"engine_rss_end_mb\":%.1f,\"engine_file_open_mb\":%.1f,"
            "\"engine_file_end_mb\":%.1f,\"rows\":[",
            w->c.name, w->c.n, w->c.dim, w->c.metric == CORDON_METRIC_L2 ? "l2" : "cosine", w->c.nq,
            PERM_K, (unsigned long long)w->o.seed, w->o.m, w->o.efc, w->o.ef, w->o.max_candidates,
            (unsigned long long)w->o.exact_floats, load_s, load_s < 0 ? "true" : "false", reopen_s,
            rss_mb, rep->engine_rss_open_mb, rep->engine_rss_end_mb, rep->file_open_mb,
            rep->file_end_mb);
    json_rows(f, w, rows, n);
    if (rep->cold->ran) {
        fprintf(f, "],\"cold_cache_dropped_mb\":%.1f,\"cold\":[",
                rep->cold->cached_mb - rep->cold->left_mb);
        json_rows(f, w, rep->cold->rows, PERM_SHARES);
    }
    if (rep->memcg->on)
        fprintf(f, "],\"memcg\":{\"limit_mb\":%.0f,\"peak_mb\":%.1f,\"end_mb\":%.1f,\"hits\":%llu",
                rep->memcg->limit_mb, rep->memcg->peak_mb, rep->memcg->end_mb,
                (unsigned long long)rep->memcg->hits);
    fprintf(f, "%s,\"unfiltered\":[", rep->memcg->on ? "}" : "]");
    for (size_t i = 0; i < rep->n_sweep; i++)
        fprintf(f,
                "%s{\"ef\":%u,\"recall_at_10\":%.4f,\"qps\":%.1f,\"p50_ms\":%.4f,"
                "\"p95_ms\":%.4f}",
                i ? "," : "", rep->sweep[i].ef, rep->sweep[i].recall, rep->sweep[i].qps,
                rep->sweep[i].p50_ms, rep->sweep[i].p95_ms);
    fprintf(f, "]}\n");
}

void perm_print(const perm_world_t *w, const perm_report_t *rep)
{
    if (w->o.json)
        print_json(stdout, w, rep);
    else
        print_table(w, rep);
    fflush(stdout);
    if (w->o.json_out) {
        FILE *f = fopen(w->o.json_out, "w");
        if (f)
            print_json(f, w, rep);
        if (!f || fclose(f))
            fprintf(stderr, "cordon bench permissions: cannot write %s\n", w->o.json_out);
    }
}

/* ---- The dump for the peers. ---- */

/* Closes a dump file once its bytes are on the disk. The dump is written before the engine's
 * timed searches: left to the kernel's writeback (188 MB for Fashion-MNIST), its writing went on
 * while they ran and slowed the first run of a set. Returns 0 on any failure. */
static int close_synced(FILE *f)
{
    int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    return fclose(f) == 0 && ok;
}

static int write_fvecs(const char *path, const float *v, size_t n, uint32_t dim)
{
    FILE *f = fopen(path, "wb");
    int ok = f != NULL;
    for (size_t i = 0; ok && i < n; i++)
        ok = fwrite(&dim, 4, 1, f) == 1 && fwrite(v + i * dim, 4, dim, f) == dim;
    if (f && !close_synced(f))
        ok = 0;
    return ok;
}

static int write_raw(const char *path, const void *p, size_t bytes)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(p, 1, bytes, f) == bytes;
    if (f && !close_synced(f))
        ok = 0;
    return ok;
}

/* Ground truth as int32 ids (-1 padded) and float32 distances, [layout][share][query][k]. */
static int write_truth(const perm_world_t *w, const char *dir)
{
    char path[4096];
    FILE *fi, *fd;
    int ok;
    snprintf(path, sizeof path, "%s/truth_ids.i32", dir);
    fi = fopen(path, "wb");
    snprintf(path, sizeof path, "%s/truth_dist.f32", dir);
    fd = fopen(path, "wb");
    ok = fi && fd;
    for (size_t i = 0; ok && i < (size_t)PERM_LAYOUTS * PERM_SHARES * w->c.nq; i++) {
        const perm_truth_t *t = &w->truth[i];
        int32_t ids[PERM_K];
        float d[PERM_K];
        for (int j = 0; j < PERM_K; j++) {
            ids[j] = (uint32_t)j < t->n ? (int32_t)t->ids[j] : -1;
            d[j] = (uint32_t)j < t->n ? t->dist[j] : 0;
        }
        ok = fwrite(ids, 4, PERM_K, fi) == PERM_K && fwrite(d, 4, PERM_K, fd) == PERM_K;
    }
    if (fi && !close_synced(fi))
        ok = 0;
    if (fd && !close_synced(fd))
        ok = 0;
    return ok;
}

static int write_meta(const perm_world_t *w, const char *dir)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof path, "%s/meta.json", dir);
    if (!(f = fopen(path, "w")))
        return 0;
    fprintf(f,
            "{\"corpus\":\"%s\",\"metric\":\"%s\",\"n\":%zu,\"dim\":%u,\"nq\":%zu,\"k\":%d,"
            "\"teams\":%d,\"depts\":%d,\"divs\":%d,\"max_held\":%d,\"layouts\":[",
            w->c.name, w->c.metric == CORDON_METRIC_L2 ? "l2" : "cosine", w->c.n, w->c.dim, w->c.nq,
            PERM_K, PERM_TEAMS, PERM_DEPTS, PERM_DIVS, PERM_MAX_HELD);
    for (int l = 0; l < PERM_LAYOUTS; l++)
        fprintf(f, "%s\"%s\"", l ? "," : "", perm_layout_names[l]);
    fprintf(f, "],\"shares\":[");
    for (int s = 0; s < PERM_SHARES; s++)
        fprintf(f, "%s{\"readable\":%g,\"level\":%d,\"count\":%d}", s ? "," : "",
                perm_shares[s].frac, perm_shares[s].level, perm_shares[s].count);
    fprintf(f, "],\"files\":{\"base\":\"base.fvecs\",\"queries\":\"queries.fvecs\","
               "\"team_random\":\"team_random.u16\",\"team_topical\":\"team_topical.u16\","
               "\"held\":\"held.u16 [layout][query][share][max_held]\","
               "\"truth_ids\":\"truth_ids.i32 [layout][share][query][k]\","
               "\"truth_dist\":\"truth_dist.f32 [layout][share][query][k]\"}}\n");
    return close_synced(f);
}

int perm_dump(const perm_world_t *w, const char *dir, cdn_err_t *err)
{
    char path[4096];
    int ok = mkdir(dir, 0755) == 0 || errno == EEXIST;
    snprintf(path, sizeof path, "%s/base.fvecs", dir);
    ok = ok && write_fvecs(path, w->c.base, w->c.n, w->c.dim);
    snprintf(path, sizeof path, "%s/queries.fvecs", dir);
    ok = ok && write_fvecs(path, w->c.queries, w->c.nq, w->c.dim);
    snprintf(path, sizeof path, "%s/team_random.u16", dir);
    ok = ok && write_raw(path, w->team[0], w->c.n * sizeof(uint16_t));
    snprintf(path, sizeof path, "%s/team_topical.u16", dir);
    ok = ok && write_raw(path, w->team[1], w->c.n * sizeof(uint16_t));
    snprintf(path, sizeof path, "%s/held.u16", dir);
    ok = ok && write_raw(path, w->held, (size_t)PERM_LAYOUTS * w->c.nq * sizeof *w->held);
    ok = ok && write_truth(w, dir) && write_meta(w, dir);
    return ok ? CDN_OK
              : cdn_err_set(err, CDN_ERR_IO,
                            "cannot write the dump under %s; give --dump a "
                            "writable directory",
                            dir);
}
