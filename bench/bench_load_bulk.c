/* bench_load_bulk.c: loading documents for `cordon bench load`: _bulk requests from concurrent
 * writers (the corpus, and the ingest rows with 1, 2, 4 writers into fresh indexes), and the
 * same documents through cordon_put in process into a fresh data directory, the C API's rate
 * that the HTTP rows are read against; then a 1-hit search through the C API on that copy.
 * Relies on bench_http, bench_load_data, jansson and cordon.h. */
#include "bench_load_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct bulk {
    load_run_t *r;
    const load_docs_t *d;
    const cdn_buf_t *bodies;
    char path[CORDON_NAME_MAX + 16];
    size_t nbatches;
    atomic_size_t next;
    atomic_long errors;
    atomic_int fatal, reported;
} bulk_t;

typedef struct writer {
    bulk_t *b;
    load_lat_t lat;
    pthread_t th;
} writer_t;

/* 0 when the _bulk response says every item went in; else prints the first failure once. */
static int bulk_ok(bulk_t *b, const bench_http_resp_t *resp)
{
    json_t *j = resp->status == 200 ? json_loadb(resp->body, resp->body_len, 0, NULL) : NULL;
    int ok = j && json_is_false(json_object_get(j, "errors"));
    if (!ok && !atomic_exchange(&b->reported, 1)) {
        json_t *items = json_object_get(j, "items"), *it;
        size_t i;
        const char *why = NULL;
        json_array_foreach(items, i, it)
        {
            json_t *e = json_object_get(json_object_get(it, "index"), "error");
            if (e && !why)
                why = json_string_value(json_object_get(e, "reason"));
        }
        fprintf(stderr, "cordon bench load: %s: status %d: %.300s\n", b->path, resp->status,
                why ? why : resp->body);
    }
    json_decref(j);
    return ok ? 0 : -1;
}

static void *writer_main(void *arg)
{
    writer_t *w = arg;
    bulk_t *b = w->b;
    bench_http_t c;
    cdn_buf_t own;
    bench_http_init(&c, b->r->srv.host, b->r->srv.port);
    c.timeout_s = 900;
    cdn_buf_init(&own, (size_t)1 << 31);
    while (!atomic_load(&b->fatal)) {
        size_t i = atomic_fetch_add(&b->next, 1);
        const cdn_buf_t *body = b->bodies ? &b->bodies[i] : &own;
        bench_http_resp_t resp;
        if (i >= b->nbatches)
            break;
        if (!b->bodies) {
            load_batch_t bt;
            own.len = 0;
            if (load_batch_make(b->d, i, &bt) || load_batch_ndjson(b->d, &bt, &own)) {
                fprintf(stderr, "cordon bench load: out of memory building batch %zu\n", i);
                atomic_store(&b->fatal, 1);
            }
            load_batch_free(&bt);
            if (atomic_load(&b->fatal))
                break;
        }
        double t0 = load_now_s();
        if (bench_http_request(&c, "POST", b->path, b->r->srv.admin, body->data, body->len,
                               &resp)) {
            fprintf(stderr, "cordon bench load: POST %s: %s\n", b->path, c.err);
            atomic_store(&b->fatal, 1);
            break;
        }
        load_lat_push(&w->lat, (load_now_s() - t0) * 1e3);
        if (bulk_ok(b, &resp))
            atomic_fetch_add(&b->errors, 1);
    }
    cdn_buf_free(&own);
    bench_http_free(&c);
    return NULL;
}

int load_bulk(load_run_t *r, const load_docs_t *d, const cdn_buf_t *bodies, const char *index,
              size_t writers, load_row_t *row)
{
    bulk_t b = {.r = r, .d = d, .bodies = bodies};
    writer_t w[LOAD_MAX_SETTINGS * 4];
    load_lat_t all = {0};
    size_t started = 0;
    if (writers > sizeof w / sizeof *w)
        writers = sizeof w / sizeof *w;
    snprintf(b.path, sizeof b.path, "/%s/_bulk", index);
    b.nbatches = (d->n + d->batch - 1) / d->batch;
    double cpu0 = load_server_cpu_s(&r->srv), t0 = load_now_s();
    for (size_t i = 0; i < writers; i++) {
        w[i] = (writer_t){.b = &b};
        if (pthread_create(&w[i].th, NULL, writer_main, &w[i]) == 0)
            started++;
    }
    for (size_t i = 0; i < started; i++) {
        pthread_join(w[i].th, NULL);
        load_lat_merge(&all, &w[i].lat);
    }
    double secs = load_now_s() - t0, cpu1 = load_server_cpu_s(&r->srv);
    *row = (load_row_t){.target = "bulk",
                        .via = "http",
                        .readable = d->readable,
                        .users = writers,
                        .rate = secs > 0 ? (double)d->n / secs : 0,
                        .requests = (long)all.n,
                        .errors = atomic_load(&b.errors),
                        .cpu_ms = cpu0 >= 0 ? (cpu1 - cpu0) * 1e3 / ((double)d->n / 1e3) : -1};
    row->p50_ms = load_lat_quantile(&all, 0.50);
    row->p99_ms = load_lat_quantile(&all, 0.99);
    load_lat_free(&all);
    return atomic_load(&b.fatal) || started < writers ? -1 : 0;
}

