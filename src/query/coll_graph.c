/* coll_graph.c: keeping a collection's HNSW graph in step with its rows: checkpoint load and
 * catch-up at open, inserts on writes, checkpoint save at close.
 * Relies on vector/hnsw; the checkpoint's revision slot records the row count it reflects,
 * since rows are append-only and numbered in commit order. */
#include "base/fileio.h"
#include "base/mem.h"
#include "base/pool.h"
#include "query/coll.h"
#include "vector/distance_i8.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Below this many rows, inserting one by one beats starting threads. */
#define GRAPH_PARALLEL_MIN 256
/* Deleted nodes are unlinked from the graph (hnsw_repair) once at least this many, and at least
 * 1/GRAPH_REPAIR_SHARE of its nodes, are deleted since the last repair: a repair reads every
 * list, so it waits for enough tombstones to pay (`cordon bench churn`, docs/benchmarks.md). */
#define GRAPH_REPAIR_MIN 1000
#define GRAPH_REPAIR_SHARE 8
/* Node ids a write's slice of the repair covers: ~0.35 s at 384 dimensions (22 us a node
 * with two threads at 343,000 nodes), so a sweep of a million nodes spreads over 61 writes. */
#define GRAPH_REPAIR_SLICE 16384
/* The most bytes a collection's 8-bit copy of its rows may take: a sixteenth of the machine's
 * memory, at least GRAPH_COPY_MIN and at most GRAPH_COPY_CAP (24 GB: 1.5 GiB, a million rows
 * of up to 1,536 values); past it, batches build as hnsw_build chooses (float, or a copy made
 * for one large batch). At 256 MiB a load of 1M x 384 built its last 320,000 rows in float and
 * took 245.8 s, against 185.8 s with every row in 8 bits (docs/benchmarks.md). */
#define GRAPH_COPY_MIN ((size_t)256 << 20)
#define GRAPH_COPY_CAP ((size_t)4 << 30)

/* The copy's range is the rows' range this much wider, so that rows written later rarely fall
 * outside it (one that does makes the whole copy again under a wider range). */
#define GRAPH_COPY_HEADROOM 1.25f

static size_t copy_max(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    size_t m = pages > 0 && size > 0 ? (size_t)pages * (size_t)size / 16 : GRAPH_COPY_MIN;
    return m < GRAPH_COPY_MIN ? GRAPH_COPY_MIN : m > GRAPH_COPY_CAP ? GRAPH_COPY_CAP : m;
}

void coll_graph_copy_drop(coll_t *c)
{
    cdn_map_free(c->i8, (size_t)c->i8_cap * vec_i8_padded(c->cfg.dim));
    c->i8 = NULL;
    c->i8_rows = c->i8_cap = 0;
}

/* A fill of every row (COLL_GRAPH_COPY_SPLIT_MIN rows or more: in parts): its range is taken
 * from every row, so no row saturates but on NaN, which no range holds, and no part has to
 * start again. */
typedef struct copy_fill {
    coll_t *c;
    const vec_view_t *v;
    size_t parts;
} copy_fill_t;

static void fill_part(void *arg, size_t task)
{
    const copy_fill_t *f = arg;
    size_t stride = vec_i8_padded(f->v->dim), n = f->v->count;
    uint32_t lo = (uint32_t)(n * task / f->parts), hi = (uint32_t)(n * (task + 1) / f->parts);
    for (uint32_t r = lo; r < hi; r++)
        vec_i8_from_f32(vec_row(f->v, r), f->v->dim, f->c->i8_map, f->c->i8 + (size_t)r * stride,
                        stride);
}

/* Brings c's 8-bit copy up to the view's rows, converting only the rows it lacks: rows below
 * the view's count are committed and never change. A row outside the copy's range makes the
 * whole copy again under a range that holds it, so no code saturates. The copy is a mapping
 * (base/mem.h): grown without copying the rows it holds, read at random by every insert. 0, or
 * -1 (the copy dropped) when it would pass copy_max() or cannot grow. */
