/* test_pool.c: the worker pool (base/pool.h): every task runs exactly once and before its
 * caller returns, with many callers at once, callers waiting on a worker's part, nested jobs
 * and no workers. Relies on cmocka and
 * pthreads; also run under ThreadSanitizer (Makefile TSAN_TESTS). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/pool.h"

#define MAX_TASKS 17

/* One job's record: each task marks its slot; plain ints, so that TSan reports a task whose
 * writes the caller could read before the pool handed them over. */
typedef struct marks {
    int ran[MAX_TASKS];
    cdn_pool_t *pool; /* for nested jobs */
} marks_t;

static void mark(void *arg, size_t task)
{
    marks_t *m = arg;
    m->ran[task]++;
}

static void check_each_once(const marks_t *m, size_t n)
{
    for (size_t i = 0; i < MAX_TASKS; i++)
        if (m->ran[i] != (i < n ? 1 : 0))
            fail_msg("task %zu of %zu ran %d times", i, n, m->ran[i]);
}

static void test_pool_runs_every_task_once_before_returning(void **state)
{
    (void)state;
    cdn_pool_t *p;
    assert_int_equal(cdn_pool_create(3, &p), 0);
    assert_int_equal(cdn_pool_workers(p), 3);
    for (size_t n = 0; n <= MAX_TASKS; n++) {
        marks_t m = {{0}, p};
        cdn_pool_run(p, n, mark, &m);
        check_each_once(&m, n);
    }
    cdn_pool_free(p);
}

typedef struct caller {
    cdn_pool_t *pool;
    unsigned seed;
    int bad;
} caller_t;

static void *many_jobs(void *arg)
{
    caller_t *c = arg;
    for (int j = 0; j < 300; j++) {
        c->seed = c->seed * 1103515245u + 12345u;
        size_t n = 1 + (c->seed >> 16) % MAX_TASKS;
        marks_t m = {{0}, c->pool};
        cdn_pool_run(c->pool, n, mark, &m);
        for (size_t i = 0; i < MAX_TASKS; i++)
            c->bad += m.ran[i] != (i < n ? 1 : 0);
    }
    return NULL;
}

static void test_pool_serves_many_callers_at_once(void **state)
{
    (void)state;
    cdn_pool_t *p;
    assert_int_equal(cdn_pool_create(2, &p), 0); /* fewer workers than callers: callers work */
    enum { CALLERS = 8 };
    pthread_t th[CALLERS];
    caller_t c[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        c[i] = (caller_t){p, 7u + (unsigned)i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, many_jobs, &c[i]), 0);
    }
    for (int i = 0; i < CALLERS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(c[i].bad, 0);
    }
    cdn_pool_free(p);
}

static void nested(void *arg, size_t task)
{
    marks_t *outer = arg;
    marks_t inner = {{0}, outer->pool};
    cdn_pool_run(outer->pool, 5, mark, &inner); /* from a worker: must not wait for itself */
    int ok = 1;
    for (size_t i = 0; i < 5; i++)
        ok &= inner.ran[i] == 1;
    outer->ran[task] += ok;
}

/* Task 1 works a while, so the caller finishes its own part first and polls for the worker's end
 * (the job's counters read without the lock); task 0 returns at once. */
static void slow_second(void *arg, size_t task)
{
    marks_t *m = arg;
    volatile unsigned spin = 0;
    for (unsigned i = 0; task == 1 && i < 20000; i++)
        spin += i;
    m->ran[task]++;
}

/* Jobs run back to back from one stack frame: every job record lands at the same address, so a
 * worker still touching the last one after its caller returned would corrupt the next one's
 * counts (and TSan would report the access). */
static void test_pool_caller_waits_for_the_workers_part(void **state)
{
    (void)state;
    cdn_pool_t *p;
    assert_int_equal(cdn_pool_create(1, &p), 0);
    for (int j = 0; j < 2000; j++) {
        marks_t m = {{0}, p};
        cdn_pool_run(p, 2, slow_second, &m);
        check_each_once(&m, 2);
    }
    cdn_pool_free(p);
}

static void test_pool_job_inside_a_task_completes(void **state)
{
    (void)state;
    cdn_pool_t *p;
    assert_int_equal(cdn_pool_create(1, &p), 0);
    marks_t m = {{0}, p};
    cdn_pool_run(p, 4, nested, &m);
    check_each_once(&m, 4);
    cdn_pool_free(p);
}

static void test_pool_without_workers_runs_tasks_on_the_caller(void **state)
{
    (void)state;
    cdn_pool_t *p;
    assert_int_equal(cdn_pool_create(0, &p), 0);
    assert_int_equal(cdn_pool_workers(p), 0);
    marks_t m = {{0}, p};
    cdn_pool_run(p, MAX_TASKS, mark, &m);
    check_each_once(&m, MAX_TASKS);
    cdn_pool_free(p);
}

static void test_shared_pool_is_one_per_process(void **state)
{
    (void)state;
    cdn_pool_t *a = cdn_pool_shared(), *b = cdn_pool_shared();
    assert_non_null(a);
    assert_ptr_equal(a, b);
    assert_true(cdn_pool_workers(a) <= CDN_POOL_MAX_WORKERS);
    marks_t m = {{0}, a};
    cdn_pool_run(a, 9, mark, &m);
    check_each_once(&m, 9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_runs_every_task_once_before_returning),
        cmocka_unit_test(test_pool_serves_many_callers_at_once),
        cmocka_unit_test(test_pool_caller_waits_for_the_workers_part),
        cmocka_unit_test(test_pool_job_inside_a_task_completes),
        cmocka_unit_test(test_pool_without_workers_runs_tasks_on_the_caller),
        cmocka_unit_test(test_shared_pool_is_one_per_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
