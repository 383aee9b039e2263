/* hnsw_compact.c: a copy of the graph without the nodes a compaction drops, renumbered, for
 * collections whose rows are renumbered to close the gaps deletes and replaces leave
 * (query/compact.c). Relies on hnsw_int.h and base/mem.h. */
#include "vector/hnsw_int.h"

#include <string.h>

#include "base/err.h"
#include "base/mem.h"

/* Checks that map sends the present, undeleted nodes it keeps one to one onto 0..n_new-1. */
static int check_map(const hnsw_t *h, const uint32_t *map, uint32_t n_map, uint32_t n_new)
{
    uint8_t *seen = cdn_calloc(n_new ? n_new : 1, 1);
    uint32_t kept = 0;
    int rc = seen ? CDN_OK : CDN_ERR_NOMEM;
    for (uint32_t i = 0; i < n_map && rc == CDN_OK; i++) {
        if (map[i] == HNSW_COMPACT_GONE)
            continue;
        uint8_t f = i < h->span ? hnsw_flags(h, i) : 0;
        if (map[i] >= n_new || seen[map[i]] || !(f & HNSW_F_PRESENT) || (f & HNSW_F_DELETED))
            rc = CDN_ERR_INVALID;
        else
            seen[map[i]] = 1, kept++;
    }
    cdn_free(seen);
    return rc == CDN_OK && kept != n_new ? CDN_ERR_INVALID : rc;
}

/* Writes src's list (count in slot 0) into dst with ids mapped, links to left-out nodes
 * dropped. */
static uint32_t copy_list(const uint32_t *src, uint32_t *dst, const uint32_t *map, uint32_t n_map)
{
    uint32_t n = 0;
    for (uint32_t j = 1; j <= src[0]; j++)
        if (src[j] < n_map && map[src[j]] != HNSW_COMPACT_GONE)
            dst[1 + n++] = map[src[j]];
    dst[0] = n;
    return n;
}

static int fill(hnsw_t *h, hnsw_t *o, const uint32_t *map, uint32_t n_map)
{
    size_t per = (size_t)h->p.m + 1;
    uint64_t words = 0;
    for (uint32_t i = 0; i < n_map; i++) {
        uint32_t id = map[i];
        if (id == HNSW_COMPACT_GONE)
            continue;
        uint32_t lv = h->levels[i];
        o->levels[id] = (uint8_t)lv;
        o->flags[id] = HNSW_F_CLAIMED | HNSW_F_PRESENT;
        copy_list(hnsw_list_at(h, i, 0), hnsw_list_at(o, id, 0), map, n_map);
        if (lv == 0)
            continue;
        if (!(o->upper[id] = cdn_malloc(lv * per * sizeof(uint32_t))))
            return CDN_ERR_NOMEM;
        for (uint32_t l = 1; l <= lv; l++)
            copy_list(hnsw_list_at(h, i, l), hnsw_list_at(o, id, l), map, n_map);
        words += lv * per;
    }
    atomic_store(&o->upper_words, words);
    return CDN_OK;
}

/* The entry point: h's if kept, else the first kept node of the highest level. */
static uint64_t pick_entry(const hnsw_t *h, const hnsw_t *o, const uint32_t *map, uint32_t n_map,
                           uint32_t n_new)
{
    uint64_t e = atomic_load(&h->entry);
    if (e != HNSW_NO_ENTRY && (uint32_t)e < n_map && map[(uint32_t)e] != HNSW_COMPACT_GONE)
        return (e >> 32) << 32 | map[(uint32_t)e];
    if (n_new == 0)
        return HNSW_NO_ENTRY;
    uint32_t best = 0;
    for (uint32_t id = 1; id < n_new; id++)
        if (o->levels[id] > o->levels[best])
            best = id;
    return (uint64_t)o->levels[best] << 32 | best;
}

int hnsw_compact(hnsw_t *h, const uint32_t *map, uint32_t n_map, uint32_t n_new, hnsw_t **out)
{
    hnsw_t *o = NULL;
    int rc;
    *out = NULL;
    if (!h || (n_map && !map))
        return CDN_ERR_INVALID;
    /* No insert, delete or repair while the lists are read: as a save does. */
    pthread_rwlock_wrlock(&h->write_gate);
    if (n_map > h->span)
        n_map = h->span; /* ids past the span were never nodes: left out */
    if ((rc = check_map(h, map, n_map, n_new)) == CDN_OK &&
        (rc = hnsw_create(h->p, h->metric, h->dim, &o)) == CDN_OK &&
        (rc = n_new ? hnsw_reserve(o, n_new) : CDN_OK) == CDN_OK &&
        (rc = fill(h, o, map, n_map)) == CDN_OK) {
        atomic_store(&o->n_nodes, n_new);
        atomic_store(&o->entry, pick_entry(h, o, map, n_map, n_new));
    }
    pthread_rwlock_unlock(&h->write_gate);
    if (rc) {
        hnsw_free(o);
        return rc;
    }
    *out = o;
    return CDN_OK;
}