static int copy_extend(coll_t *c, const vec_view_t *v)
{
    size_t stride = vec_i8_padded(v->dim);
    if (c->i8_unfit && v->count < 2 * (uint64_t)c->i8_unfit)
        return -1;
    size_t max = copy_max();
    if ((size_t)v->count * stride > max) {
        coll_graph_copy_drop(c);
        return -1;
    }
    if (v->count > c->i8_cap) {
        size_t cap = c->i8_cap ? c->i8_cap : 4096;
        while (cap < v->count)
            cap *= 2;
        if (cap * stride > max)
            cap = max / stride;
        if (cdn_map_resize((void **)&c->i8, (size_t)c->i8_cap * stride, cap * stride)) {
            coll_graph_copy_drop(c);
            return -1;
        }
        c->i8_cap = (uint32_t)cap;
    }
    /* Rows past the copy, under its range; one that falls outside it (or an empty copy) takes
     * a range from every row and converts them all again (once: a NaN saturates under any). */
    int widened = c->i8_rows == 0;
    for (uint32_t r = c->i8_rows; !widened && r < v->count; r++)
        widened = vec_i8_from_f32(vec_row(v, r), v->dim, c->i8_map, c->i8 + (size_t)r * stride,
                                  stride) != 0;
    if (widened) {
        c->i8_map = vec_i8_map_of(v, c->cfg.metric, GRAPH_COPY_HEADROOM);
        cdn_pool_t *pool = cdn_pool_shared();
        copy_fill_t f = {c, v,
                         v->count >= COLL_GRAPH_COPY_SPLIT_MIN ? cdn_pool_workers(pool) + 1u : 1};
        cdn_pool_run(pool, f.parts, fill_part, &f);
    }
    /* A new range may be a few rows far out stretched over the rest: no 8-bit copy then
     * (hnsw_build chooses bf16 or float), and no new try until the rows have doubled. */
    if (widened && !vec_i8_map_fits(v, c->i8_map)) {
        coll_graph_copy_drop(c);
        c->i8_unfit = v->count;
        return -1;
    }
    c->i8_rows = v->count;
    return 0;
}

int coll_graph_insert(coll_t *c, const uint32_t *rows, size_t n)
{
    vec_view_t v;
    int rc = CDN_OK;
    if (!c->hnsw || n == 0)
        return CDN_OK;
    coll_view(c, &v);
    v.count = rows[n - 1] + 1 > v.count ? rows[n - 1] + 1 : v.count;
    /* Batches build on 8-bit rows where the CPU has the kernels, as hnsw_build does for large
     * ones (a quarter of the bytes a distance; the links see the codes' rounding, searches
     * score floats): keeping the copy makes that pay for batches of any size, not only those a
     * quarter of the collection. */
    if (n >= GRAPH_PARALLEL_MIN && vec_i8_isa_best() != VEC_I8_SCALAR && copy_extend(c, &v) == 0) {
        hnsw_i8_rows_t kept = {c->i8, vec_i8_padded(v.dim), c->i8_rows, c->i8_map};
        rc = hnsw_build_i8(c->hnsw, &v, &kept, rows, n, 0);
    } else if (n >= GRAPH_PARALLEL_MIN)
        rc = hnsw_build(c->hnsw, &v, rows, n, 0);
    else
        for (size_t i = 0; i < n && rc == CDN_OK; i++)
            rc = hnsw_insert(c->hnsw, &v, rows[i]);
    c->hnsw_dirty = 1;
    return rc;
}

