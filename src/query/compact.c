/* compact.c: renumbering a collection's rows to close the gaps that deletes and replaces leave.
 * A replace appends a row and leaves the old one dead; the vector file, the 8-bit codes, the
 * graph and the text index keep every row ever written. A compaction writes the next
 * generation of the collection's files with the live rows only, numbered 0..live-1 in the order
 * of their ACLs (acl_order_rows: a group's rows in runs, which scans read as streams; an ACL's
 * rows in their old order), renumbers the rows in the store and switches to the new files in
 * the same commit (copies renumbered, nothing re-encoded or re-analysed).
 * Relies on coll.h (files, rows), vector/ (graph and codes copies), text/ (the text index's
 * renumbered save), write_int.h (the commit).
 *
 * Why nothing is lost or half seen:
 * - The next generation's files are written and synced under names no open reads
 *   (coll_file_path with gen + 1) before anything is committed; a crash before the commit
 *   leaves them as orphans that the next open removes (coll_files_sweep), a crash after it
 *   leaves the old generation's files as orphans. The store's commit is the one switch.
 * - Writers wait on the engine's write lock from the copies on (the graph repair runs before,
 *   beside them), so the rows copied are the rows committed; searches go on against the old
 *   copy meanwhile.
 * - The commit happens under the old copy's write lock, and marks it superseded there: a
 *   reader that takes its read lock afterwards moves to the new copy (engine_coll_rdlock)
 *   before reading any row number from the store, so a row number of one generation is never
 *   read against the other's vectors or ACLs. */
#include "query/compact.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fileio.h"
#include "base/mem.h"
#include "base/testhook.h"
#include "query/chunkrec.h"
#include "query/write_int.h"

/* How long a compaction lets searches drain so that the store can close its environment and
 * hand back the pages the renumbering dirtied (store_trim); searches begun meanwhile wait. */
#define COMPACT_DRAIN_MS 200
/* A database file smaller than this is not rewritten for its free pages. */
#define COMPACT_FILE_MIN (1u << 20)

#define COMPACT_COPY_ROWS 1024 /* vector rows gathered into one write */

/* The vector file of the next generation: the live rows in their new order, synced. */
static int copy_vectors(const char *dir, coll_t *c, const coll_config_t *cfg2, const uint32_t *map,
                        uint32_t n_old, uint32_t n_new, cdn_err_t *err)
{
    char path[4096];
    vecfile_t *vf = NULL;
    const float *rows[COMPACT_COPY_ROWS];
    vec_view_t v;
    uint32_t n = 0, *from = cdn_malloc((n_new ? n_new : 1) * sizeof *from);
    int rc;
    if (!from)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    for (uint32_t r = 0; r < n_old; r++) /* new row -> old row */
        if (map[r] != HNSW_COMPACT_GONE)
            from[map[r]] = r;
    if ((rc = coll_vecfile_path(dir, cfg2, path, sizeof path)) != 0) {
        cdn_free(from);
        return cdn_err_set(err, rc, "data directory path too long");
    }
    if ((rc = vecfile_open(path, cfg2->dim, &vf, err)) != 0) {
        cdn_free(from);
        return rc;
    }
    coll_view(c, &v);
    for (uint32_t r = 0; r < n_new && rc == CDN_OK; r++) {
        rows[n++] = vec_row(&v, from[r]);
        if (n == COMPACT_COPY_ROWS || r + 1 == n_new) {
            rc = vecfile_write(vf, r + 1 - n, rows, n, err);
            n = 0;
        }
    }
    cdn_free(from);
    if (rc == CDN_OK)
        rc = vecfile_sync(vf, err);
    vecfile_close(vf);
    /* the new name too: the commit will point at it */
    if (rc == CDN_OK && cdn_file_fsync_dir_of(path) != CDN_OK)
        rc = cdn_err_set(err, CDN_ERR_IO, "cannot sync the data directory");
    return rc;
}

/* The graph and codes checkpoints of the next generation, renumbered copies of the current
 * ones (the graph repaired first, so no kept node loses a link to a deleted one), and the
 * calibrated breadths (measured on more rows than the copy has: they still apply). */
