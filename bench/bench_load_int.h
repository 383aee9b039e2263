/* bench_load_int.h: what the files of `cordon bench load` share: options, the server it talks
 * to, the run's state and its result rows. bench_load.c runs the phases; bench_load_srv.c starts
 * or reaches the server and sets it up; bench_load_bulk.c loads documents over _bulk and through
 * the C API. Relies on bench_http and bench_load_data. */
#ifndef CDN_BENCH_LOAD_INT_H
#define CDN_BENCH_LOAD_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

#include "bench_http.h"
#include "bench_load_data.h"

#define LOAD_MAX_USERS LOAD_SUBJECTS /* one subject (and key) per user */
#define LOAD_MAX_SETTINGS 16
#define LOAD_MAX_ROWS 64

typedef struct load_opts {
    size_t size, batch, bulk_docs, load_writers;
    uint32_t dim;
    double readable, seconds;
    size_t users[LOAD_MAX_SETTINGS], n_users;
    size_t writers[LOAD_MAX_SETTINGS], n_writers;
    int targets;        /* LOAD_T_* bits */
    size_t authz_batch; /* checks per authz-batch request */
    const char *url, *key, *dir, *index, *source;
    int keep, reuse, json, leak_selftest;
    uint64_t seed;
} load_opts_t;

/* The server: a child `cordon serve` on a temporary data directory, or one at --url. */
typedef struct load_server {
    pid_t pid;       /* 0: not ours */
    int out_fd;      /* the child's stdout */
    char base[4096]; /* our temporary directory (data/, serve.log), "" when remote */
    char host[256], port[16];
    char admin[256]; /* the admin key's Authorization value */
} load_server_t;

/* One line of the results. */
typedef struct load_row {
    const char *target; /* knn, match, hybrid, retrieve, bulk, root, search1, authz, ... */
    const char *via;    /* http or c */
    double readable;
    size_t users; /* users, or writers for bulk */
    double rate;  /* requests/s, or documents/s for bulk */
    double p50_ms, p95_ms, p99_ms;
    long requests, errors, checked, leaks;
    long user_min, user_max; /* requests of the least and the most served user */
    double cpu_ms;           /* server CPU per request (bulk: per 1,000 documents); < 0 unknown */
} load_row_t;

typedef struct load_run {
    load_opts_t o;
    load_server_t srv;
    bench_gen_t gen;
    load_docs_t docs;                 /* the searched corpus */
    load_docs_t bulk;                 /* the documents of the ingest measurement */
    char auth[2][LOAD_SUBJECTS][200]; /* [full][subject]: Authorization values */
    char key_id[2][LOAD_SUBJECTS][64];
    char made[LOAD_MAX_SETTINGS + 1][CORDON_NAME_MAX + 1]; /* indexes this run created */
    size_t n_made;
    char search1_index[CORDON_NAME_MAX + 1];
    load_row_t rows[LOAD_MAX_ROWS];
    size_t n_rows;
    double load_s, load_docs_per_s;
    long warmup_leaks, warmup_errors; /* seen in the warm-ups, which make no row */
} load_run_t;

/* What the benchmark measures (--target). */
enum {
    LOAD_T_KNN = 1,
    LOAD_T_MATCH = 2,
    LOAD_T_HYBRID = 4,
    LOAD_T_RETRIEVE = 8,      /* the knn through /v1/collections/{c}/retrieve */
    LOAD_T_CONTEXT = 16,      /* retrieve of 20 hits, then the same through /context */
    LOAD_T_BULK = 32,         /* _bulk ingest beside cordon_put */
    LOAD_T_OVERHEAD = 64,     /* GET / and the 1-hit search */
    LOAD_T_AUTHZ = 128,       /* POST /api/auth/is-authorized on the large catalog */
    LOAD_T_AUTHZ_BATCH = 256, /* its batch form */
    LOAD_T_CORPUS = LOAD_T_KNN | LOAD_T_MATCH | LOAD_T_HYBRID | LOAD_T_RETRIEVE | LOAD_T_CONTEXT,
};

/* Latencies of one thread, then of a phase. */
typedef struct load_lat {
    double *v;
    size_t n, cap;
} load_lat_t;

int load_lat_push(load_lat_t *l, double ms);
/* Moves src's values into dst (src is emptied). */
int load_lat_merge(load_lat_t *dst, load_lat_t *src);
/* The q quantile (sorts l). */
double load_lat_quantile(load_lat_t *l, double q);
void load_lat_free(load_lat_t *l);

double load_now_s(void);
void load_row_add(load_run_t *r, const load_row_t *row);

/* ---- bench_load_users.c: concurrent users ---- */

