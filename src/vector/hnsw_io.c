/* hnsw_io.c: saving and loading the HNSW graph as one checksummed file whose big arrays are
 * written and read in bulk. Relies on hnsw_int.h, POSIX file I/O and xxhash (XXH3). */
#include "vector/hnsw_int.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/err.h"
#include "base/fileio.h"
#include "base/mem.h"

/* File layout (host byte order, little-endian on every supported machine):
 *   header (128 bytes, below)
 *   flags[span] u8, levels[span] u8, zero padding to a multiple of 8
 *   level-0 lists: span * (m0 + 1) u32, exactly the in-memory array
 *   upper lists: for each claimed node with level > 0, in id order, level * (m + 1) u32
 * A claimed node that is not present is an insert that failed half way (out of memory): it is
 * kept, since other nodes may link to it, but it never seeds a search or counts as a node.
 *   trailer: XXH3-64 of every byte before it
 * The version changes whenever this layout does. */
#define HNSW_MAGIC "CDNHNSW\0"
#define HNSW_FILE_VERSION 1u

typedef struct file_header {
    char magic[8];
    uint32_t version, header_size;
    uint32_t metric, dim, m, ef_construction, ef_search, seed;
    uint32_t span, n_nodes, n_deleted, entry_id, entry_level, has_entry;
    uint64_t revision, upper_words;
    /* n_deleted when the last completed repair sweep began (hnsw_repair.c): the deletes it
     * unlinked. Was reserved (zero) before: a file written then reads as nothing repaired. */
    uint32_t n_deleted_repaired;
    uint8_t reserved[128 - 8 - 15 * 4 - 2 * 8];
} file_header_t;
_Static_assert(sizeof(file_header_t) == 128, "header is 128 bytes on disk");

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static int write_body(hnsw_t *h, int fd, XXH3_state_t *xs)
{
    static const uint8_t zeros[8];
    size_t span = h->span;
    int rc = cdn_file_write_all(fd, h->flags, span, xs);
    rc = rc ? rc : cdn_file_write_all(fd, h->levels, span, xs);
    rc = rc ? rc : cdn_file_write_all(fd, zeros, pad8(2 * span) - 2 * span, xs);
    /* Neighbour lists are read under their stripes' locks elsewhere; here no writer runs, and
     * searches only read, so the array can go out in one call. */
    rc = rc ? rc : cdn_file_write_all(fd, h->l0, span * ((size_t)h->m0 + 1) * sizeof(uint32_t), xs);
    for (size_t i = 0; i < span && !rc; i++)
        if ((h->flags[i] & HNSW_F_CLAIMED) && h->levels[i] > 0)
            rc = cdn_file_write_all(fd, h->upper[i],
                                    (size_t)h->levels[i] * (h->p.m + 1) * sizeof(uint32_t), xs);
    return rc;
}

static void fill_header(hnsw_t *h, uint64_t revision, file_header_t *hd)
{
    memset(hd, 0, sizeof(*hd));
    memcpy(hd->magic, HNSW_MAGIC, 8);
    hd->version = HNSW_FILE_VERSION;
    hd->header_size = sizeof(*hd);
    hd->metric = (uint32_t)h->metric;
    hd->dim = h->dim;
    hd->m = h->p.m;
    hd->ef_construction = h->p.ef_construction;
    hd->ef_search = h->p.ef_search;
    hd->seed = h->p.seed;
    hd->span = h->span;
    hd->n_nodes = atomic_load(&h->n_nodes);
    hd->n_deleted = atomic_load(&h->n_deleted);
    hd->n_deleted_repaired = atomic_load(&h->n_deleted_repaired);
    if (hd->n_deleted_repaired > hd->n_deleted) /* not possible today; keep the file valid */
        hd->n_deleted_repaired = hd->n_deleted;
    uint64_t e = atomic_load(&h->entry);
    hd->has_entry = e != HNSW_NO_ENTRY;
    hd->entry_id = hd->has_entry ? (uint32_t)e : 0;
    hd->entry_level = hd->has_entry ? (uint32_t)(e >> 32) : 0;
    hd->revision = revision;
    uint64_t words = 0;
    for (size_t i = 0; i < h->span; i++)
        if ((h->flags[i] & HNSW_F_CLAIMED) && h->levels[i] > 0)
            words += (uint64_t)h->levels[i] * (h->p.m + 1);
    hd->upper_words = words;
}

