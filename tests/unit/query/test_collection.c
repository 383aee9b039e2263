/* test_collection.c: collection configuration records: round trip, and records written before
 * later keys existed still open with their defaults. Relies on query/collection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/err.h"
#include "query/coll.h"
#include "vector/distance_i8.h"

#include <unistd.h>

static void test_config_round_trips(void **state)
{
    (void)state;
    coll_config_t a, b;
    char *json;
    memset(&a, 0, sizeof a);
    snprintf(a.name, sizeof a.name, "%s", "docs");
    a.id = 7;
    a.dim = 384;
    a.metric = VEC_METRIC_DOT;
    a.n_text = 1;
    snprintf(a.text_fields[0], sizeof a.text_fields[0], "%s", "body");
    snprintf(a.acl_field, sizeof a.acl_field, "%s", "allowed_groups");
    snprintf(a.analyzer, sizeof a.analyzer, "%s", "english");
    a.n_meta = 1;
    snprintf(a.meta_fields[0], sizeof a.meta_fields[0], "%s", "kind");
    a.meta_kinds[0] = 1;
    a.k1 = 0.9f;
    a.b = 0.4f;
    a.asserted = 0;
    a.int8_scan = 1;
    a.bm25_global = 1;
    assert_int_equal(coll_config_encode(&a, &json), 0);
    assert_int_equal(coll_config_decode(json, strlen(json), &b, NULL), 0);
    free(json);
    assert_string_equal(b.name, "docs");
    assert_int_equal(b.dim, 384);
    assert_int_equal(b.metric, VEC_METRIC_DOT);
    assert_string_equal(b.analyzer, "english");
    assert_int_equal(b.n_meta, 1);
    assert_string_equal(b.meta_fields[0], "kind");
    assert_true(b.k1 > 0.89f && b.k1 < 0.91f);
    assert_int_equal(b.asserted, 0);
    assert_int_equal(b.int8_scan, 1);
    assert_int_equal(b.bm25_global, 1);
}

static void test_record_from_before_later_keys_opens_with_defaults(void **state)
{
    (void)state;
    const char *old = "{\"name\":\"perm\",\"id\":0,\"dim\":384,\"metric\":\"cosine\","
                      "\"text_fields\":[],\"acl_field\":\"allowed_groups\",\"hnsw_m\":16,"
                      "\"hnsw_ef_construction\":200,\"hnsw_ef_search\":64}";
    coll_config_t c;
    assert_int_equal(coll_config_decode(old, strlen(old), &c, NULL), 0);
    assert_string_equal(c.analyzer, "standard");
    assert_int_equal(c.n_meta, 0);
    assert_int_equal(c.asserted, 1); /* it accepted asserted principals when written */
    assert_int_equal(c.int8_scan, 0);
    assert_int_equal(c.bm25_global, 0); /* scores over each subject's readable set */
    const char *broken = "{\"name\":\"x\",\"id\":0}";
    assert_int_equal(coll_config_decode(broken, strlen(broken), &c, NULL), CDN_ERR_CORRUPT);
}

/* Row ids live in one arena: set, clear and reset rows; a full arena is compacted (cleared
 * rows' ids dropped) before a write is refused, so the limit is on live ids. */
