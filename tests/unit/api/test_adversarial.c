/* test_adversarial.c: tries to break "no leak", "fail closed" and "hidden equals missing" through
 * the public API: every search mode against a brute-force reference of who may read what, with
 * principals written in every odd form, before and after ACL changes, deletes and a reopen.
 * Relies on cmocka and tests/testutil.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cordon.h"
#include "testutil.h"

#define DIM 8
#define NCHUNK 360
#define NPRIN 8 /* canonical principals: group:g0..g5, user:u0, user:u1 */
#define NWORD 6

static const char *const canon[NPRIN] = {"group:g0", "group:g1", "group:g2", "group:g3",
                                         "group:g4", "group:g5", "user:u0",  "user:u1"};
/* Surface forms that must mean the same principal as canon[i] (groups may drop the kind). */
static const char *const bare[NPRIN] = {"g0", "g1", "g2", "g3", "g4", "g5", NULL, NULL};

typedef struct fx {
    char dir[64];
    cordon_t *db;
    float vecs[NCHUNK][DIM];
    unsigned allow[NCHUNK], deny[NCHUNK]; /* bitmasks over canon */
    int live[NCHUNK];
    char body[NCHUNK][64];
} fx_t;

/* A subject: how it is written, and which canonical principals that must amount to. */
typedef struct subj {
    const char *names[6];
    size_t n;
    unsigned holds;
} subj_t;

static const subj_t subjects[] = {
    {{"g0"}, 1, 1u << 0},
    {{"group:g1", "g2"}, 2, (1u << 1) | (1u << 2)},
    {{"user:u0", "g3", "group:g3"}, 3, (1u << 6) | (1u << 3)},
    {{"user:u1", "g4", "g5", "g0"}, 4, (1u << 7) | (1u << 4) | (1u << 5) | 1u},
    /* Odd forms that hold none of the canonical principals. ("GROUP:g0" is refused: see
     * test_unknown_kinds_are_refused_not_read_as_nothing.) */
    {{"G2", "user:g3", "u0", "g4 "}, 4, 0},
    {{"role:g0", "group:g0:x", "c001", "user:U1"}, 4, 0},
    {{NULL}, 0, 0},
};
#define NSUBJ (sizeof subjects / sizeof subjects[0])

static void chunk_id(int i, char *b, size_t n)
{
    snprintf(b, n, "c%03d", i);
}

static int readable(const fx_t *f, int i, unsigned holds)
{
    return f->live[i] && (f->allow[i] & holds) && !(f->deny[i] & holds);
}

/* Writes principal i in a random surface form. */
static const char *form(uint64_t *seed, int i)
{
    return bare[i] && tu_rand(seed) % 2 ? bare[i] : canon[i];
}

static void put_all(fx_t *f, uint64_t *seed)
{
    static const char *al[NCHUNK][NPRIN], *de[NCHUNK][NPRIN];
    static char ids[NCHUNK][16], meta[NCHUNK][64];
    static cordon_field fields[NCHUNK];
    static cordon_chunk c[NCHUNK];
    static const char *const words[NWORD] = {"alpha", "bravo", "charlie",
                                             "delta", "echo",  "foxtrot"};
    for (int i = 0; i < NCHUNK; i++) {
        size_t na = 0, nd = 0;
        for (int d = 0; d < DIM; d++)
            f->vecs[i][d] = tu_randf(seed) * 2 - 1;
        f->allow[i] = f->deny[i] = 0;
        if (tu_rand(seed) % 10) { /* one chunk in ten has an empty ACL */
            for (int k = 0; k < 1 + (int)(tu_rand(seed) % 2); k++)
                f->allow[i] |= 1u << (tu_rand(seed) % NPRIN);
            if (tu_rand(seed) % 4 == 0)
                f->deny[i] |= 1u << (tu_rand(seed) % NPRIN);
        }
        for (int p = 0; p < NPRIN; p++) {
            if (f->allow[i] & (1u << p))
                al[i][na++] = form(seed, p);
            if (f->deny[i] & (1u << p))
                de[i][nd++] = form(seed, p);
        }
        snprintf(f->body[i], sizeof f->body[i], "common %s %s", words[i % NWORD],
                 words[(i / NWORD) % NWORD]);
        chunk_id(i, ids[i], sizeof ids[i]);
        snprintf(meta[i], sizeof meta[i], "{\"tag\":\"t%d\",\"num\":%d}", i % 3, i);
        fields[i] = (cordon_field){"body", f->body[i]};
        c[i] = (cordon_chunk){.id = ids[i],
                              .vector = f->vecs[i],
                              .fields = &fields[i],
                              .n_fields = 1,
                              .metadata_json = meta[i],
                              .allowed = al[i],
                              .n_allowed = na,
                              .denied = de[i],
                              .n_denied = nd};
        f->live[i] = 1;
    }
    for (int i = 0; i < NCHUNK; i += 120)
        assert_int_equal(cordon_put(f->db, "docs", c + i, 120, NULL, NULL), 0);
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    uint64_t seed = 99;
    const char *tf[] = {"body"};
    cordon_meta_field mf[] = {{"tag", CORDON_META_KEYWORD}, {"num", CORDON_META_NUMBER}};
    cordon_collection_spec spec = {.asserted_principals = 1,
                                   .name = "docs",
                                   .dim = DIM,
                                   .metric = CORDON_METRIC_L2,
                                   .text_fields = tf,
                                   .n_text_fields = 1,
                                   .meta_fields = mf,
                                   .n_meta_fields = 2};
    assert_non_null(tu_tmpdir(f->dir, sizeof f->dir));
    assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
    assert_int_equal(cordon_collection_create(f->db, &spec, NULL), 0);
    put_all(f, &seed);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    cordon_close(f->db);
    tu_rmrf(f->dir);
    free(f);
    return 0;
}

