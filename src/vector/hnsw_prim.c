/* hnsw_prim.c: the HNSW primitives the build and the traversal share: hit heaps, lock-free list
 * reads and seqlocked list stores, four-row scoring, pooled visited sets. Relies on hnsw_int.h. */
#include "vector/hnsw_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/mem.h"

/* ---------- heaps ---------- */

int hnsw_heap_init(hnsw_heap_t *q, uint32_t cap)
{
    q->n = 0;
    q->cap = cap ? cap : 16;
    q->a = cdn_malloc(sizeof(hnsw_hit_t) * q->cap);
    return q->a ? CDN_OK : CDN_ERR_NOMEM;
}

void hnsw_heap_free(hnsw_heap_t *q)
{
    cdn_free(q->a);
    q->a = NULL;
    q->n = q->cap = 0;
}

int hnsw_heap_push(hnsw_heap_t *q, uint32_t id, float dist)
{
    if (q->n == q->cap) {
        size_t cap = q->cap;
        void *p = q->a;
        if (cdn_grow(&p, &cap, (size_t)q->n + 1, sizeof(hnsw_hit_t)))
            return CDN_ERR_NOMEM;
        q->a = p;
        q->cap = (uint32_t)cap;
    }
    uint32_t i = q->n++;
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (q->a[parent].dist >= dist)
            break;
        q->a[i] = q->a[parent];
        i = parent;
    }
    q->a[i].id = id;
    q->a[i].dist = dist;
    return CDN_OK;
}

void hnsw_heap_pop(hnsw_heap_t *q)
{
    if (q->n == 0)
        return;
    hnsw_hit_t last = q->a[--q->n];
    uint32_t i = 0, n = q->n;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && q->a[c + 1].dist > q->a[c].dist)
            c++;
        if (q->a[c].dist <= last.dist)
            break;
        q->a[i] = q->a[c];
        i = c;
    }
    if (n > 0)
        q->a[i] = last;
}

void hnsw_heap_sort(hnsw_heap_t *q)
{
    uint32_t n = q->n;
    q->n = 0;
    for (uint32_t i = 0; i < n; i++) /* in place: the push of a[i] writes at most slot i */
        hnsw_heap_push(q, q->a[i].id, q->a[i].dist);
    hnsw_heap_sort_heap(q);
}

void hnsw_heap_sort_heap(hnsw_heap_t *q)
{
    /* Heapsort in place: the top (farthest) goes to the slot the pop frees at the end. */
    uint32_t n = q->n;
    while (q->n > 1) {
        hnsw_hit_t top = q->a[0];
        hnsw_heap_pop(q);
        q->a[q->n] = top;
    }
    q->n = n;
    hnsw_sort_hits(q->a, n); /* ties in distance came out in any order: id order, linear */
}

/* ---------- neighbour lists and scoring ---------- */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* The reader half of a seqlock (Boehm, "Can seqlocks get along with programming language memory
 * models?", 2012): slots are read with atomic loads, so a copy racing a writer is well-defined
 * and merely thrown away. The slot loads are acquires and the writer's slot stores releases: a
 * reader that reads a value some writer stored has seen that writer's odd counter by its second
 * look, and so discards the copy. (Fences would do the same, but ThreadSanitizer does not
 * follow fences; on x86 the two compile alike.) Readers write nothing shared, so two threads
 * reading the same hub node no longer bounce a mutex's cache line. */
uint32_t hnsw_read_list(hnsw_t *h, uint32_t id, uint32_t level, uint32_t *buf)
{
    _Atomic uint32_t *sq = &h->seq[id & (HNSW_STRIPES - 1)];
    const uint32_t *l = hnsw_list_at(h, id, level);
    uint32_t cap = hnsw_list_cap(h, level);
    for (;;) {
        uint32_t s1 = atomic_load_explicit(sq, memory_order_acquire);
        if (s1 & 1u) {
            cpu_relax();
            continue;
        }
        uint32_t n = __atomic_load_n(&l[0], __ATOMIC_ACQUIRE);
        if (n > cap) /* cannot happen (writers store valid counts); keeps buf in bounds */
            n = cap;
        for (uint32_t i = 0; i < n; i++)
            buf[i] = __atomic_load_n(&l[1 + i], __ATOMIC_ACQUIRE);
        if (atomic_load_explicit(sq, memory_order_relaxed) == s1)
            return n;
    }
}

void hnsw_list_store(hnsw_t *h, uint32_t id, uint32_t level, const uint32_t *ids, uint32_t n)
{
    _Atomic uint32_t *sq = &h->seq[id & (HNSW_STRIPES - 1)];
    uint32_t *l = hnsw_list_at(h, id, level);
    uint32_t s = atomic_load_explicit(sq, memory_order_relaxed);
    atomic_store_explicit(sq, s + 1, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++)
        __atomic_store_n(&l[1 + i], ids[i], __ATOMIC_RELEASE);
    __atomic_store_n(&l[0], n, __ATOMIC_RELEASE);
    atomic_store_explicit(sq, s + 2, memory_order_release);
}

void hnsw_score(const hnsw_t *h, const vec_view_t *view, const float *q, const uint32_t *ids,
                uint32_t n, float *out)
{
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float *r[4] = {vec_row(view, ids[i]), vec_row(view, ids[i + 1]),
                             vec_row(view, ids[i + 2]), vec_row(view, ids[i + 3])};
        h->dist4(q, r, h->dim, out + i);
    }
    if (i < n) { /* the last one to three rows: one 4-row call, the last row repeated */
        const float *r[4];
        float d[4];
        for (uint32_t j = 0; j < 4; j++)
            r[j] = vec_row(view, ids[i + j < n ? i + j : n - 1]);
        h->dist4(q, r, h->dim, d);
        for (uint32_t j = 0; i + j < n; j++)
            out[i + j] = d[j];
    }
}

