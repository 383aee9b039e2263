/* test_rebac.c: relationship tuples (put_schema, write_tuples, check, lookups, expand) against
 * a deliberately naive reference written here: fixpoints over plain sets, on seeded random
 * tuples with cycles in groups and folders, through writes, deletes, batches, copies, export
 * and import; plus the schema's and the tuples' refusals, wildcards and the depth limit.
 * Relies on cmocka and authz.h. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authz/authz.h"
#include "base/mem.h"
#include "rebac_ref.h"
#include "testutil.h"

/* A Drive-like schema with a Confluence-like restriction: documents inherit view from their
 * folders, banned users lose it, editing needs ownership and view. */
/* Everything but the documents' permissions, which the two schemas below differ in. */
#define SCHEMA_HEAD                                                                                \
    "{\"op\":\"put_schema\",\"schema\":{\"types\":{"                                               \
    "\"user\":{},"                                                                                 \
    "\"group\":{\"relations\":{\"member\":[\"user\",\"group#member\"]}},"                          \
    "\"folder\":{\"relations\":{\"parent\":[\"folder\"],\"owner\":[\"user\"],"                     \
    "\"viewer\":[\"user\",\"group#member\",\"user:*\"]},"                                          \
    "\"permissions\":{\"view\":\"viewer + owner + parent->view\"}},"                               \
    "\"document\":{\"relations\":{\"parent\":[\"folder\"],\"owner\":[\"user\"],"                   \
    "\"viewer\":[\"user\",\"group#member\"],\"banned\":[\"user\"]},"

static const char *const SCHEMA =
    SCHEMA_HEAD "\"permissions\":{\"view\":\"(viewer + owner + parent->view) - banned\","
                "\"edit\":\"owner & view\"}}}}}";

/* The same without the restriction: unions and arrows only, so lookups trust the reverse walk
 * alone (no check of their own). */
static const char *const SCHEMA_MONOTONE =
    SCHEMA_HEAD "\"permissions\":{\"view\":\"viewer + owner + parent->view\","
                "\"edit\":\"owner + owner\"}}}}}";
static int monotone; /* which schema the reference follows */

#define NU 6
#define NG 4
#define NF 6
#define ND 8

typedef struct ref {
    unsigned g_users[NG], g_groups[NG]; /* direct members: bits */
    unsigned f_parent[NF], f_owner[NF], f_viewer[NF], f_vgroups[NF];
    int f_public[NF]; /* viewer user:* */
    unsigned d_parent[ND], d_owner[ND], d_viewer[ND], d_vgroups[ND], d_banned[ND];
} ref_t;

static uint64_t rng;
static unsigned rnd(unsigned n)
{
    return (unsigned)(tu_rand(&rng) % n);
}

/* ---- the reference: least fixpoints over bit sets ---- */

static void folder_view(const ref_t *r, const unsigned mem[NG], unsigned out[NF])
{
    int changed = 1;
    for (int f = 0; f < NF; f++)
        out[f] = r->f_viewer[f] | r->f_owner[f] | rref_users_of(r->f_vgroups[f], mem, NG) |
                 (r->f_public[f] ? (1u << NU) - 1 : 0);
    while (changed) {
        changed = 0;
        for (int f = 0; f < NF; f++)
            for (int p = 0; p < NF; p++)
                if (r->f_parent[f] >> p & 1 && (out[f] | out[p]) != out[f]) {
                    out[f] |= out[p];
                    changed = 1;
                }
    }
}

static unsigned doc_view(const ref_t *r, int d, const unsigned mem[NG], const unsigned fv[NF])
{
    unsigned v = r->d_viewer[d] | r->d_owner[d] | rref_users_of(r->d_vgroups[d], mem, NG);
    for (int f = 0; f < NF; f++)
        if (r->d_parent[d] >> f & 1)
            v |= fv[f];
    return monotone ? v : v & ~r->d_banned[d];
}

/* ---- driving the model ---- */

static void apply_ok(authz_model_t *m, const char *op)
{
    cdn_err_t e = {0, ""};
    if (authz_apply(m, op, &e))
        fail_msg("op %.300s: %s", op, e.msg);
}