void coll_graph_repair_due(coll_t *c)
{
    hnsw_info_t info;
    hnsw_repair_stats_t st;
    vec_view_t v;
    if (!c->hnsw)
        return;
    if (c->repair_next == 0) {
        hnsw_get_info(c->hnsw, &info);
        if (info.deleted_linked < GRAPH_REPAIR_MIN ||
            (uint64_t)info.deleted_linked * GRAPH_REPAIR_SHARE < info.nodes)
            return;
    }
    coll_view(c, &v);
    int rc = hnsw_repair_range(c->hnsw, &v, c->repair_next, GRAPH_REPAIR_SLICE, 0, &st);
    c->repair_next = rc ? 0 : st.next;
    if (rc == CDN_OK && st.lists_relinked)
        c->hnsw_dirty = 1;
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

/* The calibration file: one line, "cordon-efauto 6 rows R ef E recall X queries Q d10 D efq F
 * recallq Y efd G recalld Z dense B efp P recallp W" (efq: filtered traversals; efd: filtered,
 * every row allowed; dense 1: that traversal is cheaper than the unfiltered one at their efs;
 * efp: the unfiltered breadth measured at COLL_CALIB_DEEP, 0 for none). Version 5 files, whose
 * breadths came from a coarser ladder with a step of margin, are measured again. It
 * applies while the graph holds at most a quarter more rows than it was measured on; a file
 * that does not parse is measured again at the next checkpoint. */
static void efauto_read(const char *dir, coll_t *c)
{
    char path[4096], line[256];
    unsigned rows = 0, ef = 0, nq = 0, efq = 0, efd = 0, dense = 0, efp = 0;
    double recall = 0, d10 = 0, recallq = 0, recalld = 0, recallp = 0;
    FILE *f;
    if (coll_file_path(dir, c->cfg.id, c->cfg.gen, "efauto", path, sizeof path) ||
        !(f = fopen(path, "r")))
        return;
    if (fgets(line, sizeof line, f) &&
        sscanf(line,
               "cordon-efauto 6 rows %u ef %u recall %lf queries %u d10 %lf efq %u recallq %lf "
               "efd %u recalld %lf dense %u efp %u recallp %lf",
               &rows, &ef, &recall, &nq, &d10, &efq, &recallq, &efd, &recalld, &dense, &efp,
               &recallp) == 12 &&
        ef > 0 && ef <= HNSW_EF_MAX && efq > 0 && efq <= HNSW_EF_MAX && efd > 0 &&
        efd <= HNSW_EF_MAX && efp <= HNSW_EF_MAX && rows > 0 &&
        (uint64_t)rows * 5 / 4 >= c->next_row) {
        c->ef_auto_filtered = efq;
        c->ef_auto_dense = dense ? efd : 0;
        c->ef_auto = ef;
        c->ef_auto_rows = rows;
        c->ef_auto_recall = recall >= 0 && recall <= 1 ? recall : 0;
        c->ef_auto_deep = efp;
        c->ef_auto_deep_recall = efp && recallp >= 0 && recallp <= 1 ? recallp : 0;
        c->d10 = d10 > 0 && d10 < 1e30 ? (float)d10 : 0;
    }
    fclose(f);
}

int coll_graph_open(const char *dir, coll_t *c, cdn_err_t *err)
{
    char path[4096];
    hnsw_t *h = NULL;
    uint64_t rows = 0;
    int rc;
    if ((rc = coll_file_path(dir, c->cfg.id, c->cfg.gen, "hnsw", path, sizeof path)) != 0)
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
    efauto_read(dir, c);
    return CDN_OK;
}

uint32_t coll_search_ef(const coll_t *c, int kind)
{
    uint32_t def = hnsw_params_default().ef_search;
    uint32_t cal = kind == COLL_EF_DENSE      ? c->ef_auto_dense
                   : kind == COLL_EF_FILTERED ? c->ef_auto_filtered
                                              : c->ef_auto;
    if (c->cfg.hnsw_ef)
        return c->cfg.hnsw_ef;
    return cal ? cal : def;
}

/* Takes a measurement's results (under c's write lock when searches may run). */
static void calib_take(coll_t *c, const hnsw_calib_t *cal, uint32_t rows)
{
    c->ef_auto = cal->ef;
    c->ef_auto_filtered = cal->ef_filtered;
    c->ef_auto_dense = cal->cost_dense < cal->cost ? cal->ef_dense : 0;
    c->ef_auto_rows = rows;
    c->ef_auto_recall = cal->recall;
    c->ef_auto_deep = cal->ef_deep;
    c->ef_auto_deep_recall = cal->recall_deep;
    c->d10 = cal->d10 > 0 ? cal->d10 : 0;
}

/* Writes a measurement of rows beside the checkpoint (efauto_read's format). 0 or -1. */
static int efauto_file(const char *dir, const coll_t *c, const hnsw_calib_t *cal, uint32_t rows)
{
    char path[4096];
    if (coll_file_path(dir, c->cfg.id, c->cfg.gen, "efauto", path, sizeof path))
        return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, CDN_FILE_MODE);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fprintf(f,
            "cordon-efauto 6 rows %u ef %u recall %.4f queries %u d10 %.9g efq %u recallq %.4f "
            "efd %u recalld %.4f dense %d efp %u recallp %.4f\n",
            rows, cal->ef, cal->recall, cal->queries, (double)cal->d10, cal->ef_filtered,
            cal->recall_filtered, cal->ef_dense, cal->recall_dense, cal->cost_dense < cal->cost,
            cal->ef_deep, cal->recall_deep);
    return fclose(f) == 0 ? 0 : -1;
}