static int copy_indexes(const char *dir, coll_t *c, const coll_config_t *cfg2, const uint32_t *map,
                        uint32_t n_old, uint32_t n_new, cdn_err_t *err)
{
    char path[4096], from[4096];
    hnsw_info_t info;
    vec_view_t v;
    int rc = CDN_OK;
    coll_view(c, &v);
    hnsw_get_info(c->hnsw, &info);
    /* Most of the work was done before writers were held off (repair_first); this pass
     * unlinks what was deleted since, and costs a read of each list otherwise. It runs
     * whenever any node is deleted rather than trusting the count of unlinked deletes, which
     * a sweep of the writer's beside repair_first may have overstated. */
    if (info.deleted && (rc = hnsw_repair(c->hnsw, &v, 0, NULL)) != 0)
        return cdn_err_set(err, rc, "cannot repair the vector graph: %s", cdn_strerror(rc));
    hnsw_t *h2 = NULL;
    if ((rc = hnsw_compact(c->hnsw, map, n_old, n_new, &h2)) != 0)
        return cdn_err_set(err, rc, "cannot copy the vector graph: %s", cdn_strerror(rc));
    if ((rc = coll_file_path(dir, cfg2->id, cfg2->gen, "hnsw", path, sizeof path)) == 0)
        rc = hnsw_save(h2, path, n_new);
    hnsw_free(h2);
    if (rc)
        return cdn_err_set(err, rc, "cannot save the compacted graph: %s", cdn_strerror(rc));
    if (c->quant && quant_is_trained(c->quant)) {
        quant_t *q2 = NULL;
        if ((rc = quant_compact(c->quant, map, n_old, n_new, &q2)) == 0 &&
            (rc = coll_file_path(dir, cfg2->id, cfg2->gen, "q8", path, sizeof path)) == 0)
            rc = quant_save(q2, path);
        quant_free(q2);
        if (rc)
            return cdn_err_set(err, rc, "cannot save the compacted codes: %s", cdn_strerror(rc));
    }
    if (coll_file_path(dir, c->cfg.id, c->cfg.gen, "efauto", from, sizeof from) == 0 &&
        coll_file_path(dir, cfg2->id, cfg2->gen, "efauto", path, sizeof path) == 0)
        coll_file_copy(from, path); /* a missing copy is measured again: no error */
    return CDN_OK;
}

/* The text index checkpoint of the next generation: the current index written with its doc
 * ids renumbered, so that the copy loads it instead of analysing every chunk's text again. */
static int copy_text(const char *dir, coll_t *c, const coll_config_t *cfg2, const uint32_t *map,
                     uint32_t n_old, uint32_t n_new, cdn_err_t *err)
{
    char path[4096];
    int rc = coll_file_path(dir, cfg2->id, cfg2->gen, "text", path, sizeof path);
    if (rc)
        return cdn_err_set(err, rc, "data directory path too long");
    return textidx_save_mapped(c->text, path, n_new, map, n_old, err);
}

/* The rows renumber moves, between its two passes: each row's old and new number and where
 * its ACL record's bytes are kept. */
typedef struct moved {
    uint32_t from, to;
    size_t off, len; /* in bytes */
} moved_t;

typedef struct moves {
    moved_t *m;
    size_t n, cap;
    unsigned char *acl; /* the ACL records, one after another */
    size_t acl_len, acl_cap;
} moves_t;

/* Takes row r's ACL and row records out of t, keeping the ACL's bytes in mv (the row record
 * is not kept: coll_row_id still names it); 0 or an error. */