static void test_row_ids_survive_clears_compaction_and_the_limit(void **state)
{
    (void)state;
    coll_config_t cfg = {0};
    snprintf(cfg.name, sizeof cfg.name, "%s", "ids");
    coll_t *c = NULL;
    assert_int_equal(coll_create_state("/nonexistent", &cfg, &c, NULL), 0);
    char id[32];
    for (uint32_t r = 0; r < 1000; r++) {
        snprintf(id, sizeof id, "doc-%u", r);
        assert_int_equal(coll_row_set(c, r, id), 0);
    }
    for (uint32_t r = 0; r < 1000; r += 2)
        coll_row_clear(c, r);
    assert_int_equal(coll_row_set(c, 7, "renamed"), 0); /* the old bytes stay until compaction */
    assert_null(coll_row_id(c, 0));
    assert_null(coll_row_id(c, 5000)); /* never set */
    assert_string_equal(coll_row_id(c, 7), "renamed");
    assert_string_equal(coll_row_id(c, 999), "doc-999");
    /* Room for the live ids and a little more: the next write must compact, not refuse. */
    size_t live = 0;
    for (uint32_t r = 0; r < 1000; r++)
        live += coll_row_id(c, r) ? strlen(coll_row_id(c, r)) + 1 : 0;
    c->id_max = live + 20;
    assert_true(c->id_len > c->id_max); /* cleared ids are still in the arena */
    assert_int_equal(coll_row_set(c, 1000, "after-compaction"), 0);
    assert_int_equal(c->id_len, live + strlen("after-compaction") + 1);
    for (uint32_t r = 1; r < 1000; r += 2) {
        snprintf(id, sizeof id, "doc-%u", r);
        assert_string_equal(coll_row_id(c, r), r == 7 ? "renamed" : id);
        assert_null(coll_row_id(c, r - 1));
    }
    assert_string_equal(coll_row_id(c, 1000), "after-compaction");
    /* Live ids alone past the limit: refused, and nothing changes. */
    assert_int_equal(coll_row_set(c, 1001, "this-one-does-not-fit-in-the-arena"), CDN_ERR_LIMIT);
    assert_null(coll_row_id(c, 1001));
    assert_string_equal(coll_row_id(c, 999), "doc-999");
    coll_unref(c);
}

/* A vector collection's state in a new temporary directory (dir: a mkdtemp template). */
static coll_t *vector_coll(char *dir, const char *name, uint32_t id, uint32_t dim, vec_metric_t m)
{
    assert_non_null(mkdtemp(dir));
    coll_config_t cfg = {0};
    snprintf(cfg.name, sizeof cfg.name, "%s", name);
    cfg.id = id;
    cfg.dim = dim;
    cfg.metric = m;
    coll_t *c = NULL;
    assert_int_equal(coll_create_state(dir, &cfg, &c, NULL), 0);
    return c;
}

