/* test_plan.c: the planner's rules on their own (plan_choose): exact below the float budget,
 * the every-row filtered traversal where calibration found it cheaper, pool first for mid shares
 * only where its traversal is not much broader and calibration found headroom, forced strategies,
 * and the query's ef winning. Relies on cmocka. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <string.h>

#include "query/plan.h"

/* A million live rows of 384 dimensions, k 10, calibrated breadths 64 / 96 / dense 96. */
static plan_in_t base(uint64_t readable)
{
    return (plan_in_t){.ask = PLAN_ASK_AUTO,
                       .readable = readable,
                       .live = 1000000,
                       .dim = 384,
                       .k = 10,
                       .graph_rows = 1000000,
                       .ef_unfiltered = 64,
                       .ef_filtered = 96,
                       .ef_dense = 96,
                       .recall_unfiltered = 0.998};
}

static void test_small_readable_sets_are_scanned(void **state)
{
    (void)state;
    plan_t p;
    plan_in_t in = base(10000); /* 3.84 Mi floats, under the 12 Mi default */
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_EXACT);
    in.exact_floats = 1000 * 384; /* a smaller budget sends it to the graph */
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_GRAPH_FILTERED);
    assert_int_equal(p.max_visits, 10000);
    assert_true(p.fallback_exact);
    assert_false(p.pool_first); /* 1% is below the pool-first share */
    in = base(500000);
    in.graph_rows = 0; /* no graph yet */
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_EXACT);
}

static void test_nearly_everything_readable_takes_the_cheaper_traversal(void **state)
{
    (void)state;
    plan_t p;
    plan_in_t in = base(950000);
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_GRAPH_FILTERED); /* calibration found the seeded one cheaper */
    assert_int_equal(p.ef, 96);
    in.ef_dense = 0;
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_GRAPH_UNFILTERED);
    assert_int_equal(p.ef, 64);
    assert_int_equal(p.pool, 11); /* k * live / readable + 1 */
    in.ef_dense = 96;
    in.ef_query = 200; /* the query's own breadth keeps the unfiltered plan */
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_GRAPH_UNFILTERED);
    assert_int_equal(p.ef, 200);
}

static void test_pool_first_only_for_mid_shares_where_it_is_not_broader_nor_short(void **state)
{
    (void)state;
    plan_t p;
    plan_in_t in = base(200000); /* 20% */
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_GRAPH_FILTERED); /* the plan if the pool comes back short */
    assert_int_equal(p.ef, 96);
    assert_true(p.pool_first);
    assert_int_equal(p.first_pool, 101); /* 2 k / share + 1 */
    assert_int_equal(p.first_ef, 151);   /* the calibrated 64, raised to 1.5 pools */
    in.ef_unfiltered = 384;              /* a million-row graph: four times the filtered breadth */
    plan_choose(&in, &p);
    assert_false(p.pool_first);
    in = base(100000); /* 10%: pool 201 > 2 x 96 */
    plan_choose(&in, &p);
    assert_false(p.pool_first);
    in.ef_filtered = 128; /* 201 <= 256 */
    plan_choose(&in, &p);
    assert_true(p.pool_first);
    assert_int_equal(p.first_ef, 301); /* a list of 1.5 pools */
    in = base(200000);
    in.recall_unfiltered = 0.992; /* too little headroom to read 101 deep */
    plan_choose(&in, &p);
    assert_false(p.pool_first);
    in.recall_unfiltered = 0.9953; /* 1M x 384 on codes at ef 128: still 0.978 at 20% */
    plan_choose(&in, &p);
    assert_false(p.pool_first);
    in.recall_unfiltered = 0; /* never calibrated (a small collection): the breadth rule alone */
    plan_choose(&in, &p);
    assert_true(p.pool_first);
    in = base(200000);
    in.ask = PLAN_ASK_PREFILTER; /* forced strategies never take it */
    plan_choose(&in, &p);
    assert_false(p.pool_first);
}

/* A probe before the exact scan: only where the scan is big enough to lose a probe's time in,
 * the subject reads 2% or more, and calibration found headroom. */
static void test_probe_before_big_scans_of_mid_shares(void **state)
{
    (void)state;
    plan_t p;
    plan_in_t in = base(10000);
    in.live = in.graph_rows = 200000; /* 5% of 200k: 3.84 Mi floats, exact */
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_EXACT);
    assert_true(p.pool_first);
    assert_int_equal(p.first_ef, 96);   /* the calibrated 64, raised to PLAN_PROBE_MIN_EF */
    assert_int_equal(p.first_pool, 48); /* k readable within the first half */
    in.ef_deep = 128;
    plan_choose(&in, &p);
    assert_int_equal(p.first_ef, 128);
    assert_int_equal(p.first_pool, 64);
    in.ef_deep = 0;
    in.recall_unfiltered = 0.992; /* no headroom */
    plan_choose(&in, &p);
    assert_false(p.pool_first);
    in.recall_unfiltered = 0; /* never calibrated */
    plan_choose(&in, &p);
    assert_false(p.pool_first);
    in = base(10000); /* 1% of 1M: below the share */
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_EXACT);
    assert_false(p.pool_first);
    in = base(2000);
    in.live = in.graph_rows = 50000; /* 4%, but a small scan (0.77 Mi floats) */
    plan_choose(&in, &p);
    assert_false(p.pool_first);
    in = base(10000);
    in.live = in.graph_rows = 200000;
    in.ef_query = 200; /* the query's own breadth: no calibrated headroom for it */
    plan_choose(&in, &p);
    assert_false(p.pool_first);
    in.ef_query = 0;
    in.ask = PLAN_ASK_EXACT;
    plan_choose(&in, &p);
    assert_false(p.pool_first);
}