static const rref_kind_t kinds[] = {
    {"group:g%d#member@user:u%d", NG, NU, offsetof(ref_t, g_users)},
    {"group:g%d#member@group:g%d#member", NG, NG, offsetof(ref_t, g_groups)},
    {"folder:f%d#parent@folder:f%d", NF, NF, offsetof(ref_t, f_parent)},
    {"folder:f%d#owner@user:u%d", NF, NU, offsetof(ref_t, f_owner)},
    {"folder:f%d#viewer@user:u%d", NF, NU, offsetof(ref_t, f_viewer)},
    {"folder:f%d#viewer@group:g%d#member", NF, NG, offsetof(ref_t, f_vgroups)},
    {"document:d%d#parent@folder:f%d", ND, NF, offsetof(ref_t, d_parent)},
    {"document:d%d#parent@folder:f%d", ND, NF, offsetof(ref_t, d_parent)},
    {"document:d%d#owner@user:u%d", ND, NU, offsetof(ref_t, d_owner)},
    {"document:d%d#viewer@user:u%d", ND, NU, offsetof(ref_t, d_viewer)},
    {"document:d%d#viewer@group:g%d#member", ND, NG, offsetof(ref_t, d_vgroups)},
    {"document:d%d#banned@user:u%d", ND, NU, offsetof(ref_t, d_banned)},
    {NULL, NF, 0, 0}, /* folder:f%d#viewer@user:* */
};

/* One tuple written or deleted in both. */
static void tuple(authz_model_t *m, ref_t *r, int write)
{
    char t[160], op[256];
    const rref_kind_t *k = &kinds[rnd(sizeof kinds / sizeof *kinds)];
    int a = (int)rnd((unsigned)k->na);
    if (!k->fmt) { /* rare: a wildcard opens a whole subtree */
        if (write && rnd(3))
            return;
        snprintf(t, sizeof t, "folder:f%d#viewer@user:*", a);
        r->f_public[a] = write;
    } else {
        int b = (int)rnd((unsigned)k->nb);
        unsigned *bits = (unsigned *)((char *)r + k->field);
        snprintf(t, sizeof t, k->fmt, a, b);
        bits[a] = write ? bits[a] | 1u << b : bits[a] & ~(1u << b);
    }
    snprintf(op, sizeof op, "{\"op\":\"write_tuples\",\"%s\":[\"%s\"]}",
             write ? "writes" : "deletes", t);
    apply_ok(m, op);
}

static bool check(authz_model_t *m, const char *s, const char *p, const char *o)
{
    bool ok;
    cdn_err_t e = {0, ""};
    if (authz_rebac_check(m, s, p, o, &ok, NULL, &e))
        fail_msg("check %s %s %s: %s", s, p, o, e.msg);
    return ok;
}

typedef struct names {
    char v[64][48];
    int n;
} names_t;

static int collect(void *ctx, const char *name)
{
    names_t *n = ctx;
    assert_true(n->n < 64);
    snprintf(n->v[n->n++], sizeof n->v[0], "%s", name);
    return 0;
}

static int has_name(const names_t *n, const char *s)
{
    for (int i = 0; i < n->n; i++)
        if (!strcmp(n->v[i], s))
            return 1;
    return 0;
}