static int take_row(store_txn_t *t, coll_t *c, uint32_t r, uint32_t to, moves_t *mv)
{
    unsigned char ok[8];
    const void *v;
    size_t vlen;
    int rc;
    coll_row_key(c->cfg.id, r, ok);
    if (store_get(t, STORE_ACLS, ok, 8, &v, &vlen) != CDN_OK ||
        vlen > (2 + ACL_MAX_PRINCIPALS) * sizeof(uint32_t))
        return CDN_ERR_CORRUPT;
    if (cdn_grow((void **)&mv->m, &mv->cap, mv->n + 1, sizeof *mv->m) ||
        cdn_grow((void **)&mv->acl, &mv->acl_cap, mv->acl_len + vlen, 1))
        return CDN_ERR_NOMEM;
    memcpy(mv->acl + mv->acl_len, v, vlen);
    mv->m[mv->n++] = (moved_t){r, to, mv->acl_len, vlen};
    mv->acl_len += vlen;
    if ((rc = store_del(t, STORE_ACLS, ok, 8)) != 0)
        return rc;
    return store_del(t, STORE_ROWS, ok, 8);
}

/* Puts a moved row's records back under its new number, and makes its chunk record name it. */
static int put_row(store_txn_t *t, coll_t *c, const moved_t *m, const unsigned char *acl)
{
    unsigned char nk[8], ck[COLL_KEY_MAX];
    const void *v;
    size_t vlen;
    int rc;
    const char *id = coll_row_id(c, m->from);
    size_t klen = coll_chunk_key(c->cfg.id, id, ck, sizeof ck);
    coll_row_key(c->cfg.id, m->to, nk);
    if (!klen)
        return CDN_ERR_CORRUPT;
    if ((rc = store_put(t, STORE_ACLS, nk, 8, acl + m->off, m->len)) != 0 ||
        (rc = store_put(t, STORE_ROWS, nk, 8, id, strlen(id))) != 0)
        return rc;
    if (store_get(t, STORE_CHUNKS, ck, klen, &v, &vlen) != CDN_OK || vlen < 4)
        return CDN_ERR_CORRUPT;
    char *rec = cdn_malloc(vlen);
    if (!rec)
        return CDN_ERR_NOMEM;
    memcpy(rec, v, vlen);
    store_be32((unsigned char *)rec, m->to); /* chunkrec.h: the row leads the record */
    rc = store_put(t, STORE_CHUNKS, ck, klen, rec, vlen);
    cdn_free(rec);
    return rc;
}

/* Renumbers the live rows in t: the row and ACL records move to their new keys and each chunk
 * record names its new row. The map is any one-to-one numbering, so a new key may still hold
 * a row that has yet to move: every moving row's records are taken out first (their ACLs kept
 * in memory, about 70 MB for a million rows of seven-principal ACLs) and then put back. */
static int renumber(store_txn_t *t, coll_t *c, const uint32_t *map, uint32_t n_old)
{
    moves_t mv = {0};
    int rc = CDN_OK;
    for (uint32_t r = 0; r < n_old && rc == CDN_OK; r++)
        if (map[r] != HNSW_COMPACT_GONE && map[r] != r)
            rc = take_row(t, c, r, map[r], &mv);
    for (size_t i = 0; i < mv.n && rc == CDN_OK; i++)
        rc = put_row(t, c, &mv.m[i], mv.acl);
    cdn_free(mv.m);
    cdn_free(mv.acl);
    return rc;
}

/* Writes the renumbered rows, the row count and the configuration naming the next generation
 * into t. */
static int store_next(store_txn_t *t, coll_t *c, const coll_config_t *cfg2, const uint32_t *map,
                      uint32_t n_old, uint32_t n_new)
{
    unsigned char k[8], v[4];
    char *json = NULL;
    int rc = renumber(t, c, map, n_old);
    if (rc)
        return rc;
    memcpy(k, "next", 4);
    store_be32(k + 4, c->cfg.id);
    store_be32(v, n_new);
    if ((rc = store_put(t, STORE_META, k, 8, v, 4)) != 0)
        return rc;
    if ((rc = coll_config_encode(cfg2, &json)) != 0)
        return rc;
    rc = store_put(t, STORE_COLLECTIONS, cfg2->name, strlen(cfg2->name), json, strlen(json));
    cdn_free(json);
    return rc;
}