void hnsw_score_src(const hnsw_t *h, const hnsw_scorer_t *s, const uint32_t *ids, uint32_t n,
                    float *out)
{
    if (s->codes) {
        quant_query_score(s->codes, ids, n, out);
        return;
    }
    if (s->i8) {
        uint32_t i = 0;
        for (; i + 4 <= n; i += 4) {
            const int8_t *r[4] = {hnsw_i8_row(s, ids[i]), hnsw_i8_row(s, ids[i + 1]),
                                  hnsw_i8_row(s, ids[i + 2]), hnsw_i8_row(s, ids[i + 3])};
            s->idist4(s->qi, r, s->i8_stride, s->i8_unit, out + i);
        }
        if (i < n) { /* as hnsw_score: the rest in one 4-row call */
            const int8_t *r[4];
            float d[4];
            for (uint32_t j = 0; j < 4; j++)
                r[j] = hnsw_i8_row(s, ids[i + j < n ? i + j : n - 1]);
            s->idist4(s->qi, r, s->i8_stride, s->i8_unit, d);
            for (uint32_t j = 0; i + j < n; j++)
                out[i + j] = d[j];
        }
        return;
    }
    if (!s->bf) {
        hnsw_score(h, s->view, s->q, ids, n, out);
        return;
    }
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const uint16_t *r[4] = {hnsw_bf_row(s, ids[i]), hnsw_bf_row(s, ids[i + 1]),
                                hnsw_bf_row(s, ids[i + 2]), hnsw_bf_row(s, ids[i + 3])};
        s->bdist4(s->qb, r, s->bf_stride, out + i);
    }
    if (i < n) { /* as hnsw_score: the rest in one 4-row call */
        const uint16_t *r[4];
        float d[4];
        for (uint32_t j = 0; j < 4; j++)
            r[j] = hnsw_bf_row(s, ids[i + j < n ? i + j : n - 1]);
        s->bdist4(s->qb, r, s->bf_stride, d);
        for (uint32_t j = 0; i + j < n; j++)
            out[i + j] = d[j];
    }
}

/* ---------- visited sets ---------- */

int hnsw_visited_get(hnsw_t *h, hnsw_visited_t **out)
{
    pthread_mutex_lock(&h->pool_lock);
    hnsw_visited_t *v = h->pool;
    if (v)
        h->pool = v->next;
    pthread_mutex_unlock(&h->pool_lock);
    if (!v) {
        v = cdn_calloc(1, sizeof(*v));
        if (!v)
            return CDN_ERR_NOMEM;
    }
    if (v->cap < h->span) {
        /* A mapping (base/mem.h): marked at random, so advised for huge pages, and grown
         * without copying; the new marks read zero. */
        if (cdn_map_resize((void **)&v->marks, (size_t)v->cap * sizeof(uint16_t),
                           (size_t)h->span * sizeof(uint16_t))) {
            hnsw_visited_put(h, v);
            return CDN_ERR_NOMEM;
        }
        v->cap = h->span;
    }
    if (++v->tag == 0) {
        memset(v->marks, 0, (size_t)v->cap * sizeof(uint16_t));
        v->tag = 1;
    }
    *out = v;
    return CDN_OK;
}

void hnsw_visited_put(hnsw_t *h, hnsw_visited_t *v)
{
    pthread_mutex_lock(&h->pool_lock);
    v->next = h->pool;
    h->pool = v;
    pthread_mutex_unlock(&h->pool_lock);
}

/* ---------- worker threads ---------- */

void hnsw_run_threads(unsigned threads, void *(*fn)(void *), void *arg)
{
    if (threads == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        threads = c > 0 ? (unsigned)c : 1;
    }
    if (threads > HNSW_THREADS_MAX)
        threads = HNSW_THREADS_MAX;
    pthread_t tid[HNSW_THREADS_MAX];
    unsigned started = 0;
    for (unsigned t = 1; t < threads; t++)
        if (pthread_create(&tid[started], NULL, fn, arg) == 0)
            started++;
    fn(arg);
    for (unsigned t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
}