static int id_index(const char *id)
{
    int i;
    if (strlen(id) != 4 || id[0] != 'c' || sscanf(id + 1, "%d", &i) != 1 || i < 0 || i >= NCHUNK)
        return -1;
    return i;
}

/* Checks one result against the reference: every hit readable, no duplicates, readable count
 * exact; with `all` set, every readable chunk matching `match` is there. */
static void check_result(const fx_t *f, const subj_t *s, const cordon_result *r, int all,
                         int (*match)(const fx_t *, int), const char *what)
{
    int seen[NCHUNK] = {0}, nread = 0, nmatch = 0;
    for (int i = 0; i < NCHUNK; i++) {
        nread += readable(f, i, s->holds);
        nmatch += readable(f, i, s->holds) && (!match || match(f, i));
    }
    if (r->readable != (uint64_t)nread)
        fail_msg("%s: readable %llu, reference %d", what, (unsigned long long)r->readable, nread);
    for (size_t h = 0; h < r->n_hits; h++) {
        int i = id_index(r->hits[h].id);
        if (i < 0 || !readable(f, i, s->holds))
            fail_msg("%s: LEAK: hit \"%s\" is not readable by the subject", what, r->hits[h].id);
        if (seen[i]++)
            fail_msg("%s: hit \"%s\" returned twice", what, r->hits[h].id);
        if (match && !match(f, i))
            fail_msg("%s: hit \"%s\" does not match the query", what, r->hits[h].id);
        if (isnan(r->hits[h].score))
            fail_msg("%s: hit \"%s\" has a NaN score", what, r->hits[h].id);
        if (h && r->hits[h].score > r->hits[h - 1].score + 1e-6f)
            fail_msg("%s: hits are not best first", what);
    }
    if (all && r->n_hits != (size_t)nmatch)
        fail_msg("%s: %zu hits, reference %d", what, r->n_hits, nmatch);
    assert_int_equal(r->revision, cordon_revision(f->db));
}

static int m_alpha(const fx_t *f, int i)
{
    return strstr(f->body[i], "alpha") != NULL;
}
static int m_t1(const fx_t *f, int i)
{
    (void)f;
    return i % 3 == 1;
}
static int m_not_alpha(const fx_t *f, int i)
{
    return !m_alpha(f, i);
}
static int m_bravo_t2(const fx_t *f, int i)
{
    return strstr(f->body[i], "bravo") && i % 3 == 2;
}
static int m_num_lt_100(const fx_t *f, int i)
{
    (void)f;
    return i < 100;
}

static void search_ok(const fx_t *f, const subj_t *s, const cordon_query *q, cordon_result **r,
                      const char *what)
{
    cordon_subject sub = {.principals = s->names, .n_principals = s->n};
    cordon_error err;
    int rc = cordon_search(f->db, "docs", &sub, q, r, &err);
    if (rc)
        fail_msg("%s: search failed: %d %s", what, rc, err.message);
}

