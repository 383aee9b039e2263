/* topk.h: the one bounded top-k heap: the k best (id, key) pairs seen so far, lower keys
 * better: distances for the vector scans, negated scores for BM25. Relies on base/mem.h; no
 * locking: one heap per search thread. */
#ifndef CDN_TOPK_H
#define CDN_TOPK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One result: a row id and its key, lower is better: a distance (as vec_dist_fn returns), or a
 * BM25 score negated. */
typedef struct topk_hit {
    uint32_t id;
    float dist;
} topk_hit_t;

/* The k best hits so far, as a max-heap whose root is the worst kept hit. Order is total:
 * (dist, id) ascending, so equal distances are broken by the smaller id and results do not
 * depend on the order rows were pushed. Fields are read-only outside topk.c. */
typedef struct topk {
    topk_hit_t *heap; /* heap[0] is the worst kept hit */
    size_t n;         /* hits held, <= k */
    size_t k;
    bool owned; /* heap came from topk_init and is freed by topk_free */
} topk_t;

/* Prepares t to keep k hits, allocating its storage. Returns 0 or CDN_ERR_NOMEM. k may be 0
 * (then nothing ever enters). Release with topk_free. */
int topk_init(topk_t *t, size_t k);

/* Prepares t over caller storage of k hits (e.g. on the stack); topk_free is then a no-op for
 * the storage, which the caller keeps owning. */
void topk_init_buf(topk_t *t, topk_hit_t *storage, size_t k);

/* Frees what topk_init allocated; t is empty afterwards. NULL-safe. */
void topk_free(topk_t *t);

/* Empties t, keeping its capacity. */
static inline void topk_clear(topk_t *t)
{
    t->n = 0;
}

static inline size_t topk_size(const topk_t *t)
{
    return t->n;
}
static inline bool topk_full(const topk_t *t)
{
    return t->n == t->k;
}

/* The largest distance held, +INFINITY when empty. */
float topk_worst(const topk_t *t);

/* The distance a new hit must be below (or equal with a smaller id) to enter: the worst held
 * distance once full, +INFINITY before. Lets a caller skip work for hopeless candidates. */
float topk_bound(const topk_t *t);

/* Offers (id, dist). Returns true if it entered (evicting the worst if t was full), false if
 * it was no better than the worst of a full heap, k is 0, or dist is NaN. Does not check for a
 * duplicate id: push each id once. */
bool topk_push(topk_t *t, uint32_t id, float dist);

/* Removes the worst held hit into *out (if out is not NULL). Returns false when empty. */
bool topk_pop_worst(topk_t *t, topk_hit_t *out);

/* Writes the held hits to out (room for topk_size(t) hits) sorted nearest first, ties by
 * smaller id, sets *n_out to their number, and leaves t empty. out may be the storage given to
 * topk_init_buf (an in-place heap sort), so a search can keep its heap in the caller's array. */
void topk_extract(topk_t *t, topk_hit_t *out, size_t *n_out);

#endif
