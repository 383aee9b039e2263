/* bench_load_users.c: the concurrent users of `cordon bench load`: threads, each with its own
 * keep-alive connection and key, sending a phase's requests for a fixed time, checking every
 * answer (the hits of a search against the benchmark's own ACLs, or a decision against the
 * answer it must be) and timing each; and the latencies and rows they make. Relies on
 * bench_http, bench_load_data and jansson. */
#include "base/mem.h"
#include "bench_load_int.h"
#include "bench_util.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- Latencies and rows. ---- */

double load_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int load_lat_push(load_lat_t *l, double ms)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        double *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = ms;
    return 0;
}

int load_lat_merge(load_lat_t *dst, load_lat_t *src)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < src->n; i++)
        rc = load_lat_push(dst, src->v[i]);
    load_lat_free(src);
    return rc;
}

double load_lat_quantile(load_lat_t *l, double q)
{
    if (!l->n)
        return 0;
    qsort(l->v, l->n, sizeof *l->v, bench_cmp_double);
    size_t i = (size_t)(q * (double)l->n);
    return l->v[i < l->n ? i : l->n - 1];
}

void load_lat_free(load_lat_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

void load_row_add(load_run_t *r, const load_row_t *row)
{
    if (r->n_rows < LOAD_MAX_ROWS)
        r->rows[r->n_rows++] = *row;
}

/* ---- Concurrent users. ---- */

/* Checks a search's hits against the subject's ACL: Elasticsearch's hits.hits[]._id, or the
 * cordon API's hits[].id; -1 when the answer does not parse. */
int load_check_hits(load_user_t *u, size_t body, const bench_http_resp_t *resp)
{
    (void)body;
    load_phase_t *ph = u->ph;
    json_t *j = json_loadb(resp->body, resp->body_len, 0, NULL), *h;
    json_t *hits = json_object_get(j, "hits");
    const char *id_key = json_is_array(hits) ? "id" : "_id";
    if (json_is_object(hits))
        hits = json_object_get(hits, "hits");
    size_t i;
    if (!json_is_array(hits)) {
        json_decref(j);
        return -1;
    }
    json_array_foreach(hits, i, h)
    {
        json_t *id = json_object_get(h, id_key);
        u->checked++;
        if (!json_is_string(id) || !load_docs_may_read(ph->docs, json_string_value(id),
                                                       json_string_length(id), u->idx, ph->full)) {
            if (u->leaks++ == 0)
                fprintf(stderr, "cordon bench load: LEAK: %s user %d was shown %s\n", ph->target,
                        u->idx, json_is_string(id) ? json_string_value(id) : "(no id)");
        }
    }
    json_decref(j);
    return 0;
}

static void *user_main(void *arg)
{
    load_user_t *u = arg;
    load_phase_t *ph = u->ph;
    bench_http_t c;
    const char *auth = ph->key_full < 0 ? ph->r->srv.admin : ph->r->auth[ph->key_full][u->idx];
    bench_http_init(&c, ph->r->srv.host, ph->r->srv.port);
    c.timeout_s = 120;
    int ok = bench_http_connect(&c) == 0;
    if (!ok) {
        fprintf(stderr, "cordon bench load: user %d: %s\n", u->idx, c.err);
        u->errors++;
    }
    atomic_fetch_add(&ph->ready, 1);
    while (!atomic_load(&ph->go)) {
        struct timespec nap = {0, 100000};
        nanosleep(&nap, NULL);
    }
    for (size_t n = 0; ok; n++) {
        size_t bi = !ph->bodies ? 0
                    : ph->per_user
                        ? ((size_t)u->idx * ph->per_user + n % ph->per_user) % ph->nbodies
                        : (n * 7 + (size_t)u->idx * 31) % ph->nbodies;
        const char *body = ph->bodies ? ph->bodies[bi] : NULL;
        bench_http_resp_t resp;
        double t0 = load_now_s();
        if (t0 >= ph->end)
            break;
        int rc = bench_http_request(&c, ph->method, ph->path, auth, body, body ? strlen(body) : 0,
                                    &resp);
        double t1 = load_now_s();
        if (rc == 0 && resp.status == 200 && (!ph->check || ph->check(u, bi, &resp) == 0)) {
            if (t1 <= ph->end) { /* only what finished inside the measured window counts */
                u->requests++;
                load_lat_push(&u->lat, (t1 - t0) * 1e3);
            }
            continue;
        }
        u->errors++;
        if (!atomic_exchange(&ph->reported, 1))
            fprintf(stderr, "cordon bench load: %s %s (user %d): %s%.300s\n", ph->method, ph->path,
                    u->idx, rc ? c.err : "", rc ? "" : resp.body);
        if (rc && bench_http_connect(&c)) /* the connection is gone: try one more */
            break;
    }
    bench_http_free(&c);
    return NULL;
}

/* Runs ph->users users for ph->seconds; fills row. */
int load_run_users(load_phase_t *ph, load_row_t *row)
{
    load_user_t us[LOAD_MAX_USERS];
    load_lat_t all = {0};
    size_t started = 0;
    atomic_store(&ph->reported, 0);
    atomic_store(&ph->go, 0);
    atomic_store(&ph->ready, 0);
    for (size_t i = 0; i < ph->users; i++) {
        us[i] = (load_user_t){.ph = ph, .idx = (int)i};
        if (pthread_create(&us[i].th, NULL, user_main, &us[i]))
            break;
        started++;
    }
    while (atomic_load(&ph->ready) < (int)started) { /* connected before the clock starts */
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
    double cpu0 = load_server_cpu_s(&ph->r->srv);
    ph->end = started < ph->users ? 0 : load_now_s() + ph->seconds;
    atomic_store(&ph->go, 1);
    *row = (load_row_t){.target = ph->target,
                        .via = "http",
                        .readable = ph->full || !ph->docs ? 1.0 : ph->docs->readable,
                        .users = ph->users};
    for (size_t i = 0; i < started; i++) {
        pthread_join(us[i].th, NULL);
        row->requests += us[i].requests;
        row->errors += us[i].errors;
        row->checked += us[i].checked;
        row->leaks += us[i].leaks;
        if (i == 0 || us[i].requests < row->user_min)
            row->user_min = us[i].requests;
        if (us[i].requests > row->user_max)
            row->user_max = us[i].requests;
        load_lat_merge(&all, &us[i].lat);
    }
    double cpu1 = load_server_cpu_s(&ph->r->srv);
    row->rate =
        (double)row->requests * (double)(ph->per_request ? ph->per_request : 1) / ph->seconds;
    row->p50_ms = load_lat_quantile(&all, 0.50);
    row->p95_ms = load_lat_quantile(&all, 0.95);
    row->p99_ms = load_lat_quantile(&all, 0.99);
    row->cpu_ms = cpu0 >= 0 && row->requests ? (cpu1 - cpu0) * 1e3 / (double)row->requests : -1;
    load_lat_free(&all);
    return started < ph->users ? -1 : 0;
}

void load_bodies_free(char **bodies, size_t n)
{
    for (size_t i = 0; bodies && i < n; i++)
        cdn_free(bodies[i]);
    free(bodies);
}