static void compare(authz_model_t *m, const ref_t *r, uint64_t seed, int round)
{
    unsigned mem[NG], fv[NF];
    char s[32], o[32];
    rref_members(r->g_users, r->g_groups, NG, mem);
    folder_view(r, mem, fv);
    for (int u = 0; u < NU; u++) {
        snprintf(s, sizeof s, "user:u%d", u);
        for (int g = 0; g < NG; g++) {
            snprintf(o, sizeof o, "group:g%d", g);
            if (check(m, s, "member", o) != (mem[g] >> u & 1))
                fail_msg("seed %llu round %d: %s member %s", (unsigned long long)seed, round, s, o);
        }
        for (int f = 0; f < NF; f++) {
            snprintf(o, sizeof o, "folder:f%d", f);
            if (check(m, s, "view", o) != (fv[f] >> u & 1))
                fail_msg("seed %llu round %d: %s view %s: reference %u", (unsigned long long)seed,
                         round, s, o, fv[f] >> u & 1);
        }
        names_t docs = {0};
        assert_int_equal(
            authz_rebac_lookup_resources(m, s, "document", "view", collect, &docs, NULL, NULL), 0);
        for (int d = 0; d < ND; d++) {
            unsigned dv = doc_view(r, d, mem, fv);
            snprintf(o, sizeof o, "document:d%d", d);
            if (check(m, s, "view", o) != (dv >> u & 1))
                fail_msg("seed %llu round %d: %s view %s: reference %u", (unsigned long long)seed,
                         round, s, o, dv >> u & 1);
            if (check(m, s, "edit", o) !=
                ((monotone ? r->d_owner[d] : dv & r->d_owner[d]) >> u & 1))
                fail_msg("seed %llu round %d: %s edit %s", (unsigned long long)seed, round, s, o);
            snprintf(o, sizeof o, "d%d", d);
            if (has_name(&docs, o) != (int)(dv >> u & 1))
                fail_msg("seed %llu round %d: lookup-resources of %s: d%d %s",
                         (unsigned long long)seed, round, s, d,
                         has_name(&docs, o) ? "listed, not readable" : "missing");
        }
    }
    for (int d = 0; d < ND; d++) { /* lookup-subjects agrees wherever no wildcard reaches */
        unsigned dv = doc_view(r, d, mem, fv);
        names_t who = {0};
        snprintf(o, sizeof o, "document:d%d", d);
        assert_int_equal(
            authz_rebac_lookup_subjects(m, o, "view", "user", collect, &who, NULL, NULL), 0);
        if (has_name(&who, "user:*"))
            continue;
        for (int u = 0; u < NU; u++) {
            snprintf(s, sizeof s, "user:u%d", u);
            if (has_name(&who, s) != (int)(dv >> u & 1))
                fail_msg("seed %llu round %d: lookup-subjects of %s: %s", (unsigned long long)seed,
                         round, o, s);
        }
    }
}

static char *export_text(authz_model_t *m)
{
    char *t = NULL;
    assert_int_equal(authz_export(m, &t, NULL), 0);
    return t;
}

static void test_random_tuples_decide_as_the_reference(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 24; seed++) {
        monotone = seed > 12;
        authz_model_t *m;
        ref_t r;
        memset(&r, 0, sizeof r);
        rng = seed * 0x9e3779b97f4a7c15ull;
        assert_int_equal(authz_model_new(&m, NULL), 0);
        apply_ok(m, monotone ? SCHEMA_MONOTONE : SCHEMA);
        for (int i = 0; i < 40; i++)
            tuple(m, &r, 1);
        for (int round = 0; round < 6; round++) {
            compare(m, &r, seed, round);
            for (int i = 0; i < 10; i++)
                tuple(m, &r, rnd(3) != 0);
        }
        /* export, import: the same tuples, the same answers */
        char *text = export_text(m);
        authz_model_t *m2;
        assert_int_equal(authz_model_new(&m2, NULL), 0);
        cdn_err_t e = {0, ""};
        if (authz_import(m2, text, &e))
            fail_msg("import: %s", e.msg);
        char *text2 = export_text(m2);
        assert_string_equal(text, text2);
        compare(m2, &r, seed, 99);
        cdn_free(text);
        cdn_free(text2);
        authz_model_free(m2);
        authz_model_free(m);
    }
}