/* ---- The same documents through the C API. ---- */

typedef struct capi {
    cordon_t *db;
    load_batch_t *bt;
    cordon_chunk *chunks;
    cordon_field *fields;
    size_t nb;
    char dir[4200];
} capi_t;

static int capi_open(load_run_t *r, capi_t *c)
{
    static char ops[LOAD_MODEL_OPS][LOAD_OP_MAX];
    static const char *const text[] = {"title", "text"};
    const cordon_meta_field meta[] = {{"allowed_groups", CORDON_META_KEYWORD},
                                      {"denied_groups", CORDON_META_KEYWORD}};
    cordon_collection_spec sp = {.name = "bulk",
                                 .dim = r->o.dim,
                                 .metric = CORDON_METRIC_COSINE,
                                 .text_fields = text,
                                 .n_text_fields = 2,
                                 .acl_field = "allowed_groups",
                                 .meta_fields = meta,
                                 .n_meta_fields = 2,
                                 .int8_scan = 1};
    cordon_error e = {0};
    snprintf(c->dir, sizeof c->dir, "%s/cordon-bench-load-c.XXXXXX", r->o.dir);
    if (!mkdtemp(c->dir)) {
        c->dir[0] = '\0';
        return fprintf(stderr, "cordon bench load: cannot create a directory in %s\n", r->o.dir),
               -1;
    }
    size_t len = strlen(c->dir);
    snprintf(c->dir + len, sizeof c->dir - len, "/data");
    if (cordon_open(c->dir, NULL, &c->db, &e) || cordon_collection_create(c->db, &sp, &e))
        return fprintf(stderr, "cordon bench load: C API: %s\n", e.message), -1;
    load_model_ops(ops);
    for (size_t i = 0; i < LOAD_MODEL_OPS; i++)
        if (cordon_model_apply(c->db, ops[i], NULL, &e))
            return fprintf(stderr, "cordon bench load: C API: %s: %s\n", ops[i], e.message), -1;
    return 0;
}

static void capi_close(capi_t *c)
{
    for (size_t i = 0; c->bt && i < c->nb; i++)
        load_batch_free(&c->bt[i]);
    free(c->bt);
    free(c->chunks);
    free(c->fields);
    cordon_close(c->db);
    if (c->dir[0]) {
        char cmd[sizeof c->dir + 16];
        *strrchr(c->dir, '/') = '\0'; /* the mkdtemp directory, data/ inside it */
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "cordon bench load: could not remove %s\n", c->dir);
    }
}

/* cordon_put of every batch of r->bulk, one writer, the batches built beforehand. */
static int capi_put(load_run_t *r, capi_t *c, load_row_t *row)
{
    const load_docs_t *d = &r->bulk;
    load_lat_t lat = {0};
    cordon_error e = {0};
    int rc = 0;
    c->nb = (d->n + d->batch - 1) / d->batch;
    c->bt = calloc(c->nb, sizeof *c->bt);
    c->chunks = calloc(d->batch, sizeof *c->chunks);
    c->fields = calloc(2 * d->batch, sizeof *c->fields);
    if (!c->bt || !c->chunks || !c->fields)
        return -1;
    for (size_t i = 0; i < c->nb; i++)
        if (load_batch_make(d, i, &c->bt[i]))
            return -1;
    double t0 = load_now_s();
    for (size_t i = 0; !rc && i < c->nb; i++) {
        load_batch_chunks(&c->bt[i], d->dim, c->chunks, c->fields);
        double t1 = load_now_s();
        if ((rc = cordon_put(c->db, "bulk", c->chunks, c->bt[i].n, NULL, &e)) != 0)
            fprintf(stderr, "cordon bench load: cordon_put: %s\n", e.message);
        load_lat_push(&lat, (load_now_s() - t1) * 1e3);
    }
    double secs = load_now_s() - t0;
    *row = (load_row_t){.target = "bulk",
                        .via = "c",
                        .readable = d->readable,
                        .users = 1,
                        .rate = secs > 0 ? (double)d->n / secs : 0,
                        .requests = (long)lat.n,
                        .errors = rc != 0,
                        .cpu_ms = -1};
    row->p50_ms = load_lat_quantile(&lat, 0.5);
    row->p99_ms = load_lat_quantile(&lat, 0.99);
    load_lat_free(&lat);
    return rc ? -1 : 0;
}

