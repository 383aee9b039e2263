/* fscache.h: a text field's BM25 statistics over the document sets it was recently searched
 * with, kept between searches. A subject's readable set is the same for each of its searches
 * until a write or a permission change, and computing N, avgdl and the query terms' df over it
 * was most of a search at 1 % to 10 % readable (docs/internals/text.md). Entries are found by
 * content (the set's cardinality, then an equality test of the bitmaps), so two subjects with
 * the same readable set share one; every write to the field makes them all stale.
 * Relies on fstats.h and CRoaring. Thread-safe: searches share one cache. */
#ifndef CDN_FSCACHE_H
#define CDN_FSCACHE_H

#include <roaring/roaring.h>
#include <stddef.h>
#include <stdint.h>

#include "text/fstats.h"
#include "text/invidx.h"

/* Limits per field: at most this many sets, and this many bytes of kept bitmaps, doc arrays
 * and document frequencies (the least recently used go first). */
#define FSCACHE_ENTRIES 64
#define FSCACHE_BYTES (32u << 20)

typedef struct fscache fscache_t;

/* 0 or CDN_ERR_NOMEM. Free with fscache_free (no statistics may be held then). */
int fscache_create(fscache_t **out);
void fscache_free(fscache_t *c);

/* The statistics of ix over `over` (not NULL), shared and read-only: found, or computed and
 * kept. The caller holds them until fscache_release; ix must not change meanwhile (writers
 * exclude searches). Sets that hold the whole field are not kept (their statistics are the
 * field's own, one intersection away). 0 or CDN_ERR_NOMEM. */
int fscache_get(fscache_t *c, const invidx_t *ix, const roaring_bitmap_t *over,
                const fstats_t **out);
void fscache_release(fscache_t *c, const fstats_t *fs);

/* What a cache holds and has done, for tests and benchmarks. */
typedef struct fscache_stats {
    uint64_t hits;   /* lookups answered from the cache */
    uint64_t misses; /* lookups that computed the statistics */
    size_t entries, bytes;
} fscache_stats_t;
void fscache_stats(fscache_t *c, fscache_stats_t *out);

#endif