/* Rows a calibration of c asks (COLL_CALIB_QUERIES ... COLL_CALIB_QUERIES_MAX). */
static uint32_t calib_queries(const coll_t *c, uint64_t live)
{
    uint64_t q = COLL_CALIB_SCAN_BUDGET / ((live ? live : 1) * (c->cfg.dim ? c->cfg.dim : 1));
    return q < COLL_CALIB_QUERIES       ? COLL_CALIB_QUERIES
           : q > COLL_CALIB_QUERIES_MAX ? COLL_CALIB_QUERIES_MAX
                                        : (uint32_t)q;
}

/* Measures c's live rows into *cal: 0, or -1 when they are too few or the measurement failed. */
static int calib_measure(coll_t *c, hnsw_calib_t *cal)
{
    vec_view_t v;
    const roaring_bitmap_t *live = acl_index_live(c->acl);
    uint64_t n_live = roaring_bitmap_get_cardinality(live);
    if (n_live < COLL_CALIB_MIN_ROWS)
        return -1;
    coll_view(c, &v);
    return hnsw_calibrate(c->hnsw, &v, coll_codes(c), live, calib_queries(c, n_live),
                          COLL_CALIB_TARGET, COLL_CALIB_DEEP, hnsw_params_default().ef_search,
                          cal) == CDN_OK
               ? 0
               : -1;
}

void coll_graph_calibrate(const char *dir, coll_t *c)
{
    hnsw_calib_t cal;
    uint32_t rows = c->next_row;
    if (!c->hnsw || c->cfg.hnsw_ef || atomic_load(&c->broken))
        return; /* an ef the collection fixed is not measured for */
    if (calib_measure(c, &cal))
        return;
    efauto_file(dir, c, &cal, rows); /* kept for the next open; memory uses it either way */
    pthread_rwlock_wrlock(&c->lock);
    calib_take(c, &cal, rows);
    pthread_rwlock_unlock(&c->lock);
}

void coll_graph_calibrate_grown(const char *dir, coll_t *c)
{
    if (!c->ef_auto_rows || c->next_row >= (uint64_t)c->ef_auto_rows * 2)
        coll_graph_calibrate(dir, c);
}

/* Measures and records the calibrated ef; a failure only leaves the default in place. */
static void efauto_write(const char *dir, coll_t *c)
{
    hnsw_calib_t cal;
    if ((uint64_t)c->ef_auto_rows * 5 / 4 >= c->next_row || calib_measure(c, &cal))
        return;
    if (efauto_file(dir, c, &cal, c->next_row) == 0)
        calib_take(c, &cal, c->next_row);
}

int coll_graph_save(const char *dir, coll_t *c, cdn_err_t *err)
{
    char path[4096];
    int rc;
    if (!c->hnsw)
        return CDN_OK;
    if (!c->hnsw_dirty) {
        efauto_write(dir, c); /* a collection measured on far fewer rows, or never */
        return CDN_OK;
    }
    if ((rc = coll_file_path(dir, c->cfg.id, c->cfg.gen, "hnsw", path, sizeof path)) != 0 ||
        (rc = hnsw_save(c->hnsw, path, c->next_row)) != 0)
        return cdn_err_set(err, rc, "cannot save the vector graph of \"%s\"", c->cfg.name);
    c->hnsw_saved = c->next_row;
    c->hnsw_dirty = 0;
    efauto_write(dir, c);
    return CDN_OK;
}