/* Every search mode, for every subject, against the reference. */
static void sweep(fx_t *f, uint64_t *seed)
{
    static const struct {
        const char *json;
        int (*match)(const fx_t *, int);
    } qj[] = {
        {"{\"match\":{\"body\":\"alpha\"}}", m_alpha},
        {"{\"match_all\":{}}", NULL},
        {"{\"term\":{\"tag\":\"t1\"}}", m_t1},
        {"{\"bool\":{\"must_not\":[{\"match\":{\"body\":\"alpha\"}}]}}", m_not_alpha},
        {"{\"bool\":{\"must\":[{\"match\":{\"body\":\"bravo\"}}],"
         "\"filter\":[{\"term\":{\"tag\":\"t2\"}}]}}",
         m_bravo_t2},
        {"{\"range\":{\"num\":{\"lt\":100}}}", m_num_lt_100},
        {"{\"exists\":{\"field\":\"tag\"}}", NULL},
        {"{\"prefix\":{\"body\":\"comm\"}}", NULL},
        {"{\"fuzzy\":{\"body\":\"comon\"}}", NULL},
        {"{\"bool\":{\"should\":[{\"match\":{\"body\":\"alpha\"}},{\"match\":{\"body\":"
         "\"common\"}}]}}",
         NULL},
    };
    char what[160];
    for (size_t si = 0; si < NSUBJ; si++) {
        const subj_t *s = &subjects[si];
        float q[DIM];
        cordon_result *r;
        for (int d = 0; d < DIM; d++)
            q[d] = tu_randf(seed) * 2 - 1;
        for (int strat = 0; strat <= CORDON_STRATEGY_POSTFILTER; strat++) {
            size_t ks[] = {5, NCHUNK};
            for (int ki = 0; ki < 2; ki++) {
                cordon_query qu = {.vector = q, .k = ks[ki], .strategy = (cordon_strategy)strat};
                snprintf(what, sizeof what, "subject %zu vector strategy %d k %zu", si, strat,
                         ks[ki]);
                search_ok(f, s, &qu, &r, what);
                check_result(f, s, r, strat == CORDON_STRATEGY_EXACT && ks[ki] == NCHUNK, NULL,
                             what);
                if (strat == CORDON_STRATEGY_EXACT)
                    assert_true(r->complete);
                cordon_result_free(r);
            }
        }
        cordon_query tq = {.text = "common", .k = NCHUNK};
        snprintf(what, sizeof what, "subject %zu text", si);
        search_ok(f, s, &tq, &r, what);
        check_result(f, s, r, 1, NULL, what);
        cordon_result_free(r);
        for (size_t j = 0; j < sizeof qj / sizeof qj[0]; j++) {
            cordon_query jq = {.query_json = qj[j].json, .k = NCHUNK};
            snprintf(what, sizeof what, "subject %zu query %s", si, qj[j].json);
            search_ok(f, s, &jq, &r, what);
            check_result(f, s, r, 1, qj[j].match, what);
            cordon_result_free(r);
        }
        /* The ids query names internal rows: whatever it means, it must not open rows. */
        char ids[NCHUNK * 5 + 32];
        size_t at = (size_t)snprintf(ids, sizeof ids, "{\"ids\":{\"values\":[");
        for (int i = 0; i < NCHUNK; i++)
            at += (size_t)snprintf(ids + at, sizeof ids - at, "%s%d", i ? "," : "", i);
        snprintf(ids + at, sizeof ids - at, "]}}");
        cordon_query iq = {.query_json = ids, .k = NCHUNK};
        cordon_subject sub = {.principals = s->names, .n_principals = s->n};
        if (cordon_search(f->db, "docs", &sub, &iq, &r, NULL) == 0) {
            check_result(f, s, r, 0, NULL, "ids query");
            cordon_result_free(r);
        }
        for (int fu = 0; fu < 2; fu++)
            for (int strat = 0; strat <= CORDON_STRATEGY_POSTFILTER; strat++) {
                cordon_query hq = {.vector = q,
                                   .text = "alpha",
                                   .k = 20,
                                   .strategy = (cordon_strategy)strat,
                                   .fusion = (cordon_fusion)fu};
                snprintf(what, sizeof what, "subject %zu hybrid fusion %d strategy %d", si, fu,
                         strat);
                search_ok(f, s, &hq, &r, what);
                check_result(f, s, r, 0, NULL, what);
                cordon_result_free(r);
            }
    }
}