/* A copy shares the tuples until one side writes; a batch writes on a copy and swaps it in. */
static void test_copies_and_batches_keep_their_own_tuples(void **state)
{
    (void)state;
    authz_model_t *m, *copy;
    assert_int_equal(authz_model_new(&m, NULL), 0);
    apply_ok(m, SCHEMA);
    apply_ok(m, "{\"op\":\"write_tuples\",\"writes\":[\"folder:a#viewer@user:ann\","
                "\"document:x#parent@folder:a\"]}");
    assert_int_equal(authz_model_clone(m, &copy, NULL), 0);
    apply_ok(m, "{\"op\":\"write_tuples\",\"deletes\":[\"folder:a#viewer@user:ann\"]}");
    assert_false(check(m, "user:ann", "view", "document:x"));
    assert_true(check(copy, "user:ann", "view", "document:x")); /* untouched */
    json_t *ops = json_loads("[{\"op\":\"write_tuples\",\"writes\":[\"folder:a#viewer@user:bo\"]},"
                             "{\"op\":\"put_group\",\"id\":\"g\"}]",
                             0, NULL);
    assert_int_equal(authz_apply_batch(m, ops, NULL), 0);
    json_decref(ops);
    assert_true(check(m, "user:bo", "view", "document:x"));
    assert_false(check(copy, "user:bo", "view", "document:x"));
    apply_ok(m, SCHEMA_MONOTONE); /* a schema that still fits: the tuples stay */
    assert_true(check(m, "user:bo", "view", "document:x"));
    /* a failing batch leaves the tuples as they were */
    ops = json_loads("[{\"op\":\"write_tuples\",\"writes\":[\"folder:a#viewer@user:cy\"]},"
                     "{\"op\":\"write_tuples\",\"writes\":[\"folder:a#nothing@user:cy\"]}]",
                     0, NULL);
    assert_int_not_equal(authz_apply_batch(m, ops, NULL), 0);
    json_decref(ops);
    assert_false(check(m, "user:cy", "view", "document:x"));
    authz_model_free(copy);
    authz_model_free(m);
}

static void test_wildcards_cycles_and_the_depth_limit(void **state)
{
    (void)state;
    authz_model_t *m;
    char op[256];
    cdn_err_t e = {0, ""};
    bool ok;
    assert_int_equal(authz_model_new(&m, NULL), 0);
    apply_ok(m, SCHEMA);
    apply_ok(m, "{\"op\":\"write_tuples\",\"writes\":[\"folder:pub#viewer@user:*\","
                "\"document:p#parent@folder:pub\",\"document:p#banned@user:eve\","
                "\"folder:c1#parent@folder:c2\",\"folder:c2#parent@folder:c1\","
                "\"group:a#member@group:b#member\",\"group:b#member@group:a#member\","
                "\"document:q#viewer@group:a#member\",\"document:q#parent@folder:c1\"]}");
    assert_true(check(m, "user:anyone", "view", "document:p"));  /* never named in a tuple */
    assert_false(check(m, "user:eve", "view", "document:p"));    /* banned beats the wildcard */
    assert_false(check(m, "user:anyone", "view", "document:q")); /* cycles: no path, no hang */
    names_t who = {0};
    assert_int_equal(
        authz_rebac_lookup_subjects(m, "document:p", "view", "user", collect, &who, NULL, NULL), 0);
    assert_true(has_name(&who, "user:*"));
    char *tree = NULL;
    assert_int_equal(authz_rebac_expand(m, "document:q", "view", &tree, NULL), 0);
    assert_non_null(strstr(tree, "\"cycle\":true"));
    assert_non_null(strstr(tree, "\"operation\":\"exclusion\""));
    cdn_free(tree);
    /* a chain of 80 nested groups passes the 64 a check follows */
    for (int i = 0; i < 80; i++) {
        snprintf(op, sizeof op,
                 "{\"op\":\"write_tuples\",\"writes\":[\"group:n%d#member@group:n%d#member\"]}", i,
                 i + 1);
        apply_ok(m, op);
    }
    apply_ok(m, "{\"op\":\"write_tuples\",\"writes\":[\"group:n80#member@user:deep\"]}");
    assert_int_equal(authz_rebac_check(m, "user:deep", "member", "group:n0", &ok, NULL, &e),
                     CDN_ERR_LIMIT);
    assert_false(ok);
    assert_true(check(m, "user:deep", "member", "group:n40"));
    authz_model_free(m);
}