int hnsw_save(hnsw_t *h, const char *path, uint64_t revision)
{
    char tmp[4096];
    int fd, rc = h ? cdn_file_open_tmp(path, tmp, sizeof tmp, &fd) : CDN_ERR_INVALID;
    if (rc)
        return rc;
    XXH3_state_t *xs = cdn_file_hash_new();
    if (!xs)
        return cdn_file_commit(fd, tmp, path, CDN_ERR_NOMEM);
    pthread_rwlock_wrlock(&h->write_gate);
    pthread_rwlock_rdlock(&h->grow_lock);
    file_header_t hd;
    fill_header(h, revision, &hd);
    rc = cdn_file_write_all(fd, &hd, sizeof hd, xs);
    rc = rc ? rc : write_body(h, fd, xs);
    pthread_rwlock_unlock(&h->grow_lock);
    pthread_rwlock_unlock(&h->write_gate);
    uint64_t sum = XXH3_64bits_digest(xs);
    XXH3_freeState(xs);
    rc = rc ? rc : cdn_file_write_all(fd, &sum, sizeof sum, NULL);
    return cdn_file_commit(fd, tmp, path, rc);
}

/* ---------- load ---------- */

static int check_header(const file_header_t *hd, uint64_t file_size)
{
    if (memcmp(hd->magic, HNSW_MAGIC, 8) || hd->version != HNSW_FILE_VERSION ||
        hd->header_size != sizeof(*hd))
        return CDN_ERR_CORRUPT;
    if (hd->m < HNSW_M_MIN || hd->m > HNSW_M_MAX || hd->dim == 0 || hd->n_nodes > hd->span ||
        hd->n_deleted > hd->n_nodes || hd->n_deleted_repaired > hd->n_deleted ||
        hd->metric > VEC_METRIC_L2 ||
        (hd->has_entry && (hd->entry_id >= hd->span || hd->entry_level > HNSW_MAX_LEVEL)))
        return CDN_ERR_CORRUPT;
    uint64_t span = hd->span;
    uint64_t want =
        sizeof(*hd) + pad8(2 * span) + span * (2ull * hd->m + 1) * 4 + hd->upper_words * 4 + 8;
    if (hd->upper_words > span * (uint64_t)HNSW_MAX_LEVEL * (hd->m + 1) || want != file_size)
        return CDN_ERR_CORRUPT;
    return CDN_OK;
}

/* Checks what a search will trust: counts within capacity, ids within the span and pointing
 * at claimed nodes, flags consistent, levels matching the upper-list total. */
static int check_graph(const hnsw_t *h, const file_header_t *hd)
{
    uint64_t words = 0;
    uint32_t present = 0, deleted = 0;
    for (uint32_t i = 0; i < h->span; i++) {
        uint8_t f = h->flags[i];
        if ((f & ~(HNSW_F_CLAIMED | HNSW_F_PRESENT | HNSW_F_DELETED)) ||
            ((f & HNSW_F_PRESENT) && !(f & HNSW_F_CLAIMED)) ||
            ((f & HNSW_F_DELETED) && !(f & HNSW_F_PRESENT)))
            return CDN_ERR_CORRUPT;
        const uint32_t *l = h->l0 + (size_t)i * (h->m0 + 1);
        if (!(f & HNSW_F_CLAIMED)) {
            if (l[0] || h->levels[i])
                return CDN_ERR_CORRUPT;
            continue;
        }
        present += (f & HNSW_F_PRESENT) != 0;
        deleted += (f & HNSW_F_DELETED) != 0;
        if (h->levels[i] > HNSW_MAX_LEVEL || l[0] > h->m0)
            return CDN_ERR_CORRUPT;
        words += (uint64_t)h->levels[i] * (h->p.m + 1);
        for (uint32_t j = 1; j <= l[0]; j++)
            if (l[j] >= h->span || !(h->flags[l[j]] & HNSW_F_CLAIMED))
                return CDN_ERR_CORRUPT;
    }
    if (words != hd->upper_words || present != hd->n_nodes || deleted != hd->n_deleted)
        return CDN_ERR_CORRUPT;
    if (hd->has_entry &&
        (!(h->flags[hd->entry_id] & HNSW_F_PRESENT) || h->levels[hd->entry_id] != hd->entry_level))
        return CDN_ERR_CORRUPT;
    return hd->has_entry || present == 0 ? CDN_OK : CDN_ERR_CORRUPT;
}

