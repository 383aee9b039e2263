/* graph.c: keeping a collection's HNSW graph in step with its rows: checkpoint load and
 * catch-up at open, inserts on writes, checkpoint save at close.
 * Relies on vector/hnsw; the checkpoint's revision slot records the row count it reflects,
 * since rows are append-only and numbered in commit order. */
#include "base/mem.h"
#include "query/collection.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Below this many rows, inserting one by one beats starting threads. */
#define GRAPH_PARALLEL_MIN 256

int coll_graph_insert(coll_t *c, const uint32_t *rows, size_t n)
{
    vec_view_t v;
    int rc = CDN_OK;
    if (!c->hnsw || n == 0)
        return CDN_OK;
    coll_view(c, &v);
    v.count = rows[n - 1] + 1 > v.count ? rows[n - 1] + 1 : v.count;
    if (n >= GRAPH_PARALLEL_MIN)
        rc = hnsw_build(c->hnsw, &v, rows, n, 0);
    else
        for (size_t i = 0; i < n && rc == CDN_OK; i++)
            rc = hnsw_insert(c->hnsw, &v, rows[i]);
    c->hnsw_dirty = 1;
    return rc;
}

static bool delete_one(uint32_t row, void *h)
{
    hnsw_delete(h, row); /* CDN_ERR_NOT_FOUND: never inserted, which is fine */
    return true;
}

/* Inserts the live rows at or above `from`, and deletes the dead rows below it. */
static int catch_up(coll_t *c, uint32_t from)
{
    const roaring_bitmap_t *live = acl_index_live(c->acl);
    roaring_bitmap_t *add = roaring_bitmap_copy(live), *dead;
    uint32_t *rows = NULL;
    size_t n;
    int rc = CDN_OK;
    if (!add)
        return CDN_ERR_NOMEM;
    roaring_bitmap_remove_range(add, 0, from);
    n = roaring_bitmap_get_cardinality(add);
    if (n && !(rows = cdn_malloc(n * sizeof *rows)))
        rc = CDN_ERR_NOMEM;
    if (rows) {
        roaring_bitmap_to_uint32_array(add, rows);
        rc = coll_graph_insert(c, rows, n);
    }
    roaring_bitmap_free(add);
    cdn_free(rows);
    if (rc || from == 0)
        return rc;
    dead = roaring_bitmap_from_range(0, from, 1);
    if (!dead)
        return CDN_ERR_NOMEM;
    roaring_bitmap_andnot_inplace(dead, live);
    roaring_iterate(dead, delete_one, c->hnsw);
    roaring_bitmap_free(dead);
    return CDN_OK;
}

int coll_graph_open(const char *dir, coll_t *c, cdn_err_t *err)
{
    char path[4096];
    hnsw_t *h = NULL;
    uint64_t rows = 0;
    int rc;
    if ((rc = coll_file_path(dir, c->cfg.id, "hnsw", path, sizeof path)) != 0)
        return cdn_err_set(err, rc, "data directory path too long");
    if (access(path, F_OK) == 0) {
        rc = hnsw_load(path, &h, &rows);
        if (rc == CDN_OK && rows <= c->next_row) {
            hnsw_free(c->hnsw);
            c->hnsw = h;
        } else {
            /* A checkpoint that does not load (or is ahead of the store) is only derived
             * state: rebuild from the rows rather than refuse to open. */
            fprintf(stderr, "cordon: graph checkpoint %s is unusable (%s); rebuilding\n", path,
                    rc ? cdn_strerror(rc) : "ahead of the store");
            hnsw_free(h);
            rows = 0;
        }
    }
    c->hnsw_saved = (uint32_t)rows;
    if ((rc = catch_up(c, (uint32_t)rows)) != 0)
        return cdn_err_set(err, rc, "cannot rebuild the vector graph of \"%s\": %s", c->cfg.name,
                           cdn_strerror(rc));
    c->hnsw_dirty = rows != c->next_row;
    return CDN_OK;
}

int coll_graph_save(const char *dir, coll_t *c, cdn_err_t *err)
{
    char path[4096];
    int rc;
    if (!c->hnsw || !c->hnsw_dirty)
        return CDN_OK;
    if ((rc = coll_file_path(dir, c->cfg.id, "hnsw", path, sizeof path)) != 0 ||
        (rc = hnsw_save(c->hnsw, path, c->next_row)) != 0)
        return cdn_err_set(err, rc, "cannot save the vector graph of \"%s\"", c->cfg.name);
    c->hnsw_saved = c->next_row;
    c->hnsw_dirty = 0;
    return CDN_OK;
}
