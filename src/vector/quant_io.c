/* quant_io.c: saving and loading a quantizer's codes, so that opening a collection need not
 * re-encode (and so read) every float row. Relies on quant_int.h, base/fileio.h, xxhash.
 *
 * File layout (host byte order, little-endian on every supported machine):
 *   header (64 bytes, below)
 *   lo[stride], s[stride], center[stride] floats
 *   n_chunks chunks, each exactly the in-memory chunk (8-bit codes, then 1-bit rows with e_r, r_r)
 *   trailer: XXH3-64 of every byte before it
 * The codes only restate float rows, so a file that does not match them is worse than none:
 * quant_load checks sample rows against the view and refuses on any difference. */
#include "vector/quant_int.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/err.h"
#include "base/fileio.h"
#include "base/mem.h"

#define QUANT_MAGIC "CDNQ8\0\0\0"
#define QUANT_FILE_VERSION 3u /* 2: 1-bit codes and their centre; 3: e_r, r_r in their rows */
/* Rows re-encoded at load to check the file against the float rows (plus the last one). */
#define QUANT_VERIFY_ROWS 64u

typedef struct qfile_header {
    char magic[8];
    uint32_t version, header_size, dim, stride, count, n_chunks, chunk_rows, bstride;
    uint8_t reserved[64 - 8 - 8 * 4];
} qfile_header_t;
_Static_assert(sizeof(qfile_header_t) == 64, "header is 64 bytes on disk");

int quant_save(const quant_t *q, const char *path)
{
    char tmp[4096];
    int fd;
    if (!q || !q->trained)
        return CDN_ERR_INVALID;
    quant_snap_t r = quant_snap(q);
    qfile_header_t hd = {.magic = QUANT_MAGIC,
                         .version = QUANT_FILE_VERSION,
                         .header_size = sizeof hd,
                         .dim = q->dim,
                         .stride = q->stride,
                         .count = r.count,
                         .n_chunks = (r.count + QUANT_CHUNK_ROWS - 1) >> QUANT_CHUNK_SHIFT,
                         .chunk_rows = QUANT_CHUNK_ROWS,
                         .bstride = q->bstride};
    int rc = cdn_file_open_tmp(path, tmp, sizeof tmp, &fd);
    if (rc)
        return rc;
    XXH3_state_t *xs = cdn_file_hash_new();
    rc = xs ? CDN_OK : CDN_ERR_NOMEM;
    rc = rc ? rc : cdn_file_write_all(fd, &hd, sizeof hd, xs);
    rc = rc ? rc : cdn_file_write_all(fd, q->lo, q->stride * sizeof(float), xs);
    rc = rc ? rc : cdn_file_write_all(fd, q->s, q->stride * sizeof(float), xs);
    rc = rc ? rc : cdn_file_write_all(fd, q->center, q->stride * sizeof(float), xs);
    for (uint32_t i = 0; rc == CDN_OK && i < hd.n_chunks; i++)
        rc = cdn_file_write_all(fd, r.dir[i], quant_chunk_bytes(q), xs);
    uint64_t sum = xs ? XXH3_64bits_digest(xs) : 0;
    XXH3_freeState(xs);
    rc = rc ? rc : cdn_file_write_all(fd, &sum, sizeof sum, NULL);
    return cdn_file_commit(fd, tmp, path, rc);
}

static int check_header(const qfile_header_t *hd, const quant_t *q, uint64_t size)
{
    uint32_t stride = q->stride;
    if (memcmp(hd->magic, QUANT_MAGIC, 8) || hd->version != QUANT_FILE_VERSION ||
        hd->header_size != sizeof *hd || hd->dim != q->dim || hd->stride != stride ||
        hd->bstride != q->bstride || hd->chunk_rows != QUANT_CHUNK_ROWS ||
        hd->n_chunks != (hd->count + QUANT_CHUNK_ROWS - 1) >> QUANT_CHUNK_SHIFT)
        return CDN_ERR_CORRUPT;
    uint64_t want = sizeof *hd + 3ull * stride * sizeof(float) +
                    (uint64_t)hd->n_chunks * quant_chunk_bytes(q) + sizeof(uint64_t);
    return size == want ? CDN_OK : CDN_ERR_CORRUPT;
}

static int read_body(int fd, const qfile_header_t *hd, quant_t *q, XXH3_state_t *xs)
{
    int rc = cdn_file_read_all(fd, q->lo, q->stride * sizeof(float), xs);
    rc = rc ? rc : cdn_file_read_all(fd, q->s, q->stride * sizeof(float), xs);
    rc = rc ? rc : cdn_file_read_all(fd, q->center, q->stride * sizeof(float), xs);
    q->trained = 1;
    rc = rc ? rc : quant_reserve_rows(q, hd->count);
    for (uint32_t i = 0; rc == CDN_OK && i < hd->n_chunks; i++)
        rc = cdn_file_read_all(fd, q->chunks[i], quant_chunk_bytes(q), xs);
    if (rc == CDN_OK) {
        uint64_t sum = 0, want = XXH3_64bits_digest(xs);
        rc = cdn_file_read_all(fd, &sum, sizeof sum, NULL);
        if (rc == CDN_OK && sum != want)
            rc = CDN_ERR_CORRUPT;
    }
    return rc;
}

int quant_load(const char *path, const vec_view_t *v, quant_t **out)
{
    if (!path || !v || !out)
        return CDN_ERR_INVALID;
    *out = NULL;
    uint64_t size = 0;
    int fd, rc = cdn_file_open_read(path, &fd, &size);
    if (rc)
        return rc;
    qfile_header_t hd;
    quant_t *q = NULL;
    XXH3_state_t *xs = cdn_file_hash_new();
    rc = xs ? CDN_OK : CDN_ERR_NOMEM;
    rc = rc ? rc : cdn_file_read_all(fd, &hd, sizeof hd, xs);
    rc = rc ? rc : quant_create(v->dim, &q, NULL);
    rc = rc ? rc : check_header(&hd, q, size);
    rc = rc ? rc : read_body(fd, &hd, q, xs);
    close(fd);
    XXH3_freeState(xs);
    /* Rows past the view were never acknowledged (a crash after the save): forget them. */
    if (rc == CDN_OK)
        q->count = hd.count < v->count ? hd.count : v->count;
    if (rc == CDN_OK && !quant_rows_match(q, v, QUANT_VERIFY_ROWS))
        rc = CDN_ERR_CORRUPT;
    if (rc) {
        quant_free(q);
        return rc;
    }
    *out = q;
    return CDN_OK;
}