static void remove_dir(const char *dir)
{
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* n rows of dim values spread over [shift, shift + 1) by a multiplicative hash (malloc'd; the
 * caller frees it), with rows[r] pointing at row r and ids[r] = r. */
static float *hashed_rows(uint32_t n, uint32_t dim, float shift, const float **rows, uint32_t *ids)
{
    float *data = malloc(sizeof(float) * n * dim);
    assert_non_null(data);
    for (uint32_t i = 0; i < n * dim; i++)
        data[i] = (float)((i * 2654435761u) % 1000) / 1000.0f + shift;
    for (uint32_t r = 0; r < n; r++) {
        rows[r] = data + (size_t)r * dim;
        ids[r] = r;
    }
    return data;
}

/* Batch inserts build on an 8-bit copy of the rows that the collection keeps: each batch adds
 * only its own rows to it, converted from the rows as written, and the graph takes them all. A
 * batch whose values fall outside the copy's range makes the whole copy again under a range
 * that holds them, so no code is saturated. */
static void test_graph_batches_extend_the_kept_i8_copy_row_by_row(void **state)
{
    (void)state;
    const uint32_t dim = 16, batch = 300;
    char dir[] = "/tmp/cordon-coll-i8-XXXXXX";
    coll_t *c = vector_coll(dir, "i8", 3, dim, VEC_METRIC_L2);
    const float **rows = malloc(sizeof(float *) * 3 * batch);
    uint32_t ids[3 * 300];
    float *data = hashed_rows(3 * batch, dim, -0.5f, rows, ids);
    for (uint32_t i = 2 * batch * dim; i < 3 * batch * dim; i++)
        data[i] *= 40.0f; /* the third batch: far outside the first two's range */
    int kept = vec_i8_isa_best() != VEC_I8_SCALAR;
    size_t stride = vec_i8_padded(dim);
    int8_t want[64];
    float scales[3] = {0, 0, 0};
    for (uint32_t b = 0; b < 3; b++) {
        assert_int_equal(vecfile_write(c->vf, b * batch, rows + b * batch, batch, NULL), 0);
        assert_int_equal(coll_graph_insert(c, ids + b * batch, batch), 0);
        c->next_row = (b + 1) * batch; /* as apply_put does after the insert */
        assert_int_equal(c->i8_rows, kept ? (b + 1) * batch : 0);
        scales[b] = c->i8_map.scale;
        for (uint32_t r = 0; kept && r < (b + 1) * batch; r++) {
            assert_int_equal(vec_i8_from_f32(rows[r], dim, c->i8_map, want, stride), 0);
            assert_memory_equal(c->i8 + (size_t)r * stride, want, stride);
        }
    }
    if (kept) {
        assert_float_equal(scales[1], scales[0], 0); /* the second batch fit the range */
        assert_true(scales[2] < scales[1] / 10);     /* the third one widened it */
    }
    hnsw_info_t info;
    hnsw_get_info(c->hnsw, &info);
    assert_int_equal(info.nodes, 3 * batch);
    coll_unref(c);
    free(rows);
    free(data);
    remove_dir(dir);
}

/* The first batch after an open fills the copy with every row the file holds (here more than a
 * split fill takes, COLL_GRAPH_COPY_SPLIT_MIN): the parts converted on the pool's threads hold
 * exactly the codes one thread writes, every row of them. */
static void test_graph_first_fill_of_many_rows_converts_every_row(void **state)
{
    (void)state;
    if (vec_i8_isa_best() == VEC_I8_SCALAR) {
        printf("SKIP: no 8-bit kernels on this CPU, so no kept copy\n");
        return;
    }
    const uint32_t dim = 8, n = COLL_GRAPH_COPY_SPLIT_MIN + 4099, batch = 256;
    char dir[] = "/tmp/cordon-coll-fill-XXXXXX";
    coll_t *c = vector_coll(dir, "fill", 3, dim, VEC_METRIC_L2);
    const float **rows = malloc(sizeof(float *) * n);
    uint32_t *ids = malloc(sizeof(uint32_t) * n);
    assert_non_null(rows);
    assert_non_null(ids);
    float *data = hashed_rows(n, dim, -0.5f, rows, ids);
    /* the rows already in the file (as after a reopen), then one batch at its end */
    assert_int_equal(vecfile_write(c->vf, 0, rows, n, NULL), 0);
    assert_int_equal(coll_graph_insert(c, ids + n - batch, batch), 0);
    assert_int_equal(c->i8_rows, n);
    size_t stride = vec_i8_padded(dim);
    int8_t want[64];
    for (uint32_t r = 0; r < n; r++) {
        assert_int_equal(vec_i8_from_f32(rows[r], dim, c->i8_map, want, stride), 0);
        assert_memory_equal(c->i8 + (size_t)r * stride, want, stride);
    }
    hnsw_info_t info;
    hnsw_get_info(c->hnsw, &info);
    assert_int_equal(info.nodes, batch);
    coll_unref(c);
    free(rows);
    free(ids);
    free(data);
    remove_dir(dir);
}

/* Rows no 8-bit range fits (one far out) get no kept copy: batches build as hnsw_build chooses,
 * and the copy is not tried again until the rows have doubled. */
static void test_graph_batches_keep_no_copy_of_rows_no_range_fits(void **state)
{
    (void)state;
    const uint32_t dim = 16, batch = 300;
    char dir[] = "/tmp/cordon-coll-unfit-XXXXXX";
    coll_t *c = vector_coll(dir, "unfit", 3, dim, VEC_METRIC_L2);
    const float **rows = malloc(sizeof(float *) * 2 * batch);
    uint32_t ids[2 * 300];
    float *data = hashed_rows(2 * batch, dim, -0.5f, rows, ids);
    for (uint32_t d = 0; d < dim; d++)
        data[5 * dim + d] = 1e6f;
    const uint32_t sizes[2] = {batch, 256}; /* 556 rows: not yet double the first 300 */
    for (uint32_t b = 0, at = 0; b < 2; at += sizes[b++]) {
        assert_int_equal(vecfile_write(c->vf, at, rows + at, sizes[b], NULL), 0);
        assert_int_equal(coll_graph_insert(c, ids + at, sizes[b]), 0);
        c->next_row = at + sizes[b];
        assert_null(c->i8);
        assert_int_equal(c->i8_rows, 0);
        if (vec_i8_isa_best() != VEC_I8_SCALAR)
            assert_int_equal(c->i8_unfit, batch); /* the second batch did not try again */
    }
    hnsw_info_t info;
    hnsw_get_info(c->hnsw, &info);
    assert_int_equal(info.nodes, batch + 256);
    coll_unref(c);
    free(rows);
    free(data);
    remove_dir(dir);
}

/* Deleted graph nodes are unlinked once enough have gathered: not for a few hundred; past an
 * eighth of the graph, a slice of the graph per write until the sweep ends, and the graph is
 * marked for the next checkpoint. */
static void test_graph_repair_waits_for_enough_deletes(void **state)
{
    (void)state;
    const uint32_t dim = 8, n = 20000;
    char dir[] = "/tmp/cordon-coll-repair-XXXXXX";
    coll_t *c = vector_coll(dir, "rep", 4, dim, VEC_METRIC_L2);
    const float **rows = malloc(sizeof(float *) * n);
    uint32_t *ids = malloc(sizeof(uint32_t) * n);
    float *data = hashed_rows(n, dim, 0.0f, rows, ids);
    assert_int_equal(vecfile_write(c->vf, 0, rows, n, NULL), 0);
    assert_int_equal(coll_graph_insert(c, ids, n), 0);
    c->next_row = n;
    hnsw_info_t info;
    for (uint32_t r = 0; r < 300; r++)
        assert_int_equal(hnsw_delete(c->hnsw, r), 0);
    c->hnsw_dirty = 0;
    coll_graph_repair_due(c);
    hnsw_get_info(c->hnsw, &info);
    assert_int_equal(info.deleted_linked, 300); /* too few to pay for a pass over the lists */
    assert_int_equal(c->hnsw_dirty, 0);
    for (uint32_t r = 300; r < n / 8; r++)
        assert_int_equal(hnsw_delete(c->hnsw, r), 0);
    coll_graph_repair_due(c); /* the first slice: the sweep goes on */
    hnsw_get_info(c->hnsw, &info);
    assert_int_equal(info.deleted_linked, n / 8);
    assert_true(c->repair_next > 0 && c->repair_next < n);
    assert_int_equal(c->hnsw_dirty, 1);
    coll_graph_repair_due(c); /* the last */
    hnsw_get_info(c->hnsw, &info);
    assert_int_equal(info.deleted, n / 8);
    assert_int_equal(info.deleted_linked, 0);
    assert_int_equal(c->repair_next, 0);
    coll_graph_repair_due(c); /* nothing left to do */
    assert_int_equal(c->repair_next, 0);
    coll_unref(c);
    free(ids);
    free(rows);
    free(data);
    remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_round_trips),
        cmocka_unit_test(test_record_from_before_later_keys_opens_with_defaults),
        cmocka_unit_test(test_row_ids_survive_clears_compaction_and_the_limit),
        cmocka_unit_test(test_graph_batches_extend_the_kept_i8_copy_row_by_row),
        cmocka_unit_test(test_graph_first_fill_of_many_rows_converts_every_row),
        cmocka_unit_test(test_graph_batches_keep_no_copy_of_rows_no_range_fits),
        cmocka_unit_test(test_graph_repair_waits_for_enough_deletes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
