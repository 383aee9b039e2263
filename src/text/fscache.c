/* fscache.c: a field's statistics over recently used document sets (fscache.h). Entries are
 * found by the set's content, so no caller needs to name its set; an entry made before the
 * field's last write is stale and dropped on the next lookup. Relies on fstats and CRoaring. */
#include "text/fscache.h"

#include <pthread.h>

#include "base/mem.h"

typedef struct entry {
    fstats_t fs;
    roaring_bitmap_t *over; /* the set the statistics are over (a copy) */
    uint64_t card;          /* its cardinality: the first, cheap, test of a lookup */
    uint64_t gen;           /* the field's generation they were computed at */
    uint64_t used;          /* the cache's clock at the last lookup that found it */
    size_t bytes;
    unsigned refs; /* searches holding it */
    int evicted;   /* out of the cache, freed by its last release */
} entry_t;

struct fscache {
    pthread_mutex_t mu;
    entry_t *e[FSCACHE_ENTRIES];
    size_t n, bytes;
    uint64_t clock, hits, misses;
};

int fscache_create(fscache_t **out)
{
    fscache_t *c = cdn_calloc(1, sizeof *c);
    if (!c)
        return CDN_ERR_NOMEM;
    pthread_mutex_init(&c->mu, NULL);
    *out = c;
    return CDN_OK;
}

static void entry_free(entry_t *x)
{
    fstats_free(&x->fs);
    if (x->over)
        roaring_bitmap_free(x->over);
    cdn_free(x);
}

void fscache_free(fscache_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        entry_free(c->e[i]);
    pthread_mutex_destroy(&c->mu);
    cdn_free(c);
}

/* Takes entry i out of the cache; it is freed now, or by its last holder. Called with mu. */
static void drop(fscache_t *c, size_t i)
{
    entry_t *x = c->e[i];
    c->bytes -= x->bytes;
    c->e[i] = c->e[--c->n];
    if (x->refs)
        x->evicted = 1;
    else
        entry_free(x);
}

/* Makes room for an entry of `bytes`: stale entries first, then the least recently used.
 * Called with mu. */
static void make_room(fscache_t *c, const invidx_t *ix, size_t bytes)
{
    for (size_t i = c->n; i-- > 0;)
        if (c->e[i]->gen != ix->gen)
            drop(c, i);
    while (c->n && (c->n == FSCACHE_ENTRIES || c->bytes + bytes > FSCACHE_BYTES)) {
        size_t lru = 0;
        for (size_t i = 1; i < c->n; i++)
            if (c->e[i]->used < c->e[lru]->used)
                lru = i;
        drop(c, lru);
    }
}

/* The entry of over at ix's generation, or NULL. Called with mu. */
static entry_t *find(fscache_t *c, const invidx_t *ix, const roaring_bitmap_t *over, uint64_t card)
{
    for (size_t i = 0; i < c->n; i++) {
        entry_t *x = c->e[i];
        if (x->gen == ix->gen && x->fs.ix == ix && x->card == card &&
            roaring_bitmap_equals(x->over, over))
            return x;
    }
    return NULL;
}

int fscache_get(fscache_t *c, const invidx_t *ix, const roaring_bitmap_t *over,
                const fstats_t **out)
{
    uint64_t card = roaring_bitmap_get_cardinality(over);
    pthread_mutex_lock(&c->mu);
    entry_t *x = find(c, ix, over, card);
    if (x) {
        x->refs++;
        x->used = ++c->clock;
        c->hits++;
        pthread_mutex_unlock(&c->mu);
        *out = &x->fs;
        return CDN_OK;
    }
    c->misses++;
    pthread_mutex_unlock(&c->mu);
    /* Computed outside the lock: other searches go on meanwhile. */
    x = cdn_calloc(1, sizeof *x);
    if (!x)
        return CDN_ERR_NOMEM;
    int rc = fstats_init(&x->fs, ix, over);
    if (rc == CDN_OK && x->fs.cnt) {
        rc = fstats_memo_start(&x->fs);
        if (rc == CDN_OK && !(x->over = roaring_bitmap_copy(over)))
            rc = CDN_ERR_NOMEM;
    }
    if (rc) {
        fstats_free(&x->fs);
        cdn_free(x);
        return rc;
    }
    x->refs = 1;
    x->card = card;
    x->gen = ix->gen;
    if (!x->fs.cnt) { /* the whole field: not kept, the caller's own */
        x->evicted = 1;
        *out = &x->fs;
        return CDN_OK;
    }
    x->bytes = fstats_bytes(&x->fs) + roaring_bitmap_size_in_bytes(x->over) + sizeof *x;
    pthread_mutex_lock(&c->mu);
    if (x->bytes > FSCACHE_BYTES || find(c, ix, over, card)) { /* too big, or made meanwhile */
        x->evicted = 1;
    } else {
        make_room(c, ix, x->bytes);
        x->used = ++c->clock;
        c->e[c->n++] = x;
        c->bytes += x->bytes;
    }
    pthread_mutex_unlock(&c->mu);
    *out = &x->fs;
    return CDN_OK;
}

void fscache_release(fscache_t *c, const fstats_t *fs)
{
    /* fs is the first member of its entry */
    entry_t *x = (entry_t *)(void *)fs;
    pthread_mutex_lock(&c->mu);
    int last = --x->refs == 0 && x->evicted;
    pthread_mutex_unlock(&c->mu);
    if (last)
        entry_free(x);
}

void fscache_stats(fscache_t *c, fscache_stats_t *out)
{
    pthread_mutex_lock(&c->mu);
    *out = (fscache_stats_t){c->hits, c->misses, c->n, c->bytes};
    pthread_mutex_unlock(&c->mu);
}