/* Builds and commits the next generation of c; on success *out is its loaded copy. */
static int compact_locked(engine_t *e, coll_t *c, const uint32_t *map, uint32_t n_old,
                          uint32_t n_new, coll_t **out, cdn_err_t *err)
{
    coll_config_t cfg2 = c->cfg;
    store_txn_t *t = NULL;
    coll_t *n2 = NULL;
    uint64_t rev;
    int rc;
    cfg2.gen = c->cfg.gen + 1;
    coll_files_remove(e->dir, &cfg2); /* a compaction that died before its commit */
    if (c->vf && ((rc = copy_vectors(e->dir, c, &cfg2, map, n_old, n_new, err)) != 0 ||
                  (rc = copy_indexes(e->dir, c, &cfg2, map, n_old, n_new, err)) != 0))
        goto fail;
    if ((rc = copy_text(e->dir, c, &cfg2, map, n_old, n_new, err)) != 0)
        goto fail;
    cdn_hook_run(CDN_HOOK_COMPACT_WRITTEN);
    if ((rc = store_txn_begin(e->store, 1, &t, err)) != 0)
        goto fail;
    if ((rc = store_next(t, c, &cfg2, map, n_old, n_new)) != 0) {
        cdn_err_set(err, rc, "cannot renumber the rows: %s", cdn_strerror(rc));
        goto fail;
    }
    /* The copy is loaded as an open would, from the transaction's own writes: it is ready
     * before the commit, which then only has to switch. */
    if ((rc = coll_load(e->dir, t, &cfg2, &n2, err)) != 0)
        goto fail;
    atomic_store(&n2->has_objects, atomic_load(&c->has_objects));
    pthread_rwlock_wrlock(&c->lock);
    rc = write_commit(e, t, &rev, err);
    t = NULL; /* committed or aborted: gone either way */
    if (rc == CDN_OK) {
        engine_coll_replace(e, c, n2);
        atomic_store(&c->superseded, 1);
        atomic_store(&e->revision, rev);
    }
    pthread_rwlock_unlock(&c->lock);
    if (rc) {
        /* The commit may have reached the disk before failing: the next open keeps whichever
         * generation the store names and removes the other, so nothing is removed here. */
        coll_unref(n2);
        return rc;
    }
    *out = n2;
    return CDN_OK;
fail:
    if (t)
        store_txn_abort(t);
    coll_unref(n2);
    coll_files_remove(e->dir, &cfg2);
    return rc;
}

/* The graph repair is most of a compaction's work (about 17 of 30 s at 1M x 384 with 300,000
 * rows dead) and is safe beside writers (hnsw.h: it scores only rows its view holds, and each
 * list is re-chosen under its stripe, as an insert does): it runs before writers are held off.
 * A failure here only leaves the work to the pass under the writer lock. */
static void repair_first(engine_t *e, const char *name)
{
    coll_t *c;
    hnsw_info_t info;
    vec_view_t v;
    if (engine_coll_get(e, name, &c, NULL) != CDN_OK)
        return;
    if (c->hnsw && !atomic_load(&c->broken)) {
        pthread_rwlock_rdlock(&c->lock);
        coll_view(c, &v); /* the rows written by now; the file's mapping never moves */
        pthread_rwlock_unlock(&c->lock);
        hnsw_get_info(c->hnsw, &info);
        if (info.deleted_linked)
            (void)hnsw_repair(c->hnsw, &v, 0, NULL);
    }
    coll_unref(c);
}

/* After the commit: the renumbering dirtied most of the database, pages LMDB keeps in memory
 * until its environment closes, and the pages it replaced are free in the file, which LMDB
 * never shrinks. When a quarter of the file or more is free (and it is 1 MiB or more), the store
 * writes it anew without them; otherwise it only opens the environment again, which it has
 * done on its own if no search was open as the commit ended. Both wait a little for searches
 * to drain; if they held on, the file's pages the renumbering and the load read are unmapped
 * as after an open. An error is returned only when the database could not be opened again
 * (the compaction itself committed). */