/* Every chunk through cordon_get: readable ones come back, the others fail exactly as an id
 * that never existed does. */
static void get_sweep(fx_t *f)
{
    for (size_t si = 0; si < NSUBJ; si++) {
        const subj_t *s = &subjects[si];
        cordon_subject sub = {.principals = s->names, .n_principals = s->n};
        cordon_error missing;
        cordon_record *rec = NULL;
        assert_int_equal(cordon_get(f->db, "docs", &sub, "c999", &rec, &missing),
                         CORDON_ERR_NOT_FOUND);
        for (int i = 0; i < NCHUNK; i++) {
            char id[16], want[CORDON_ERROR_MAX];
            cordon_error err;
            chunk_id(i, id, sizeof id);
            int rc = cordon_get(f->db, "docs", &sub, id, &rec, &err);
            if (readable(f, i, s->holds)) {
                if (rc)
                    fail_msg("subject %zu: readable %s not returned: %s", si, id, err.message);
                assert_string_equal(rec->id, id);
                cordon_record_free(rec);
                continue;
            }
            if (rc != CORDON_ERR_NOT_FOUND)
                fail_msg("subject %zu: hidden %s gave %d, not NOT_FOUND", si, id, rc);
            /* The same message as for "c999", with the caller's own id in it. */
            const char *p = strstr(missing.message, "c999");
            assert_non_null(p);
            snprintf(want, sizeof want, "%.*s%s%s", (int)(p - missing.message), missing.message, id,
                     p + 4);
            assert_string_equal(err.message, want);
        }
    }
}

static void test_every_mode_returns_only_readable_chunks(void **state)
{
    fx_t *f = *state;
    uint64_t seed = 5;
    sweep(f, &seed);
    get_sweep(f);
}

/* Random ACL changes (including to empty ACLs and to deny-only) and deletes, then the sweeps
 * again: revocations apply to the very next request, in every mode. */
static void test_acl_changes_and_deletes_apply_to_every_mode(void **state)
{
    fx_t *f = *state;
    uint64_t seed = 11;
    for (int round = 0; round < 2; round++) {
        static cordon_acl_change ch[NCHUNK];
        static const char *al[NCHUNK][NPRIN], *de[NCHUNK][NPRIN];
        static char ids[NCHUNK][16];
        size_t n = 0;
        for (int i = 0; i < NCHUNK; i++) {
            if (!f->live[i] || tu_rand(&seed) % 3)
                continue;
            size_t na = 0, nd = 0;
            f->allow[i] = tu_rand(&seed) % 5 ? 1u << (tu_rand(&seed) % NPRIN) : 0;
            f->deny[i] = tu_rand(&seed) % 3 ? 0 : 1u << (tu_rand(&seed) % NPRIN);
            for (int p = 0; p < NPRIN; p++) {
                if (f->allow[i] & (1u << p))
                    al[n][na++] = form(&seed, p);
                if (f->deny[i] & (1u << p))
                    de[n][nd++] = form(&seed, p);
            }
            chunk_id(i, ids[n], sizeof ids[n]);
            ch[n] = (cordon_acl_change){ids[n], al[n], na, de[n], nd, NULL, 0};
            n++;
        }
        assert_int_equal(cordon_set_acl(f->db, "docs", ch, n, NULL, NULL), 0);
        static char dids[NCHUNK][16];
        const char *del[NCHUNK];
        size_t nd = 0, deleted = 0;
        for (int i = 0; i < NCHUNK; i++)
            if (f->live[i] && tu_rand(&seed) % 12 == 0) {
                chunk_id(i, dids[nd], sizeof dids[nd]);
                del[nd] = dids[nd];
                nd++;
                f->live[i] = 0;
            }
        assert_int_equal(cordon_delete(f->db, "docs", del, nd, &deleted, NULL, NULL), 0);
        assert_int_equal(deleted, nd);
        sweep(f, &seed);
        get_sweep(f);
    }
    /* And the same after a reopen, from the store and the checkpoints. */
    cordon_close(f->db);
    assert_int_equal(cordon_open(f->dir, NULL, &f->db, NULL), 0);
    sweep(f, &seed);
    get_sweep(f);
}

/* A term that only hidden chunks hold finds nothing, and the readable count is that of the
 * subject, not of the matches. */