static void test_bad_schemas_and_tuples_change_nothing(void **state)
{
    (void)state;
    authz_model_t *m;
    cdn_err_t e = {0, ""};
    static const char *const bad[] = {
        /* unknown relation in an expression */
        "{\"op\":\"put_schema\",\"schema\":{\"types\":{\"user\":{},\"doc\":{\"relations\":"
        "{\"viewer\":[\"user\"]},\"permissions\":{\"view\":\"viewer + editor\"}}}}}",
        /* an arrow from a permission */
        "{\"op\":\"put_schema\",\"schema\":{\"types\":{\"user\":{},\"doc\":{\"relations\":"
        "{\"viewer\":[\"user\"]},\"permissions\":{\"view\":\"viewer\",\"x\":\"view->view\"}}}}}",
        /* operators mixed without parentheses */
        "{\"op\":\"put_schema\",\"schema\":{\"types\":{\"user\":{},\"doc\":{\"relations\":"
        "{\"a\":[\"user\"],\"b\":[\"user\"]},\"permissions\":{\"v\":\"a + b - a\"}}}}}",
        /* a subject type that is not a type */
        "{\"op\":\"put_schema\",\"schema\":{\"types\":{\"doc\":{\"relations\":"
        "{\"viewer\":[\"person\"]}}}}}",
        /* a misspelt field */
        "{\"op\":\"put_schema\",\"schema\":{\"types\":{\"user\":{\"relation\":{}}}}}",
        /* tuples before a schema */
        "{\"op\":\"write_tuples\",\"writes\":[\"doc:1#viewer@user:a\"]}",
    };
    assert_int_equal(authz_model_new(&m, NULL), 0);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_not_equal(authz_apply(m, bad[i], &e), 0);
        assert_int_equal(authz_model_revision(m), 0);
    }
    assert_non_null(strstr(e.msg, "put_schema"));
    apply_ok(m, SCHEMA);
    static const char *const bad_tuples[] = {
        "\"document:1#view@user:a\"",     /* a permission is computed, not written */
        "\"document:1#viewer@folder:a\"", /* the relation does not take folders */
        "\"document:1#viewer@user:*\"",   /* nor a wildcard there */
        "\"document:*#viewer@user:a\"",   /* an object's id cannot be * */
        "\"document:1#viewer\"",          /* no subject */
        "\"nothing:1#viewer@user:a\"",    /* no such type */
        "\"document:a b#viewer@user:a\"", /* a space in an id */
    };
    uint64_t rev = authz_model_revision(m);
    for (size_t i = 0; i < sizeof bad_tuples / sizeof *bad_tuples; i++) {
        char op[256];
        snprintf(op, sizeof op,
                 "{\"op\":\"write_tuples\",\"writes\":[\"folder:ok#viewer@user:z\","
                 "%s]}",
                 bad_tuples[i]);
        if (authz_apply(m, op, &e) == 0)
            fail_msg("accepted %s", bad_tuples[i]);
        assert_non_null(strstr(e.msg, "writes[1]"));
        assert_int_equal(authz_model_revision(m), rev); /* the good one was not written either */
    }
    assert_false(check(m, "user:z", "view", "folder:ok"));
    /* a schema that would orphan a tuple is refused, naming it */
    apply_ok(m, "{\"op\":\"write_tuples\",\"writes\":[\"document:1#banned@user:x\"]}");
    assert_int_equal(authz_apply(m,
                                 "{\"op\":\"put_schema\",\"schema\":{\"types\":{\"user\":{},"
                                 "\"document\":{\"relations\":{\"viewer\":[\"user\"]}}}}}",
                                 &e),
                     CDN_ERR_CONFLICT);
    assert_non_null(strstr(e.msg, "document:1#banned@user:x"));
    bool ok;
    assert_int_equal(authz_rebac_check(m, "user:x", "nope", "document:1", &ok, NULL, &e),
                     CDN_ERR_INVALID);
    authz_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_tuples_decide_as_the_reference),
        cmocka_unit_test(test_copies_and_batches_keep_their_own_tuples),
        cmocka_unit_test(test_wildcards_cycles_and_the_depth_limit),
        cmocka_unit_test(test_bad_schemas_and_tuples_change_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