static void test_forced_strategies_and_breadth_never_below_k(void **state)
{
    (void)state;
    plan_t p;
    plan_in_t in = base(200000);
    in.ask = PLAN_ASK_PREFILTER;
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_GRAPH_FILTERED);
    assert_int_equal(p.ef, 96);
    assert_false(p.fallback_exact);
    in.ask = PLAN_ASK_POSTFILTER;
    in.max_candidates = 500;
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_GRAPH_UNFILTERED);
    assert_int_equal(p.ef, 64);
    assert_int_equal(p.max_pool, 500);
    in.ask = PLAN_ASK_EXACT;
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_EXACT);
    /* The collection's breadth, measured for 10 answers, is raised to 1.5 k: 450 for 300; a
     * query's own ef is only raised to k. */
    in = base(200000);
    in.k = 300;
    in.ask = PLAN_ASK_PREFILTER;
    plan_choose(&in, &p);
    assert_int_equal(p.ef, 450);
    in.k = 11; /* the extra hit a page asks for: the calibrated breadth stands */
    plan_choose(&in, &p);
    assert_int_equal(p.ef, 96);
    in.k = 300;
    in.ef_query = 50;
    plan_choose(&in, &p);
    assert_int_equal(p.ef, 300);
    in.ef_query = 400;
    plan_choose(&in, &p);
    assert_int_equal(p.ef, 400);
}

/* Plans that read deep into the unfiltered list (pool first, the probe) use the breadth
 * calibration measured at PLAN_POOL_MIN_RECALL, and that breadth's recall decides. */
static void test_deep_plans_use_the_deep_breadth(void **state)
{
    (void)state;
    plan_t p;
    plan_in_t in = base(200000); /* 20%: pool first */
    in.ef_unfiltered = 48;
    in.ef_deep = 176;
    in.recall_unfiltered = 0.998;
    plan_choose(&in, &p);
    assert_true(p.pool_first);
    assert_int_equal(p.first_ef, 176); /* above the pool's 151 */
    in.ef_deep = 0; /* never measured that high: the unfiltered breadth and its recall */
    in.recall_unfiltered = 0.995;
    plan_choose(&in, &p);
    assert_false(p.pool_first);
}

/* With 1-bit codes, auto scans them for readable sets above the exact budget and below the
 * unfiltered share, after pool first where that applies; a query's own ef keeps the graph;
 * small and nearly-everything sets keep their plans; forced strategies ignore the codes. */
static void test_bit_scan_between_the_exact_budget_and_the_unfiltered_share(void **state)
{
    (void)state;
    plan_t p;
    uint64_t shares[] = {50000, 200000, 899999};
    for (size_t i = 0; i < 3; i++) {
        plan_in_t in = base(shares[i]);
        in.bits = 1;
        plan_choose(&in, &p);
        assert_int_equal(p.kind, PLAN_BITS);
        assert_int_equal(p.pool_first, shares[i] >= 100000); /* from PLAN_POOL_SHARE up */
        in.ef_query = 200;
        plan_choose(&in, &p);
        assert_int_equal(p.kind, PLAN_GRAPH_FILTERED);
        in = base(shares[i]);
        in.bits = 1;
        in.ask = PLAN_ASK_PREFILTER;
        plan_choose(&in, &p);
        assert_int_equal(p.kind, PLAN_GRAPH_FILTERED);
    }
    plan_in_t in = base(10000);
    in.bits = 1;
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_EXACT);
    in = base(950000);
    in.bits = 1;
    plan_choose(&in, &p);
    assert_int_equal(p.kind, PLAN_GRAPH_FILTERED); /* the calibrated dense traversal */
    assert_string_equal(plan_name(PLAN_BITS), "scan-1bit");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_readable_sets_are_scanned),
        cmocka_unit_test(test_nearly_everything_readable_takes_the_cheaper_traversal),
        cmocka_unit_test(test_pool_first_only_for_mid_shares_where_it_is_not_broader_nor_short),
        cmocka_unit_test(test_probe_before_big_scans_of_mid_shares),
        cmocka_unit_test(test_forced_strategies_and_breadth_never_below_k),
        cmocka_unit_test(test_deep_plans_use_the_deep_breadth),
        cmocka_unit_test(test_bit_scan_between_the_exact_budget_and_the_unfiltered_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
