/* test_collection.c: collection configuration records: round trip, and records written before
 * later keys existed still open with their defaults. Relies on query/collection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "query/collection.h"

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
    const char *broken = "{\"name\":\"x\",\"id\":0}";
    assert_int_equal(coll_config_decode(broken, strlen(broken), &c, NULL), CDN_ERR_CORRUPT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_round_trips),
        cmocka_unit_test(test_record_from_before_later_keys_opens_with_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