static int give_back(engine_t *e, uint64_t trims_before, engine_compact_stats_t *st, cdn_err_t *err)
{
    uint64_t used = 0, free_bytes = 0;
    int done = 0, rc = CDN_OK;
    cdn_err_t ignored = {0, ""};
    (void)store_file_bytes(e->store, &used, &free_bytes);
    st->db_bytes_before = st->db_bytes_after = used;
    if (used >= COMPACT_FILE_MIN && free_bytes * 4 >= used) {
        /* a copy that failed (a full disk) changed nothing: the file stays as it is */
        if (store_compact_file(e->store, COMPACT_DRAIN_MS, &done, &ignored) != CDN_OK &&
            store_check(e->store, err) != CDN_OK)
            return err->code;
        if (done && store_file_bytes(e->store, &used, &free_bytes) == CDN_OK)
            st->db_bytes_after = used;
    }
    if (!done && store_trims(e->store) == trims_before &&
        (rc = store_trim(e->store, COMPACT_DRAIN_MS, &done, err)) != CDN_OK)
        return rc;
    if (!done)
        store_release_pages(e->store);
    return CDN_OK;
}

int engine_coll_compact(engine_t *e, const char *name, engine_compact_stats_t *st, cdn_err_t *err)
{
    coll_t *c = NULL, *n2 = NULL;
    uint32_t *map = NULL;
    uint64_t t0 = cdn_clock_ns(), t1;
    int rc;
    memset(st, 0, sizeof *st);
    repair_first(e, name);
    pthread_mutex_lock(&e->write_lock);
    t1 = cdn_clock_ns();
    if ((rc = engine_coll_get(e, name, &c, err)) != 0)
        goto done;
    if (atomic_load(&c->broken)) {
        rc = cdn_err_set(err, CDN_ERR_IO,
                         "collection \"%s\" missed a write in memory; reopen the data directory "
                         "before compacting it",
                         name);
        goto done;
    }
    uint32_t n_old = c->next_row, n_new = 0;
    st->rows_before = n_old;
    st->rows_after = n_old;
    if (!(map = cdn_malloc((size_t)(n_old ? n_old : 1) * sizeof *map))) {
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (uint32_t r = 0; r < n_old; r++)
        map[r] = coll_row_id(c, r) ? n_new++ : HNSW_COMPACT_GONE;
    if (n_new != c->live) {
        rc = cdn_err_set(err, CDN_ERR_INTERNAL,
                         "collection \"%s\" counts %llu live rows, its row "
                         "map %u",
                         name, (unsigned long long)c->live, n_new);
        goto done;
    }
    _Static_assert(HNSW_COMPACT_GONE == ACL_ORDER_GONE, "one mark for a dropped row");
    if (acl_order_rows(c->acl, map, n_old) != CDN_OK) {
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory ordering the rows");
        goto done;
    }
    uint32_t moved = 0;
    for (uint32_t r = 0; r < n_old; r++)
        moved += map[r] != HNSW_COMPACT_GONE && map[r] != r;
    if (n_new == n_old && moved == 0)
        goto done; /* no gap to close, every row in place */
    uint64_t trims_before = store_trims(e->store);
    if ((rc = compact_locked(e, c, map, n_old, n_new, &n2, err)) != 0)
        goto done;
    /* Committed: the old generation's files are orphans now; searches still reading the old
     * copy keep their own mapping of them. */
    c->hnsw_dirty = c->text_dirty = 0;
    coll_files_remove(e->dir, &c->cfg);
    rc = give_back(e, trims_before, st, err);
    /* The repair changed the graph the copied calibration measured (at 1M x 128 with 30%
     * replaced, recall@10 0.992 at the old ef against 0.998 for a fresh build): measure anew. */
    coll_graph_calibrate(e->dir, n2);
    coll_map_rows(n2);
    st->rows_after = n_new;
    st->compacted = 1;
    coll_unref(n2);
done:
    st->locked_ms = (double)(cdn_clock_ns() - t1) / 1e6;
    pthread_mutex_unlock(&e->write_lock);
    if (c)
        coll_unref(c);
    cdn_free(map);
    st->ms = (double)(cdn_clock_ns() - t0) / 1e6;
    return rc;
}
