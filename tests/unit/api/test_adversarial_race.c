/* test_adversarial_race.c: writes racing searches on other threads. ACL flips must be atomic
 * (a search sees the old or the new ACLs, never a mix) and immediate (a search that starts
 * after the write returned sees it); replacing a chunk must not hide it; deletes, drops and
 * lost group memberships must hold for every search that starts after they return.
 * Threads record violations; the main thread asserts after joining them.
 * Relies on cmocka, pthreads and tests/testutil.h. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <cmocka.h>

#include "cordon.h"
#include "testutil.h"

#define DIM 4
#define NREADERS 2

typedef struct shared {
    char dir[64];
    cordon_t *db;
    atomic_int done;
    atomic_ullong acked; /* what the writer has acknowledged so far (test-specific) */
    atomic_ullong acked2;
    uint64_t base_rev;
    atomic_int violations;
    atomic_ullong searches;
    char first[256]; /* the first violation, for the failure message */
    pthread_mutex_t lock;
} shared_t;

static void violation(shared_t *s, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&s->lock);
    if (atomic_fetch_add(&s->violations, 1) == 0) {
        va_start(ap, fmt);
        vsnprintf(s->first, sizeof s->first, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&s->lock);
}

static shared_t *open_shared(void)
{
    shared_t *s = calloc(1, sizeof *s);
    assert_non_null(tu_tmpdir(s->dir, sizeof s->dir));
    assert_int_equal(cordon_open(s->dir, NULL, &s->db, NULL), 0);
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

static void close_shared(shared_t *s)
{
    cordon_close(s->db);
    tu_rmrf(s->dir);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static void make(cordon_t *db, const char *name)
{
    const char *tf[] = {"body"};
    cordon_collection_spec spec = {.asserted_principals = 1,
                                   .name = name,
                                   .dim = DIM,
                                   .metric = CORDON_METRIC_L2,
                                   .text_fields = tf,
                                   .n_text_fields = 1};
    assert_int_equal(cordon_collection_create(db, &spec, NULL), 0);
}

static void run(shared_t *s, void *(*writer)(void *), void *(*reader)(void *))
{
    pthread_t w, r[NREADERS];
    for (int i = 0; i < NREADERS; i++)
        assert_int_equal(pthread_create(&r[i], NULL, reader, s), 0);
    /* The writer starts once a reader has searched: on a loaded machine it could otherwise
     * finish before any reader ran, and the race would not be tried. Bounded (5 s). */
    for (int t = 0; t < 50000 && atomic_load(&s->searches) == 0; t++)
        usleep(100);
    assert_int_equal(pthread_create(&w, NULL, writer, s), 0);
    pthread_join(w, NULL);
    for (int i = 0; i < NREADERS; i++)
        pthread_join(r[i], NULL);
    /* Close before judging, so that a failure does not leak the handle. */
    char first[sizeof s->first];
    int violations = atomic_load(&s->violations);
    unsigned long long searches = atomic_load(&s->searches);
    memcpy(first, s->first, sizeof first);
    close_shared(s);
    if (violations)
        fail_msg("%d violations in %llu searches; first: %s", violations, searches, first);
    assert_true(searches > 0);
}

/* ---- ACL flips: chunk i is readable by group:a when i % 2 == parity, else by group:b. ---- */

#define NFLIP 64
#define NSECRET 16
#define FLIPS 30

static void flip_chunks(shared_t *s)
{
    static char ids[NFLIP + NSECRET][16];
    static float v[NFLIP + NSECRET][DIM];
    static const char *A[] = {"group:a"}, *B[] = {"b"}, *S[] = {"group:secret"};
    cordon_field fl = {"body", "common flip"};
    cordon_chunk c[NFLIP + NSECRET];
    uint64_t seed = 17;
    for (int i = 0; i < NFLIP + NSECRET; i++) {
        snprintf(ids[i], sizeof ids[i], "%s%d", i < NFLIP ? "f" : "s", i);
        for (int d = 0; d < DIM; d++)
            v[i][d] = tu_randf(&seed);
        c[i] = (cordon_chunk){.id = ids[i],
                              .vector = v[i],
                              .fields = &fl,
                              .n_fields = 1,
                              .allowed = i >= NFLIP   ? S
                                         : i % 2 == 0 ? A
                                                      : B,
                              .n_allowed = 1};
    }
    assert_int_equal(cordon_put(s->db, "flip", c, NFLIP + NSECRET, &s->base_rev, NULL), 0);
}

static void *flip_writer(void *arg)
{
    shared_t *s = arg;
    static const char *A[] = {"a"}, *B[] = {"group:b"};
    static char ids[NFLIP][16];
    cordon_acl_change ch[NFLIP];
    for (int i = 0; i < NFLIP; i++)
        snprintf(ids[i], sizeof ids[i], "f%d", i);
    for (int k = 1; k <= FLIPS; k++) {
        uint64_t rev;
        int parity = k % 2;
        for (int i = 0; i < NFLIP; i++)
            ch[i] = (cordon_acl_change){ids[i], i % 2 == parity ? A : B, 1, NULL, 0, NULL, 0};
        atomic_store(&s->acked2, (uint64_t)k); /* started */
        if (cordon_set_acl(s->db, "flip", ch, NFLIP, &rev, NULL)) {
            violation(s, "set_acl failed");
            break;
        }
        if (rev != s->base_rev + (uint64_t)k)
            violation(s, "set_acl %d returned revision %llu", k, (unsigned long long)rev);
        atomic_store(&s->acked, rev);
    }
    atomic_store(&s->done, 1);
    return NULL;
}

static void *flip_reader(void *arg)
{
    shared_t *s = arg;
    uint64_t seed = (uint64_t)(uintptr_t)&seed, last = 0;
    static const char *A[] = {"group:a"}, *B[] = {"group:b"};
    while (!atomic_load(&s->done)) {
        int as_b = (int)(tu_rand(&seed) % 2), mode = (int)(tu_rand(&seed) % 8);
        cordon_subject sub = {.principals = as_b ? B : A, .n_principals = 1};
        float q[DIM] = {tu_randf(&seed), tu_randf(&seed), tu_randf(&seed), tu_randf(&seed)};
        cordon_query qu = {.k = 100};
        int exhaustive = 1;
        if (mode < 4) {
            qu.vector = q;
            qu.strategy = (cordon_strategy)mode;
            exhaustive = mode == CORDON_STRATEGY_EXACT;
            if (!exhaustive)
                qu.k = 10;
        } else if (mode == 4) {
            qu.text = "common";
        } else if (mode == 5) {
            qu.query_json = "{\"match_all\":{}}";
        } else if (mode == 6) {
            qu.vector = q;
            qu.text = "flip";
            qu.k = 20;
            exhaustive = 0;
        } else {
            uint64_t started = atomic_load(&s->acked2), before = atomic_load(&s->acked);
            char id[16];
            int i = (int)(tu_rand(&seed) % NFLIP);
            cordon_record *rec = NULL;
            snprintf(id, sizeof id, "f%d", i);
            int rc = cordon_get(s->db, "flip", &sub, id, &rec, NULL);
            uint64_t started_after = atomic_load(&s->acked2);
            if (rc == 0) {
                int parity = (int)((rec->revision - s->base_rev) % 2);
                if (rec->revision < before || ((i % 2 == parity) == as_b))
                    violation(s, "get %s as %s at revision %llu (acked %llu)", id, as_b ? "b" : "a",
                              (unsigned long long)rec->revision, (unsigned long long)before);
                cordon_record_free(rec);
            } else if (started == started_after && before == s->base_rev + started) {
                /* no write in flight during the get: the state is the acknowledged one */
                int parity = (int)((before - s->base_rev) % 2);
                if ((i % 2 == parity) != as_b)
                    violation(s, "get %s as %s failed (%d) at acked revision %llu", id,
                              as_b ? "b" : "a", rc, (unsigned long long)before);
            }
            atomic_fetch_add(&s->searches, 1);
            continue;
        }
        uint64_t before = atomic_load(&s->acked);
        cordon_result *r;
        if (cordon_search(s->db, "flip", &sub, &qu, &r, NULL)) {
            violation(s, "search mode %d failed", mode);
            continue;
        }
        atomic_fetch_add(&s->searches, 1);
        if (r->revision < before || r->revision < last)
            violation(s, "mode %d: revision %llu after acked %llu / last seen %llu", mode,
                      (unsigned long long)r->revision, (unsigned long long)before,
                      (unsigned long long)last);
        last = r->revision;
        int parity = (int)((r->revision - s->base_rev) % 2);
        if (r->readable != NFLIP / 2)
            violation(s, "mode %d: readable %llu", mode, (unsigned long long)r->readable);
        if (exhaustive && r->n_hits != NFLIP / 2)
            violation(s, "mode %d: %zu hits of %d", mode, r->n_hits, NFLIP / 2);
        for (size_t h = 0; h < r->n_hits; h++) {
            int i = -1;
            if (r->hits[h].id[0] != 'f' || sscanf(r->hits[h].id + 1, "%d", &i) != 1 ||
                (i % 2 == parity) == as_b)
                violation(s, "mode %d: %s as %s at revision %llu (parity %d): not readable then",
                          mode, r->hits[h].id, as_b ? "b" : "a", (unsigned long long)r->revision,
                          parity);
        }
        cordon_result_free(r);
    }
    return NULL;
}

static void test_acl_flips_are_atomic_and_immediate_for_concurrent_searches(void **state)
{
    (void)state;
    shared_t *s = open_shared();
    make(s->db, "flip");
    flip_chunks(s);
    atomic_store(&s->acked, s->base_rev);
    run(s, flip_writer, flip_reader);
}

/* ---- Replacing a chunk (same ACL, new vector) must never make it vanish. ---- */

#define REPLACES 40

static void *replace_writer(void *arg)
{
    shared_t *s = arg;
    static const char *A[] = {"group:a"};
    cordon_field fl = {"body", "hot chunk"};
    for (int k = 0; k < REPLACES; k++) {
        float v[DIM] = {(float)k, 1, 0, 0};
        cordon_chunk c = {
            .id = "hot", .vector = v, .fields = &fl, .n_fields = 1, .allowed = A, .n_allowed = 1};
        if (cordon_put(s->db, "rep", &c, 1, NULL, NULL))
            violation(s, "put failed");
    }
    atomic_store(&s->done, 1);
    return NULL;
}

static void *replace_reader(void *arg)
{
    shared_t *s = arg;
    static const char *A[] = {"group:a"};
    cordon_subject sub = {.principals = A, .n_principals = 1};
    uint64_t n = 0;
    while (!atomic_load(&s->done)) {
        cordon_record *rec = NULL;
        cordon_result *r;
        int rc = cordon_get(s->db, "rep", &sub, "hot", &rec, NULL);
        if (rc)
            violation(s, "get of a chunk readable before and after its replacement failed: %d", rc);
        cordon_record_free(rec);
        cordon_query q = n++ % 2 ? (cordon_query){.text = "hot"}
                                 : (cordon_query){.vector = (float[DIM]){1, 1, 0, 0},
                                                  .strategy = CORDON_STRATEGY_EXACT};
        if (cordon_search(s->db, "rep", &sub, &q, &r, NULL) == 0) {
            if (r->n_hits != 1 || strcmp(r->hits[0].id, "hot"))
                violation(s,
                          "%s search saw %zu hits (readable %llu) for a chunk that is always "
                          "there",
                          q.text ? "text" : "vector", r->n_hits, (unsigned long long)r->readable);
            cordon_result_free(r);
        } else {
            violation(s, "search failed");
        }
        atomic_fetch_add(&s->searches, 1);
    }
    return NULL;
}

static void test_replacing_a_chunk_never_hides_it_from_concurrent_reads(void **state)
{
    (void)state;
    shared_t *s = open_shared();
    make(s->db, "rep");
    /* Some bulk so the graph insert between commit and publish takes a while. */
    static const char *A[] = {"group:a"}, *Z[] = {"group:z"};
    static char ids[300][16];
    static float v[300][DIM];
    cordon_chunk c[300];
    uint64_t seed = 5;
    for (int i = 0; i < 300; i++) {
        snprintf(ids[i], sizeof ids[i], "bulk%d", i);
        for (int d = 0; d < DIM; d++)
            v[i][d] = tu_randf(&seed);
        c[i] = (cordon_chunk){.id = ids[i], .vector = v[i], .allowed = i ? Z : A, .n_allowed = 1};
    }
    static cordon_field hotfl = {"body", "hot chunk"};
    c[0].id = "hot";
    c[0].fields = &hotfl;
    c[0].n_fields = 1;
    assert_int_equal(cordon_put(s->db, "rep", c, 300, NULL, NULL), 0);
    run(s, replace_writer, replace_reader);
}

/* ---- Deletes and drops: generation g puts chunks, deletes the odd ones, drops all. ---- */

#define GENS 15
#define PERGEN 40

static void *drop_writer(void *arg)
{
    shared_t *s = arg;
    static const char *A[] = {"group:a"};
    const char *tf[] = {"body"};
    cordon_collection_spec spec = {
        .asserted_principals = 1, .name = "dr", .dim = DIM, .text_fields = tf, .n_text_fields = 1};
    cordon_field fl = {"body", "common"};
    for (uint64_t g = 1; g <= GENS; g++) {
        static char ids[PERGEN][24];
        static float v[PERGEN][DIM];
        cordon_chunk c[PERGEN];
        const char *odd[PERGEN / 2];
        for (int i = 0; i < PERGEN; i++) {
            snprintf(ids[i], sizeof ids[i], "g%llu-%d", (unsigned long long)g, i);
            for (int d = 0; d < DIM; d++)
                v[i][d] = (float)((i * 7 + d) % 5);
            c[i] = (cordon_chunk){.id = ids[i],
                                  .vector = v[i],
                                  .fields = &fl,
                                  .n_fields = 1,
                                  .allowed = A,
                                  .n_allowed = 1};
            if (i % 2)
                odd[i / 2] = ids[i];
        }
        if (cordon_collection_create(s->db, &spec, NULL) ||
            cordon_put(s->db, "dr", c, PERGEN, NULL, NULL) ||
            cordon_delete(s->db, "dr", odd, PERGEN / 2, NULL, NULL, NULL)) {
            violation(s, "writer failed at generation %llu", (unsigned long long)g);
            break;
        }
        atomic_store(&s->acked2, g); /* odd chunks of generations <= g are deleted */
        if (cordon_collection_drop(s->db, "dr", NULL)) {
            violation(s, "drop failed");
            break;
        }
        atomic_store(&s->acked, g); /* generations <= g are dropped */
    }
    atomic_store(&s->done, 1);
    return NULL;
}

static void *drop_reader(void *arg)
{
    shared_t *s = arg;
    static const char *A[] = {"group:a"};
    cordon_subject sub = {.principals = A, .n_principals = 1};
    uint64_t seed = (uint64_t)(uintptr_t)&seed;
    while (!atomic_load(&s->done)) {
        uint64_t dropped = atomic_load(&s->acked), deleted = atomic_load(&s->acked2);
        float q[DIM] = {tu_randf(&seed), 1, 2, 3};
        int mode = (int)(tu_rand(&seed) % 3);
        cordon_query qu = {.k = 100};
        if (mode == 0)
            qu.text = "common";
        else {
            qu.vector = q;
            qu.strategy = mode == 1 ? CORDON_STRATEGY_EXACT : CORDON_STRATEGY_POSTFILTER;
        }
        cordon_result *r;
        cordon_error err;
        int rc = cordon_search(s->db, "dr", &sub, &qu, &r, &err);
        atomic_fetch_add(&s->searches, 1);
        if (rc == CORDON_ERR_NOT_FOUND)
            continue;
        if (rc) {
            violation(s, "search failed with %d: %s", rc, err.message);
            continue;
        }
        for (size_t h = 0; h < r->n_hits; h++) {
            unsigned long long g = 0;
            int i = 0;
            if (sscanf(r->hits[h].id, "g%llu-%d", &g, &i) != 2 || g <= dropped ||
                (g <= deleted && i % 2))
                violation(s, "hit %s after generation %llu was dropped and %llu deleted",
                          r->hits[h].id, (unsigned long long)dropped, (unsigned long long)deleted);
        }
        cordon_result_free(r);
    }
    return NULL;
}

static void test_deletes_and_drops_hold_for_every_later_search(void **state)
{
    (void)state;
    shared_t *s = open_shared();
    run(s, drop_writer, drop_reader);
}

/* ---- The model: alice joins group gk, then leaves it; chunks of gk are for gk only. ---- */

#define MGROUPS 25

static void op(shared_t *s, const char *fmt, ...)
{
    char json[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(json, sizeof json, fmt, ap);
    va_end(ap);
    cordon_error err;
    if (cordon_model_apply(s->db, json, NULL, &err))
        violation(s, "op %s failed: %s", json, err.message);
}

static void *member_writer(void *arg)
{
    shared_t *s = arg;
    for (int k = 1; k <= MGROUPS; k++) {
        op(s, "{\"op\":\"add_member\",\"group\":\"g%d\",\"member\":\"alice\"}", k);
        op(s, "{\"op\":\"remove_member\",\"group\":\"g%d\",\"member\":\"alice\"}", k);
        atomic_store(&s->acked, (uint64_t)k); /* alice left groups 1..k */
    }
    atomic_store(&s->done, 1);
    return NULL;
}

static void *member_reader(void *arg)
{
    shared_t *s = arg;
    cordon_subject alice = {.subject_id = "alice"};
    uint64_t n = 0;
    while (!atomic_load(&s->done)) {
        uint64_t left = atomic_load(&s->acked);
        cordon_query q = n++ % 2 ? (cordon_query){.text = "common", .k = 100}
                                 : (cordon_query){.vector = (float[DIM]){1, 0, 0, 0}, .k = 100};
        cordon_result *r;
        cordon_record *rec = NULL;
        if (cordon_search(s->db, "mem", &alice, &q, &r, NULL)) {
            violation(s, "search as alice failed");
            continue;
        }
        atomic_fetch_add(&s->searches, 1);
        for (size_t h = 0; h < r->n_hits; h++) {
            int k = 0;
            if (sscanf(r->hits[h].id, "m%d", &k) != 1 || (uint64_t)k <= left)
                violation(s, "alice saw %s after leaving groups 1..%llu", r->hits[h].id,
                          (unsigned long long)left);
        }
        cordon_result_free(r);
        char id[32];
        snprintf(id, sizeof id, "m%llu", (unsigned long long)(left ? left : 1));
        if (left && cordon_get(s->db, "mem", &alice, id, &rec, NULL) == 0)
            violation(s, "alice read %s after leaving its group", id);
        cordon_record_free(rec);
    }
    return NULL;
}

static void test_lost_membership_hides_chunks_from_every_later_search(void **state)
{
    (void)state;
    shared_t *s = open_shared();
    make(s->db, "mem");
    op(s, "{\"op\":\"put_subject\",\"id\":\"alice\",\"kind\":\"user\"}");
    op(s, "{\"op\":\"put_role\",\"id\":\"r\",\"permissions\":[{\"resource\":\"collection:mem\","
          "\"action\":\"*\"}]}");
    op(s, "{\"op\":\"grant\",\"to\":\"alice\",\"role\":\"r\"}");
    static char ids[MGROUPS + 1][32], gs[MGROUPS + 1][32];
    static const char *al[MGROUPS + 1][1];
    static float mv[MGROUPS + 1][DIM];
    cordon_field fl = {"body", "common"};
    cordon_chunk c[MGROUPS];
    for (int k = 1; k <= MGROUPS; k++) {
        op(s, "{\"op\":\"put_group\",\"id\":\"g%d\"}", k);
        snprintf(ids[k], sizeof ids[k], "m%d", k);
        snprintf(gs[k], sizeof gs[k], "group:g%d", k);
        al[k][0] = gs[k];
        mv[k][0] = 1;
        mv[k][1] = (float)k;
        c[k - 1] = (cordon_chunk){.id = ids[k],
                                  .vector = mv[k],
                                  .fields = &fl,
                                  .n_fields = 1,
                                  .allowed = al[k],
                                  .n_allowed = 1};
    }
    assert_int_equal(cordon_put(s->db, "mem", c, MGROUPS, NULL, NULL), 0);
    if (atomic_load(&s->violations))
        fail_msg("setup: %s", s->first);
    run(s, member_writer, member_reader);
}

/* ---- Principal ids are reused after a failed write rolls its new principals back. ----
 * A failed set_acl interns "group:ghost" and then forgets it; the next new principal gets the
 * same id. A search that resolved "group:ghost" in between must not read that principal's
 * chunks. */

#define GHOST_ROUNDS 60

static void *ghost_writer(void *arg)
{
    shared_t *s = arg;
    static const char *ghost[] = {"group:ghost"}, *A[] = {"group:a"};
    for (int k = 0; k < GHOST_ROUNDS; k++) {
        char id[16], p[24];
        snprintf(id, sizeof id, "p%d", k);
        snprintf(p, sizeof p, "group:p%d", k);
        const char *pp[] = {p};
        cordon_acl_change ch[2] = {{"anchor", ghost, 1, NULL, 0, NULL, 0},
                                   {"missing", A, 1, NULL, 0, NULL, 0}};
        if (cordon_set_acl(s->db, "gh", ch, 2, NULL, NULL) != CORDON_ERR_NOT_FOUND)
            violation(s, "set_acl with a missing id did not fail");
        cordon_field fl = {"body", "common"};
        cordon_chunk c = {.id = id,
                          .vector = (float[DIM]){1, 0, 0, (float)k},
                          .fields = &fl,
                          .n_fields = 1,
                          .allowed = pp,
                          .n_allowed = 1};
        if (cordon_put(s->db, "gh", &c, 1, NULL, NULL))
            violation(s, "put failed");
    }
    atomic_store(&s->done, 1);
    return NULL;
}

static void *ghost_reader(void *arg)
{
    shared_t *s = arg;
    static const char *ghost[] = {"group:ghost"};
    cordon_subject sub = {.principals = ghost, .n_principals = 1};
    uint64_t n = 0;
    while (!atomic_load(&s->done)) {
        cordon_query q = n++ % 2 ? (cordon_query){.text = "common", .k = 10}
                                 : (cordon_query){.vector = (float[DIM]){1, 0, 0, 0},
                                                  .k = 10,
                                                  .strategy = CORDON_STRATEGY_EXACT};
        cordon_result *r;
        if (cordon_search(s->db, "gh", &sub, &q, &r, NULL)) {
            violation(s, "search failed");
            continue;
        }
        atomic_fetch_add(&s->searches, 1);
        if (r->n_hits)
            violation(s, "LEAK: group:ghost, held by no chunk, read %s", r->hits[0].id);
        cordon_result_free(r);
    }
    return NULL;
}

static void test_rolled_back_principal_ids_never_open_other_chunks(void **state)
{
    (void)state;
    shared_t *s = open_shared();
    static const char *A[] = {"group:a"};
    make(s->db, "gh");
    cordon_chunk c = {
        .id = "anchor", .vector = (float[DIM]){0, 1, 0, 0}, .allowed = A, .n_allowed = 1};
    assert_int_equal(cordon_put(s->db, "gh", &c, 1, NULL, NULL), 0);
    run(s, ghost_writer, ghost_reader);
}

/* ---- cordon_get while the collection is dropped and re-created with another dim. ----
 * The record's dim must describe its own vector: incarnation d stores chunk x with d values,
 * all equal to d. */

#define RECREATES 30

static void *recreate_writer(void *arg)
{
    shared_t *s = arg;
    static const char *A[] = {"group:a"};
    static float v[64];
    for (int k = 1; k <= RECREATES; k++) {
        uint32_t dim = k % 2 ? 64 : 4;
        cordon_collection_spec spec = {
            .asserted_principals = 1, .name = "vv", .dim = dim, .metric = CORDON_METRIC_L2};
        for (uint32_t d = 0; d < dim; d++)
            v[d] = (float)dim;
        cordon_chunk c = {.id = "x", .vector = v, .allowed = A, .n_allowed = 1};
        if (cordon_collection_drop(s->db, "vv", NULL))
            violation(s, "drop failed");
        if (cordon_collection_create(s->db, &spec, NULL) ||
            cordon_put(s->db, "vv", &c, 1, NULL, NULL))
            violation(s, "create/put failed");
        /* Let the readers see this incarnation before the next drop (bounded, 1 s). */
        unsigned long long seen = atomic_load(&s->searches);
        for (int w = 0; w < 10000 && atomic_load(&s->searches) == seen; w++)
            usleep(100);
    }
    atomic_store(&s->done, 1);
    return NULL;
}

static void *recreate_reader(void *arg)
{
    shared_t *s = arg;
    static const char *A[] = {"group:a"};
    cordon_subject sub = {.principals = A, .n_principals = 1};
    while (!atomic_load(&s->done)) {
        cordon_record *r = NULL;
        if (cordon_get(s->db, "vv", &sub, "x", &r, NULL) == 0) {
            atomic_fetch_add(&s->searches, 1);
            if (r->dim != 4 && r->dim != 64)
                violation(s, "record dim %u", r->dim);
            else if (r->vector[0] != (float)r->dim)
                violation(s, "record says dim %u but holds a %g-d vector", r->dim,
                          (double)r->vector[0]);
            cordon_record_free(r);
        }
    }
    return NULL;
}

static void test_get_reports_the_dim_of_the_vector_it_returns(void **state)
{
    (void)state;
    shared_t *s = open_shared();
    static const char *A[] = {"group:a"};
    cordon_collection_spec spec = {
        .asserted_principals = 1, .name = "vv", .dim = 4, .metric = CORDON_METRIC_L2};
    cordon_chunk c = {.id = "x", .vector = (float[4]){4, 4, 4, 4}, .allowed = A, .n_allowed = 1};
    assert_int_equal(cordon_collection_create(s->db, &spec, NULL), 0);
    assert_int_equal(cordon_put(s->db, "vv", &c, 1, NULL, NULL), 0);
    run(s, recreate_writer, recreate_reader);
}

/* ---- Searches on 8-bit codes while rows are appended and replaced. ----
 * An int8_scan collection traverses its graph on codes; rows written after a search started
 * have no codes in its snapshot and are scored in float. Row i is readable by group:a when i is
 * even (ids "c<i>"); no search may return an odd one, fail, come back empty, or (under ASan)
 * touch freed memory while the writer appends batches and rewrites rows. It found a graph
 * race: a descent could land on a node still being inserted (linked from above, level-0 list
 * not yet written), and a forced postfilter then returned nothing (float traversals too). */

#define CODE_ROWS 2000
#define CODE_BATCHES 20

static void code_rows(cordon_chunk *c, int from, int n, float (*v)[DIM], char (*ids)[16],
                      uint64_t seed)
{
    static const char *A[] = {"group:a"}, *Z[] = {"group:z"};
    for (int j = 0; j < n; j++) {
        int i = from + j;
        snprintf(ids[j], sizeof ids[j], "c%d", i);
        for (int d = 0; d < DIM; d++)
            v[j][d] = tu_randf(&seed) * 4;
        c[j] =
            (cordon_chunk){.id = ids[j], .vector = v[j], .allowed = i % 2 ? Z : A, .n_allowed = 1};
    }
}

static void *codes_writer(void *arg)
{
    shared_t *s = arg;
    static float v[100][DIM];
    static char ids[100][16];
    cordon_chunk c[100];
    for (int b = 0; b < CODE_BATCHES; b++) {
        /* A new batch, then a rewrite of old rows (same ids, same parity, new vectors). */
        code_rows(c, CODE_ROWS + b * 100, 100, v, ids, 1000 + (uint64_t)b);
        if (cordon_put(s->db, "codes", c, 100, NULL, NULL))
            violation(s, "append batch %d failed", b);
        code_rows(c, b * 50, 50, v, ids, 5000 + (uint64_t)b);
        if (cordon_put(s->db, "codes", c, 50, NULL, NULL))
            violation(s, "rewrite batch %d failed", b);
    }
    atomic_store(&s->done, 1);
    return NULL;
}

static void *codes_reader(void *arg)
{
    shared_t *s = arg;
    static const char *A[] = {"group:a"};
    cordon_subject sub = {.principals = A, .n_principals = 1};
    uint64_t seed = (uint64_t)(uintptr_t)&seed;
    const cordon_strategy strat[] = {CORDON_STRATEGY_AUTO, CORDON_STRATEGY_PREFILTER,
                                     CORDON_STRATEGY_POSTFILTER, CORDON_STRATEGY_EXACT};
    for (int n = 0; !atomic_load(&s->done); n++) {
        float q[DIM];
        for (int d = 0; d < DIM; d++)
            q[d] = tu_randf(&seed) * 4;
        cordon_query qu = {.vector = q, .k = 10, .strategy = strat[n % 4]};
        cordon_result *r;
        if (cordon_search(s->db, "codes", &sub, &qu, &r, NULL)) {
            violation(s, "search with strategy %d failed", (int)qu.strategy);
            continue;
        }
        atomic_fetch_add(&s->searches, 1);
        if (r->n_hits == 0)
            violation(s,
                      "strategy %d (plan %s, %llu candidates) found nothing among %llu "
                      "readable rows",
                      (int)qu.strategy, r->plan, (unsigned long long)r->candidates,
                      (unsigned long long)r->readable);
        for (size_t h = 0; h < r->n_hits; h++) {
            int i = -1;
            if (sscanf(r->hits[h].id, "c%d", &i) != 1 || i % 2)
                violation(s, "strategy %d returned %s, not readable by group:a", (int)qu.strategy,
                          r->hits[h].id);
        }
        cordon_result_free(r);
    }
    return NULL;
}

static void test_searches_on_codes_hold_while_rows_arrive(void **state)
{
    (void)state;
    shared_t *s = open_shared();
    static float v[CODE_ROWS][DIM];
    static char ids[CODE_ROWS][16];
    static cordon_chunk c[CODE_ROWS];
    cordon_collection_spec spec = {.asserted_principals = 1,
                                   .name = "codes",
                                   .dim = DIM,
                                   .metric = CORDON_METRIC_L2,
                                   .int8_scan = 1};
    assert_int_equal(cordon_collection_create(s->db, &spec, NULL), 0);
    code_rows(c, 0, CODE_ROWS, v, ids, 7);
    assert_int_equal(cordon_put(s->db, "codes", c, CODE_ROWS, NULL, NULL), 0);
    run(s, codes_writer, codes_reader);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acl_flips_are_atomic_and_immediate_for_concurrent_searches),
        cmocka_unit_test(test_replacing_a_chunk_never_hides_it_from_concurrent_reads),
        cmocka_unit_test(test_deletes_and_drops_hold_for_every_later_search),
        cmocka_unit_test(test_lost_membership_hides_chunks_from_every_later_search),
        cmocka_unit_test(test_rolled_back_principal_ids_never_open_other_chunks),
        cmocka_unit_test(test_get_reports_the_dim_of_the_vector_it_returns),
        cmocka_unit_test(test_searches_on_codes_hold_while_rows_arrive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
