/* test_scifact.c: exact search over the real SciFact vectors (5,183 x 512) returns the same
 * top-10 as a brute-force reference over the readable chunks, for random principal lists,
 * with zero leaks. Relies on ../shared/data/scifact/use-lite; skips visibly without it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/fvecs.h"
#include "base/mem.h"
#include "cordon.h"
#include "testutil.h"

#define TEAMS 40

static float dot(const float *a, const float *b, uint32_t d)
{
    double s = 0;
    for (uint32_t i = 0; i < d; i++)
        s += (double)a[i] * b[i];
    return (float)s;
}

static void test_exact_search_on_scifact_matches_brute_force_without_leaks(void **state)
{
    (void)state;
    char cpath[512], qpath[512], dir[64];
    float *docs, *queries;
    size_t nd, nq;
    uint32_t dim, qdim;
    snprintf(cpath, sizeof cpath, "%s/scifact/use-lite/corpus.fvecs", tu_shared_data());
    snprintf(qpath, sizeof qpath, "%s/scifact/use-lite/queries.fvecs", tu_shared_data());
    if (access(cpath, R_OK) != 0) {
        printf("SKIP: %s is absent; set CORDON_SHARED_DATA to the shared data folder\n", cpath);
        skip();
    }
    assert_int_equal(cdn_fvecs_read(cpath, &docs, &nd, &dim, NULL), 0);
    assert_int_equal(cdn_fvecs_read(qpath, &queries, &nq, &qdim, NULL), 0);
    assert_int_equal(dim, qdim);
    int *team = malloc(nd * sizeof *team), *deny = malloc(nd * sizeof *deny);
    char(*ids)[16] = malloc(nd * sizeof *ids), (*names)[2][16] = malloc(nd * sizeof *names);
    const char *(*acl)[2] = malloc(nd * sizeof *acl);
    cordon_chunk *chunks = calloc(nd, sizeof *chunks);
    uint64_t seed = 2024;
    cordon_t *db;
    cordon_collection_spec spec = {
        .asserted_principals = 1, .name = "scifact", .dim = dim, .metric = CORDON_METRIC_DOT};
    assert_non_null(tu_tmpdir(dir, sizeof dir));
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    assert_int_equal(cordon_collection_create(db, &spec, NULL), 0);
    for (size_t i = 0; i < nd; i++) {
        team[i] = (int)(tu_rand(&seed) % TEAMS);
        deny[i] = tu_rand(&seed) % 20 == 0 ? (int)(tu_rand(&seed) % TEAMS) : -1;
        snprintf(ids[i], 16, "d%u", (unsigned)(i & 0xffffff));
        snprintf(names[i][0], 16, "team%d", team[i]);
        snprintf(names[i][1], 16, "team%d", deny[i]);
        acl[i][0] = names[i][0];
        acl[i][1] = names[i][1];
        chunks[i] = (cordon_chunk){.id = ids[i],
                                   .vector = docs + i * dim,
                                   .allowed = &acl[i][0],
                                   .n_allowed = 1,
                                   .denied = &acl[i][1],
                                   .n_denied = deny[i] >= 0};
    }
    for (size_t i = 0; i < nd; i += 1000)
        assert_int_equal(
            cordon_put(db, "scifact", chunks + i, nd - i < 1000 ? nd - i : 1000, NULL, NULL), 0);
    size_t leaks = 0, checked = 0;
    for (size_t qi = 0; qi < 60 && qi < nq; qi++) {
        int holds[TEAMS], nh = 0;
        char hn[TEAMS][24];
        const char *hp[TEAMS];
        for (int t = 0; t < TEAMS; t++) {
            holds[t] = tu_rand(&seed) % (qi % 3 == 0 ? 40 : 4) == 0; /* ~2.5% or ~25% */
            if (holds[t]) {
                snprintf(hn[nh], 24, "group:team%d", t);
                hp[nh] = hn[nh];
                nh++;
            }
        }
        const float *q = queries + qi * dim;
        cordon_subject s = {.principals = hp, .n_principals = (size_t)nh};
        cordon_query cq = {.vector = q, .k = 10, .strategy = CORDON_STRATEGY_EXACT};
        cordon_result *r;
        assert_int_equal(cordon_search(db, "scifact", &s, &cq, &r, NULL), 0);
        /* Reference: the 10 best readable by a plain scan and insertion. */
        size_t best[10], nb = 0;
        for (size_t i = 0; i < nd; i++) {
            if (!holds[team[i]] || (deny[i] >= 0 && holds[deny[i]]))
                continue;
            float sc = dot(q, docs + i * dim, dim);
            size_t pos = nb < 10 ? nb++ : 10;
            while (pos > 0 && dot(q, docs + best[pos - 1] * dim, dim) < sc) {
                if (pos < 10)
                    best[pos] = best[pos - 1];
                pos--;
            }
            if (pos < 10)
                best[pos] = i;
        }
        assert_int_equal(r->n_hits, nb);
        assert_true(r->complete);
        for (size_t h = 0; h < r->n_hits; h++) {
            size_t i = strtoul(r->hits[h].id + 1, NULL, 10);
            leaks += !holds[team[i]] || (deny[i] >= 0 && holds[deny[i]]);
            /* Same chunk, or a tie in score with the reference's chunk at that rank. */
            assert_true(i == best[h] || fabsf(dot(q, docs + i * dim, dim) -
                                              dot(q, docs + best[h] * dim, dim)) < 1e-6f);
            assert_true(fabsf(r->hits[h].score - dot(q, docs + i * dim, dim)) < 1e-4f);
            checked++;
        }
        cordon_result_free(r);
    }
    assert_int_equal(leaks, 0);
    assert_true(checked > 300);
    cordon_close(db);
    tu_rmrf(dir);
    free(team);
    free(deny);
    free(ids);
    free(names);
    free(acl);
    free(chunks);
    cdn_free(docs);
    cdn_free(queries);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_search_on_scifact_matches_brute_force_without_leaks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
