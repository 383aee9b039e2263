/* test_authz_concurrency.c: revocation is visible to the very next check and view while reader
 * threads hammer the model (and its caches) concurrently. Relies on cmocka, pthreads, libcordon. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <string.h>
#include <cmocka.h>

#include "authz/authz.h"

#define READERS 2
#define TOGGLES 200

/* Phase protocol: 4i+1 = revoked and stable, 4i+2 = granting, 4i+3 = granted and stable,
 * 4i+4 = revoking. A reader that sees the same stable phase before and after a check knows
 * what the check must have answered. */
typedef struct shared {
    authz_model_t *m;
    _Atomic long phase;
    _Atomic int stop;
    _Atomic long verified;
    _Atomic long wrong;
} shared_t;

static void *reader(void *arg)
{
    shared_t *sh = arg;
    authz_request_t r = {.subject = "alice", .resource = "collection:hr", .action = "search"};
    long n = 0;
    while (!atomic_load(&sh->stop)) {
        if ((n & 63) == 63)
            sched_yield(); /* on a loaded 2-core box, let the writer in now and then */
        long p1 = atomic_load(&sh->phase);
        authz_decision_t d;
        authz_view_t *v = NULL;
        bool use_view = (n++ & 3) == 0;
        bool allowed;
        if (use_view) {
            if (authz_view(sh->m, "alice", &v, NULL))
                atomic_fetch_add(&sh->wrong, 1);
            allowed = v && authz_view_has(v, "group:hr");
            authz_view_release(v);
        } else {
            r.cache = (n & 1) ? AUTHZ_CACHE_USE : AUTHZ_CACHE_REFRESH;
            authz_is_authorized(sh->m, &r, &d, NULL);
            allowed = d.authorized;
        }
        long p2 = atomic_load(&sh->phase);
        if (p1 != p2 || (p1 % 2) == 0)
            continue;
        if (allowed != (p1 % 4 == 3))
            atomic_fetch_add(&sh->wrong, 1);
        atomic_fetch_add(&sh->verified, 1);
    }
    return NULL;
}

/* Applies one model operation, which must succeed. */
static void apply(authz_model_t *m, const char *op)
{
    assert_int_equal(authz_apply(m, op, NULL), 0);
}

/* Holds a stable phase until some reader has verified a check in it (bounded, so a starved
 * reader cannot hang the test; the final assertion needs only some verified checks). */
static void let_readers_look(shared_t *sh)
{
    long seen = atomic_load(&sh->verified);
    for (int spin = 0; spin < 3000 && atomic_load(&sh->verified) < seen + 1; spin++)
        sched_yield();
}

static void test_revocation_is_visible_to_next_check_under_concurrent_readers(void **state)
{
    (void)state;
    shared_t sh;
    memset(&sh, 0, sizeof(sh));
    assert_int_equal(authz_model_new(&sh.m, NULL), 0);
    apply(sh.m, "{\"op\":\"put_subject\",\"id\":\"alice\"}");
    apply(sh.m, "{\"op\":\"put_group\",\"id\":\"hr\"}");
    apply(sh.m, "{\"op\":\"put_role\",\"id\":\"searcher\",\"permissions\":"
                "[{\"resource\":\"collection:*\",\"action\":\"search\"}]}");
    apply(sh.m, "{\"op\":\"grant\",\"to\":\"hr\",\"to_kind\":\"group\","
                "\"role\":\"searcher\"}");
    atomic_store(&sh.phase, 1);
    pthread_t th[READERS];
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, reader, &sh), 0);
    const char *add = "{\"op\":\"add_member\",\"group\":\"hr\",\"member\":\"alice\"}";
    const char *del = "{\"op\":\"remove_member\",\"group\":\"hr\",\"member\":\"alice\"}";
    authz_request_t r = {.subject = "alice", .resource = "collection:hr", .action = "search"};
    authz_decision_t d;
    long writer_wrong = 0;
    for (long i = 0; i < TOGGLES; i++) {
        atomic_store(&sh.phase, 4 * i + 2);
        apply(sh.m, add);
        atomic_store(&sh.phase, 4 * i + 3);
        authz_is_authorized(sh.m, &r, &d, NULL);
        writer_wrong += !d.authorized;
        let_readers_look(&sh);
        atomic_store(&sh.phase, 4 * i + 4);
        apply(sh.m, del);
        atomic_store(&sh.phase, 4 * i + 5);
        authz_is_authorized(sh.m, &r, &d, NULL); /* the very next check after the revoke */
        writer_wrong += d.authorized;
        let_readers_look(&sh);
    }
    atomic_store(&sh.stop, 1);
    for (int i = 0; i < READERS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(writer_wrong, 0);
    assert_int_equal(atomic_load(&sh.wrong), 0);
    assert_true(atomic_load(&sh.verified) > 0);
    authz_model_free(sh.m);
}

/* The decision cache is allocated by the first check that uses it: threads that all make their
 * first check at once race to install it (one wins, the others free theirs), and every one of
 * them is answered, and cached from then on. Under ThreadSanitizer this is the race's test. */
typedef struct first {
    authz_model_t *m;
    pthread_barrier_t go;
    _Atomic int granted, cached;
} first_t;

static void *first_checker(void *arg)
{
    first_t *f = arg;
    authz_request_t r = {.subject = "alice", .resource = "collection:hr", .action = "search"};
    authz_decision_t d;
    pthread_barrier_wait(&f->go);
    for (int i = 0; i < 3; i++)
        if (authz_is_authorized(f->m, &r, &d, NULL) == 0 && d.authorized) {
            atomic_fetch_add(&f->granted, 1);
            atomic_fetch_add(&f->cached, d.cached);
        }
    return NULL;
}

static void test_first_checks_race_to_install_the_decision_cache(void **state)
{
    (void)state;
    enum { THREADS = 4 };
    for (int round = 0; round < 20; round++) {
        first_t f = {0};
        assert_int_equal(authz_model_new(&f.m, NULL), 0);
        apply(f.m, "{\"op\":\"put_subject\",\"id\":\"alice\"}");
        apply(f.m, "{\"op\":\"grant\",\"to\":\"alice\",\"permission\":"
                   "{\"resource\":\"collection:hr\",\"action\":\"search\"}}");
        pthread_barrier_init(&f.go, NULL, THREADS);
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++)
            pthread_create(&t[i], NULL, first_checker, &f);
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&f.go);
        assert_int_equal(atomic_load(&f.granted), THREADS * 3);
        assert_true(atomic_load(&f.cached) > 0); /* one cache, filled and hit */
        authz_request_t r = {.subject = "alice", .resource = "collection:hr", .action = "search"};
        authz_decision_t d;
        assert_int_equal(authz_is_authorized(f.m, &r, &d, NULL), 0);
        assert_true(d.authorized && d.cached);
        authz_model_free(f.m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_revocation_is_visible_to_next_check_under_concurrent_readers),
        cmocka_unit_test(test_first_checks_race_to_install_the_decision_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