typedef struct load_user load_user_t;

/* Checks the 200 answer to bodies[body]: counts what it checked in u->checked and what it
 * was shown or allowed that it must not have been in u->leaks; -1 for an answer that is
 * wrong otherwise (counted as an error). */
typedef int (*load_check_fn)(load_user_t *u, size_t body, const bench_http_resp_t *resp);

typedef struct load_phase {
    load_run_t *r;
    const char *target, *method;
    char path[CORDON_NAME_MAX + 32];
    char **bodies; /* nbodies request bodies, or NULL (GET /) */
    size_t nbodies;
    size_t per_user;         /* 0: the users share the bodies; else user i sends its own per_user
                              * bodies (i * per_user onwards) in turn */
    size_t per_request;      /* what one request counts for in the rate (checks of a batch); 0: 1 */
    load_check_fn check;     /* NULL: a 200 is enough */
    const load_docs_t *docs; /* for load_check_hits */
    int full;                /* the users are the subjects that read everything */
    int key_full; /* 1: those subjects' keys (full, or a selftest); 0: the partial ones'; -1: the
                   * admin key (the bodies name their subjects) */
    size_t users;
    double seconds, end;
    atomic_int go, ready, reported;
} load_phase_t;

struct load_user {
    load_phase_t *ph;
    int idx;
    load_lat_t lat;
    long requests, errors, checked, leaks;
    pthread_t th;
};

/* Runs ph->users users for ph->seconds; fills row (the rate counts per_request units). */
int load_run_users(load_phase_t *ph, load_row_t *row);
/* Frees n bodies (each cdn_malloc'd, as cdn_buf_t data) and the array (malloc'd). */
void load_bodies_free(char **bodies, size_t n);
/* A check for searches: every hit against ph->docs's ACLs for the user's subject. */
int load_check_hits(load_user_t *u, size_t body, const bench_http_resp_t *resp);

/* ---- bench_load_srv.c ---- */
/* Starts `cordon serve` (the binary beside this program) on a new directory under dir. */
int load_server_start(load_server_t *s, const char *dir);
/* Targets the server at url with the admin key ID:SECRET. */
int load_server_remote(load_server_t *s, const char *url, const char *key);
/* Stops our child and removes its directory (unless keep); nothing for a remote server. */
void load_server_stop(load_server_t *s, int keep);
/* The server's CPU seconds (user + system) so far: our child's from /proc, a remote one's from
 * its metrics (cordon_process_cpu_seconds_total); -1 unknown. */
double load_server_cpu_s(const load_server_t *s);

/* One admin request; the parsed body (decref it) when the status is 2xx, else NULL after
 * printing what the server said. body may be NULL. */
json_t *load_admin(load_server_t *s, bench_http_t *c, const char *method, const char *path,
                   const char *body);
/* The documents index name holds, as a subject reading everything sees them (after
 * load_setup_subjects); -1 when it does not exist, -2 after printing any other answer. */
long load_index_count(load_run_t *r, bench_http_t *c, const char *name);
/* Creates index name with the vector, title, text and ACL mappings. */
int load_index_create(load_run_t *r, bench_http_t *c, const char *name);
/* The permission model and one key per subject (r->auth). */
int load_setup_subjects(load_run_t *r, bench_http_t *c);
/* Deletes the indexes this run made and revokes its keys (unless --keep). */
void load_cleanup(load_run_t *r, bench_http_t *c);

/* ---- bench_load_bulk.c ---- */
/* Sends every batch of d to index over _bulk from writers threads: bodies[b] for batch b when
 * bodies is given, else each writer builds its batches as it goes. Fills row's rate
 * (documents/s), latencies (per request), errors (failed requests, or requests with a failed
 * item) and server CPU per 1,000 documents. 0, or -1 when a request could not be sent. */
int load_bulk(load_run_t *r, const load_docs_t *d, const cdn_buf_t *bodies, const char *index,
              size_t writers, load_row_t *row);
/* The ingest rows: bulk with each --writers count into a fresh index, then the same documents
 * through cordon_put into a fresh collection of a fresh data directory (the C row), then the
 * 1-hit search through the C API (queries: LOAD_QUERIES vectors); r->search1_index names the
 * index the HTTP 1-hit search reads. */
int load_ingest_rows(load_run_t *r, bench_http_t *admin, const float *queries);

/* ---- bench_load_authz.c ---- */
/* Loads the large catalog of `cordon bench authz` through /_cordon/model, then runs the authz
 * and authz-batch rows that r->o.targets asks for: each user a subject of the catalog, every
 * decision checked against the reason it must give. */
int load_authz_rows(load_run_t *r, bench_http_t *admin);

#endif
