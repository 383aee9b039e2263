/* pool.c: worker threads that take the parts of queued jobs, and callers that take parts of
 * their own job while they wait. Relies on pthreads; one mutex guards the queue and counters. */
#include "base/pool.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/mem.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

/* How long an idle worker polls for the next job before it sleeps on the condition variable.
 * Waking a sleeping thread costs tens of microseconds (more in a virtual machine, where the idle
 * processor itself may have been parked), which a split scan of a few thousand rows pays on
 * every query; a worker that finished a part moments ago is usually needed again within a
 * query's length. The poll reads one flag, so its cost is the processor time it holds. */
#define POOL_SPIN_NS 100000u

#if defined(__x86_64__) || defined(__i386__)
#define POOL_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define POOL_PAUSE() __asm__ __volatile__("yield")
#else
#define POOL_PAUSE() ((void)0)
#endif

/* A caller's job, on the caller's stack: it stays valid until `done` reaches n. Its counters
 * change only under the pool's lock, and the caller returns only after it has seen done == n
 * with the lock held (a worker counts its part and signals under the lock, so by then no worker
 * touches the job). `done` is also written and read atomically, so the caller may poll it
 * without the lock first. */
typedef struct job {
    cdn_pool_fn fn;
    void *arg;
    size_t n, next, done; /* tasks in all, the next to hand out, those finished */
    pthread_cond_t finished;
    struct job *qnext; /* the queue holds jobs with parts not yet handed out */
} job_t;

struct cdn_pool {
    pthread_mutex_t lock;
    pthread_cond_t work; /* a job was queued, or the pool is stopping */
    job_t *head, *tail;
    int stopping;
    /* head != NULL, also written atomically: idle workers poll it without the lock */
    size_t queued;
    unsigned n;
    pthread_t *threads;
};

/* Hands out the next part of j (under the lock); takes j off the queue with its last part. */
static size_t claim(cdn_pool_t *p, job_t *j)
{
    size_t i = j->next++;
    if (j->next == j->n) {
        job_t **pp = &p->head, *prev = NULL;
        while (*pp != j) {
            prev = *pp;
            pp = &(*pp)->qnext;
        }
        *pp = j->qnext;
        if (p->tail == j)
            p->tail = prev;
        __atomic_store_n(&p->queued, p->head != NULL, __ATOMIC_RELEASE);
    }
    return i;
}

/* Runs part i of j outside the lock and counts it; returns with the lock held again. */
static void run_part(cdn_pool_t *p, job_t *j, size_t i)
{
    cdn_pool_fn fn = j->fn;
    void *arg = j->arg;
    pthread_mutex_unlock(&p->lock);
    fn(arg, i);
    pthread_mutex_lock(&p->lock);
    if (__atomic_add_fetch(&j->done, 1, __ATOMIC_RELEASE) == j->n)
        pthread_cond_signal(&j->finished); /* under the lock: the caller cannot have left */
}

/* Polls *flag, without the lock, until it is at least want or POOL_SPIN_NS have passed. Every
 * 64 polls it yields the processor: where the thread it waits for shares this processor (more
 * threads than processors, a CPU quota), that thread then runs instead of waiting out the poll. */
static void poll_for(const size_t *flag, size_t want)
{
    uint64_t until = cdn_clock_ns() + POOL_SPIN_NS;
    for (unsigned i = 1; __atomic_load_n(flag, __ATOMIC_ACQUIRE) < want; i++) {
        POOL_PAUSE();
        if (i % 64 == 0) {
            if (cdn_clock_ns() > until)
                return;
            sched_yield();
        }
    }
}

static void *worker(void *arg)
{
    cdn_pool_t *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (!p->head && !p->stopping) {
            pthread_mutex_unlock(&p->lock);
            poll_for(&p->queued, 1);
            pthread_mutex_lock(&p->lock);
        }
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->work, &p->lock);
        if (!p->head)
            break;
        job_t *j = p->head;
        run_part(p, j, claim(p, j));
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int cdn_pool_create(unsigned n_workers, cdn_pool_t **out)
{
    cdn_pool_t *p = cdn_calloc(1, sizeof *p);
    if (!p)
        return CDN_ERR_NOMEM;
    if (n_workers && !(p->threads = cdn_calloc(n_workers, sizeof *p->threads))) {
        cdn_free(p);
        return CDN_ERR_NOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    while (p->n < n_workers && pthread_create(&p->threads[p->n], NULL, worker, p) == 0)
        p->n++;
    *out = p;
    return CDN_OK;
}

void cdn_pool_free(cdn_pool_t *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    cdn_free(p->threads);
    cdn_free(p);
}

unsigned cdn_pool_workers(const cdn_pool_t *p)
{
    return p->n;
}

void cdn_pool_run(cdn_pool_t *p, size_t n_tasks, cdn_pool_fn fn, void *arg)
{
    if (n_tasks == 0)
        return;
    if (n_tasks == 1 || p->n == 0) { /* nobody to share with: no lock, no queue */
        for (size_t i = 0; i < n_tasks; i++)
            fn(arg, i);
        return;
    }
    job_t j = {.fn = fn, .arg = arg, .n = n_tasks};
    pthread_cond_init(&j.finished, NULL);
    pthread_mutex_lock(&p->lock);
    if (p->tail)
        p->tail->qnext = &j;
    else
        p->head = &j;
    p->tail = &j;
    __atomic_store_n(&p->queued, 1, __ATOMIC_RELEASE);
    for (size_t i = 1; i < n_tasks && i <= p->n; i++) /* the caller takes one part itself */
        pthread_cond_signal(&p->work);
    while (j.next < j.n)
        run_part(p, &j, claim(p, &j));
    if (j.done < j.n) { /* the workers' parts are still running: they end soon, usually */
        pthread_mutex_unlock(&p->lock);
        poll_for(&j.done, j.n);
        pthread_mutex_lock(&p->lock);
    }
    while (j.done < j.n)
        pthread_cond_wait(&j.finished, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_cond_destroy(&j.finished);
}

/* ---- the process's pool ---- */

static pthread_once_t shared_once = PTHREAD_ONCE_INIT;
static cdn_pool_t *shared_pool; /* written once under shared_once, read-only after */
static cdn_pool_t no_workers = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                .work = PTHREAD_COND_INITIALIZER};

/* The processors this process may run on: its affinity mask (taskset, a container's cpuset),
 * else every online one. */
static long usable_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    return sysconf(_SC_NPROCESSORS_ONLN);
}

static void shared_start(void)
{
    long cpus = usable_cpus();
    unsigned n = cpus > 1 ? (unsigned)(cpus - 1) : 0;
    if (n > CDN_POOL_MAX_WORKERS)
        n = CDN_POOL_MAX_WORKERS;
    if (cdn_pool_create(n, &shared_pool) != CDN_OK)
        shared_pool = &no_workers;
}

cdn_pool_t *cdn_pool_shared(void)
{
    pthread_once(&shared_once, shared_start);
    return shared_pool;
}