/* The 1-hit kNN search of the HTTP search1 row, in process, as subject 0, for --seconds. */
static void capi_search1(load_run_t *r, capi_t *c, const float *queries, load_row_t *row)
{
    char sub[32];
    load_subject_name(0, 0, sub, sizeof sub);
    cordon_subject s = {.subject_id = sub};
    load_lat_t lat = {0};
    *row = (load_row_t){
        .target = "search1", .via = "c", .readable = r->bulk.readable, .users = 1, .cpu_ms = -1};
    double t0 = load_now_s(), end = t0 + r->o.seconds, t1 = t0;
    for (size_t n = 0; t1 < end; n++) {
        cordon_query q = {.vector = queries + (n % LOAD_QUERIES) * r->o.dim,
                          .k = 1,
                          .with_records = 1,
                          .count_total = 1};
        cordon_result *res = NULL;
        double a = load_now_s();
        int rc = cordon_search(c->db, "bulk", &s, &q, &res, NULL);
        t1 = load_now_s();
        if (rc)
            row->errors++;
        for (size_t i = 0; !rc && i < res->n_hits; i++) {
            row->checked++;
            if (!load_docs_may_read(&r->bulk, res->hits[i].id, strlen(res->hits[i].id), 0, 0))
                row->leaks++;
        }
        cordon_result_free(res);
        if (!rc && t1 <= end) {
            load_lat_push(&lat, (t1 - a) * 1e3);
            row->requests++;
        }
    }
    row->rate = (double)row->requests / r->o.seconds;
    row->p50_ms = load_lat_quantile(&lat, 0.5);
    row->p99_ms = load_lat_quantile(&lat, 0.99);
    load_lat_free(&lat);
}

int load_ingest_rows(load_run_t *r, bench_http_t *admin, const float *queries)
{
    size_t nb = (r->bulk.n + r->bulk.batch - 1) / r->bulk.batch;
    cdn_buf_t *bodies = calloc(nb, sizeof *bodies);
    capi_t c = {0};
    load_row_t row;
    int rc = bodies ? 0 : -1;
    for (size_t i = 0; !rc && i < nb; i++) { /* built once: the writers only send */
        load_batch_t bt;
        cdn_buf_init(&bodies[i], (size_t)1 << 31);
        rc = load_batch_make(&r->bulk, i, &bt) || load_batch_ndjson(&r->bulk, &bt, &bodies[i]);
        load_batch_free(&bt);
    }
    for (size_t k = 0; !rc && k < r->o.n_writers; k++) {
        char name[CORDON_NAME_MAX + 1];
        snprintf(name, sizeof name, "%s-bulk%zu", r->o.index, r->o.writers[k]);
        rc = load_index_create(r, admin, name);
        if (!rc && (rc = load_bulk(r, &r->bulk, bodies, name, r->o.writers[k], &row)) == 0)
            load_row_add(r, &row);
        if (!rc && !r->search1_index[0])
            snprintf(r->search1_index, sizeof r->search1_index, "%s", name);
    }
    for (size_t i = 0; bodies && i < nb; i++)
        cdn_buf_free(&bodies[i]);
    free(bodies);
    if (!rc && (rc = capi_open(r, &c)) == 0 && (rc = capi_put(r, &c, &row)) == 0) {
        load_row_add(r, &row);
        if (r->o.targets & LOAD_T_OVERHEAD) {
            capi_search1(r, &c, queries, &row);
            load_row_add(r, &row);
        }
    }
    capi_close(&c);
    return rc;
}