/* Hands each upper-level node its lists out of the blob, checking every link. */
static int place_upper(hnsw_t *h, const uint32_t *blob)
{
    size_t per = h->p.m + 1;
    for (uint32_t i = 0; i < h->span; i++) {
        uint32_t lv = h->levels[i];
        if (!(h->flags[i] & HNSW_F_CLAIMED) || lv == 0)
            continue;
        for (uint32_t l = 0; l < lv; l++) {
            const uint32_t *s = blob + l * per;
            if (s[0] > h->p.m)
                return CDN_ERR_CORRUPT;
            for (uint32_t j = 1; j <= s[0]; j++)
                if (s[j] >= h->span || h->levels[s[j]] < l + 1 ||
                    !(h->flags[s[j]] & HNSW_F_CLAIMED))
                    return CDN_ERR_CORRUPT;
        }
        h->upper[i] = cdn_malloc(lv * per * sizeof(uint32_t));
        if (!h->upper[i])
            return CDN_ERR_NOMEM;
        memcpy(h->upper[i], blob, lv * per * sizeof(uint32_t));
        blob += lv * per;
    }
    return CDN_OK;
}

/* Reads everything after the header into a fresh index. */
static int read_body(int fd, const file_header_t *hd, hnsw_t *h, XXH3_state_t *xs)
{
    static uint8_t pad[8];
    int rc = hd->span ? hnsw_reserve(h, hd->span) : CDN_OK;
    uint32_t *blob = NULL;
    if (!rc)
        rc = cdn_file_read_all(fd, h->flags, hd->span, xs);
    rc = rc ? rc : cdn_file_read_all(fd, h->levels, hd->span, xs);
    rc =
        rc ? rc : cdn_file_read_all(fd, pad, pad8(2 * (size_t)hd->span) - 2 * (size_t)hd->span, xs);
    rc = rc ? rc
            : cdn_file_read_all(fd, h->l0, (size_t)hd->span * (h->m0 + 1) * sizeof(uint32_t), xs);
    if (!rc && !(blob = cdn_malloc(hd->upper_words * sizeof(uint32_t) + 1)))
        rc = CDN_ERR_NOMEM;
    rc = rc ? rc : cdn_file_read_all(fd, blob, hd->upper_words * sizeof(uint32_t), xs);
    uint64_t sum = 0;
    rc = rc ? rc : cdn_file_read_all(fd, &sum, sizeof sum, NULL);
    if (!rc && sum != XXH3_64bits_digest(xs))
        rc = CDN_ERR_CORRUPT;
    rc = rc ? rc : check_graph(h, hd);
    rc = rc ? rc : place_upper(h, blob);
    cdn_free(blob);
    return rc;
}

int hnsw_load(const char *path, hnsw_t **out, uint64_t *revision)
{
    *out = NULL;
    uint64_t size = 0;
    int fd, rc = cdn_file_open_read(path, &fd, &size);
    if (rc)
        return rc;
    file_header_t hd;
    hnsw_t *h = NULL;
    XXH3_state_t *xs = cdn_file_hash_new();
    rc = xs ? CDN_OK : CDN_ERR_NOMEM;
    if (!rc && size < sizeof hd)
        rc = CDN_ERR_CORRUPT;
    rc = rc ? rc : cdn_file_read_all(fd, &hd, sizeof hd, xs);
    rc = rc ? rc : check_header(&hd, size);
    if (!rc) {
        hnsw_params_t p = {hd.m, hd.ef_construction, hd.ef_search, hd.seed};
        rc = hnsw_create(p, (vec_metric_t)hd.metric, hd.dim, &h);
        if (rc == CDN_ERR_INVALID)
            rc = CDN_ERR_CORRUPT;
    }
    rc = rc ? rc : read_body(fd, &hd, h, xs);
    close(fd);
    if (xs)
        XXH3_freeState(xs);
    if (rc) {
        hnsw_free(h);
        return rc;
    }
    atomic_store(&h->n_nodes, hd.n_nodes);
    atomic_store(&h->n_deleted, hd.n_deleted);
    atomic_store(&h->n_deleted_repaired, hd.n_deleted_repaired);
    atomic_store(&h->upper_words, hd.upper_words);
    if (hd.has_entry)
        atomic_store(&h->entry, (uint64_t)hd.entry_level << 32 | hd.entry_id);
    *out = h;
    if (revision)
        *revision = hd.revision;
    return CDN_OK;
}