static void test_text_matching_only_hidden_chunks_finds_nothing(void **state)
{
    fx_t *f = *state;
    const char *secret[] = {"group:secret"}, *deny_g0[] = {"g0"};
    float v[DIM] = {0.5f, 0.5f};
    cordon_field fl = {"body", "zebra quagga okapi"};
    cordon_chunk c[2] = {
        {.id = "s1", .vector = v, .fields = &fl, .n_fields = 1, .allowed = secret, .n_allowed = 1},
        /* readable by g0 through "g0", but g0 is also denied: deny wins */
        {.id = "s2",
         .vector = v,
         .fields = &fl,
         .n_fields = 1,
         .allowed = deny_g0,
         .n_allowed = 1,
         .denied = deny_g0,
         .n_denied = 1},
    };
    assert_int_equal(cordon_put(f->db, "docs", c, 2, NULL, NULL), 0);
    const char *queries[] = {"{\"match\":{\"body\":\"zebra\"}}",
                             "{\"prefix\":{\"body\":\"zeb\"}}",
                             "{\"fuzzy\":{\"body\":\"zebro\"}}",
                             "{\"match_phrase\":{\"body\":\"zebra quagga\"}}",
                             "{\"multi_match\":{\"query\":\"okapi\",\"fields\":[\"body\"]}}",
                             "{\"bool\":{\"should\":[{\"match\":{\"body\":\"quagga\"}}]}}"};
    for (size_t si = 0; si < NSUBJ; si++) {
        cordon_subject s = {.principals = subjects[si].names, .n_principals = subjects[si].n};
        cordon_result *r, *base;
        cordon_query all = {.text = "common"};
        assert_int_equal(cordon_search(f->db, "docs", &s, &all, &base, NULL), 0);
        cordon_query t = {.text = "zebra"};
        assert_int_equal(cordon_search(f->db, "docs", &s, &t, &r, NULL), 0);
        assert_int_equal(r->n_hits, 0);
        assert_int_equal(r->readable, base->readable);
        cordon_result_free(r);
        for (size_t j = 0; j < sizeof queries / sizeof queries[0]; j++) {
            cordon_query jq = {.query_json = queries[j]};
            assert_int_equal(cordon_search(f->db, "docs", &s, &jq, &r, NULL), 0);
            if (r->n_hits)
                fail_msg("LEAK: %s found %s for subject %zu", queries[j], r->hits[0].id, si);
            assert_int_equal(r->readable, base->readable);
            cordon_result_free(r);
        }
        for (int strat = 0; strat <= CORDON_STRATEGY_POSTFILTER; strat++) {
            cordon_query h = {
                .vector = v, .text = "zebra", .strategy = (cordon_strategy)strat, .k = 3};
            assert_int_equal(cordon_search(f->db, "docs", &s, &h, &r, NULL), 0);
            for (size_t i = 0; i < r->n_hits; i++)
                assert_true(r->hits[i].id[0] == 'c'); /* never s1 or s2 */
            cordon_result_free(r);
        }
        cordon_result_free(base);
    }
}

/* A kind outside user, service, group, role is an error naming it, never a principal that
 * quietly holds nothing, whether it is asserted by a searcher or written into an ACL. */
static void test_unknown_kinds_are_refused_not_read_as_nothing(void **state)
{
    fx_t *f = *state;
    static const char *const odd[] = {"GROUP:g0", "Group:g1", "usr:u0", "grp:g2"};
    float v[DIM] = {0.5f};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        cordon_subject s = {.principals = &odd[i], .n_principals = 1};
        cordon_query q = {.vector = v};
        cordon_chunk c = {.id = "odd",
                          .vector = v,
                          .allowed = &canon[0],
                          .n_allowed = 1,
                          .denied = &odd[i],
                          .n_denied = 1};
        cordon_result *r = NULL;
        cordon_error err;
        assert_int_equal(cordon_search(f->db, "docs", &s, &q, &r, &err), CORDON_ERR_INVALID);
        assert_null(r);
        assert_non_null(strstr(err.message, odd[i]));
        assert_int_equal(cordon_put(f->db, "docs", &c, 1, NULL, &err), CORDON_ERR_INVALID);
        assert_non_null(strstr(err.message, odd[i]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_mode_returns_only_readable_chunks, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_acl_changes_and_deletes_apply_to_every_mode, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_text_matching_only_hidden_chunks_finds_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unknown_kinds_are_refused_not_read_as_nothing, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
