/* pool.h: a fixed set of worker threads, created once, that run the parts of a parallel scan so
 * that a server under load does not create a thread per request. Relies on pthreads.
 *
 * Where the pool lives: one per process, created on first use by cdn_pool_shared (pthread_once)
 * and sized from the processors the process may run on (its affinity mask). That is process
 * configuration in DESIGN's sense: fixed once, never changed, and what the threads hold between
 * calls is only the queue of parts in flight, nothing a request can observe. An engine-owned pool
 * was the other choice; it would have to be passed through query/ into every vector call, and two
 * engines in one process (or a test that opens many) would each start a pool as large as the
 * machine, where one process-wide set of workers is what the processors can actually run.
 * cdn_pool_create makes a private pool for tests and for callers that want their own.
 *
 * Waiting: a worker that finds no job polls for one for 100 us before it sleeps, and a caller
 * whose job has parts still running on workers polls for their end before it sleeps, so jobs
 * in close succession do not pay a thread's wake-up (tens of microseconds, a large share of a
 * scan of a few thousand rows). The price is up to 100 us of processor time per worker after
 * the last job of a burst. */
#ifndef CDN_POOL_H
#define CDN_POOL_H

#include <stddef.h>

typedef struct cdn_pool cdn_pool_t;

/* One part of a job: fn(arg, i) for i in 0..n_tasks-1, each i exactly once, on any thread. */
typedef void (*cdn_pool_fn)(void *arg, size_t task);

/* Starts a pool of n_workers threads (0 is allowed: then every task runs on its caller).
 * Returns 0 or CDN_ERR_NOMEM; a thread the system refuses leaves a smaller pool, not an error.
 * Free with cdn_pool_free. */
int cdn_pool_create(unsigned n_workers, cdn_pool_t **out);

/* Stops the workers (after the tasks already queued) and frees the pool. No cdn_pool_run on it
 * may be in progress. NULL is a no-op. */
void cdn_pool_free(cdn_pool_t *p);

/* The process's pool: one worker per usable processor (the affinity mask) but one (the caller
 * is the other), at most CDN_POOL_MAX_WORKERS; created on the first call, never freed. Never NULL:
 * if it cannot be created, a pool without workers stands in, so tasks run on their callers. */
cdn_pool_t *cdn_pool_shared(void);
#define CDN_POOL_MAX_WORKERS 64

/* How many worker threads p runs. */
unsigned cdn_pool_workers(const cdn_pool_t *p);

/* Runs fn(arg, 0) .. fn(arg, n_tasks - 1) on the pool's idle workers and on the calling thread,
 * and returns when all have returned. The caller takes tasks too, so a call completes even when
 * every worker is busy with other callers' jobs: it never waits for a worker to come free. Safe
 * to call from many threads at once, and from inside a task (a nested job). Cannot fail; fn
 * reports its own errors through arg. */
void cdn_pool_run(cdn_pool_t *p, size_t n_tasks, cdn_pool_fn fn, void *arg);

#endif
