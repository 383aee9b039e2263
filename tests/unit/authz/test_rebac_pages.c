/* test_rebac_pages.c: a subtraction under a recursive arrow (Confluence-like pages: a page reads
 * from its space or its parent page, minus whoever it blocks, and so does every page under it)
 * against a naive reference written here: a least fixpoint over plain bit sets, on seeded random
 * tuples with cycles among pages and groups, wildcards on both sides of the subtraction and pages
 * with several spaces and parents. Every check and every lookup-resources answer must equal the
 * reference's, for both permissions. Relies on cmocka and authz.h. */
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
#include "rebac_ref.h"
#include "testutil.h"

static const char *const SCHEMA =
    "{\"op\":\"put_schema\",\"schema\":{\"types\":{\"user\":{},"
    "\"group\":{\"relations\":{\"member\":[\"user\",\"group#member\"]}},"
    "\"space\":{\"relations\":{\"member\":[\"user\",\"group#member\",\"user:*\"],"
    "\"admin\":[\"user\"]},\"permissions\":{\"view\":\"member + admin\"}},"
    "\"page\":{\"relations\":{\"space\":[\"space\"],\"parent\":[\"page\"],"
    "\"editor\":[\"user\"],\"blocked\":[\"user\",\"group#member\",\"user:*\"]},"
    "\"permissions\":{\"view\":\"(space->view + parent->view) - blocked\","
    "\"edit\":\"view & (editor + space->admin)\"}}}}}";

#define NU 6
#define NG 3
#define NS 3
#define NP 12
#define ALL ((1u << NU) - 1)

typedef struct ref {
    unsigned g_users[NG], g_groups[NG];
    unsigned s_member[NS], s_mgroups[NS], s_admin[NS], s_public[NS];
    unsigned p_space[NP], p_parent[NP], p_editor[NP], p_blocked[NP], p_bgroups[NP], p_ball[NP];
} ref_t;

static uint64_t rng;
static unsigned rnd(unsigned n)
{
    return (unsigned)(tu_rand(&rng) % n);
}

/* ---- the reference ---- */

/* view and edit of every page: the least fixpoint of view from nothing (the subtracted set does
 * not depend on view, so the iteration only grows) */
static void pages(const ref_t *r, unsigned view[NP], unsigned edit[NP])
{
    unsigned mem[NG], sv[NS];
    rref_members(r->g_users, r->g_groups, NG, mem);
    for (int s = 0; s < NS; s++)
        sv[s] = r->s_member[s] | rref_users_of(r->s_mgroups[s], mem, NG) | r->s_admin[s] |
                (r->s_public[s] ? ALL : 0);
    memset(view, 0, NP * sizeof *view);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int p = 0; p < NP; p++) {
            unsigned v = 0, blocked = r->p_blocked[p] | rref_users_of(r->p_bgroups[p], mem, NG) |
                                      (r->p_ball[p] ? ALL : 0);
            for (int s = 0; s < NS; s++)
                if (r->p_space[p] >> s & 1)
                    v |= sv[s];
            for (int q = 0; q < NP; q++)
                if (r->p_parent[p] >> q & 1)
                    v |= view[q];
            v &= ~blocked;
            if (v != view[p]) {
                view[p] = v;
                changed = 1;
            }
        }
    }
    for (int p = 0; p < NP; p++) {
        unsigned admins = 0;
        for (int s = 0; s < NS; s++)
            if (r->p_space[p] >> s & 1)
                admins |= r->s_admin[s];
        edit[p] = view[p] & (r->p_editor[p] | admins);
    }
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
    {"space:s%d#member@user:u%d", NS, NU, offsetof(ref_t, s_member)},
    {"space:s%d#member@group:g%d#member", NS, NG, offsetof(ref_t, s_mgroups)},
    {"space:s%d#admin@user:u%d", NS, NU, offsetof(ref_t, s_admin)},
    {"space:s%d#member@user:*", NS, 0, offsetof(ref_t, s_public)},
    {"page:p%d#space@space:s%d", NP, NS, offsetof(ref_t, p_space)},
    {"page:p%d#parent@page:p%d", NP, NP, offsetof(ref_t, p_parent)},
    {"page:p%d#parent@page:p%d", NP, NP, offsetof(ref_t, p_parent)},
    {"page:p%d#parent@page:p%d", NP, NP, offsetof(ref_t, p_parent)},
    {"page:p%d#editor@user:u%d", NP, NU, offsetof(ref_t, p_editor)},
    {"page:p%d#blocked@user:u%d", NP, NU, offsetof(ref_t, p_blocked)},
    {"page:p%d#blocked@group:g%d#member", NP, NG, offsetof(ref_t, p_bgroups)},
    {"page:p%d#blocked@user:*", NP, 0, offsetof(ref_t, p_ball)},
};

/* One tuple written or deleted in both (wildcards rarely written: they open or close a lot). */
static void tuple(authz_model_t *m, ref_t *r, int write)
{
    char t[96], op[192];
    const rref_kind_t *k = &kinds[rnd(sizeof kinds / sizeof *kinds)];
    int a = (int)rnd((unsigned)k->na);
    unsigned *bits = (unsigned *)((char *)r + k->field);
    if (!k->nb) {
        if (write && rnd(3))
            return;
        snprintf(t, sizeof t, k->fmt, a);
        bits[a] = (unsigned)write;
    } else {
        int b = (int)rnd((unsigned)k->nb);
        snprintf(t, sizeof t, k->fmt, a, b);
        bits[a] = write ? bits[a] | 1u << b : bits[a] & ~(1u << b);
    }
    snprintf(op, sizeof op, "{\"op\":\"write_tuples\",\"%s\":[\"%s\"]}",
             write ? "writes" : "deletes", t);
    apply_ok(m, op);
}

static int collect(void *ctx, const char *name)
{
    unsigned *found = ctx;
    int p;
    assert_int_equal(sscanf(name, "p%d", &p), 1);
    assert_true(p >= 0 && p < NP);
    assert_false(*found >> p & 1); /* listed once */
    *found |= 1u << p;
    return 0;
}

static void compare(authz_model_t *m, const ref_t *r, uint64_t seed, int round)
{
    unsigned view[NP], edit[NP];
    char s[32], o[32];
    pages(r, view, edit);
    for (int u = 0; u < NU; u++) {
        snprintf(s, sizeof s, "user:u%d", u);
        for (int k = 0; k < 2; k++) {
            const char *perm = k ? "edit" : "view";
            const unsigned *want = k ? edit : view;
            unsigned found = 0;
            cdn_err_t e = {0, ""};
            if (authz_rebac_lookup_resources(m, s, "page", perm, collect, &found, NULL, &e))
                fail_msg("lookup %s %s: %s", s, perm, e.msg);
            for (int p = 0; p < NP; p++) {
                bool ok;
                snprintf(o, sizeof o, "page:p%d", p);
                assert_int_equal(authz_rebac_check(m, s, perm, o, &ok, NULL, NULL), 0);
                if (ok != (want[p] >> u & 1) || (found >> p & 1) != (want[p] >> u & 1))
                    fail_msg("seed %llu round %d: %s %s %s: reference %u, check %d, lookup %u",
                             (unsigned long long)seed, round, s, perm, o, want[p] >> u & 1, ok,
                             found >> p & 1);
            }
        }
    }
}

static void test_pages_decide_as_the_reference(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        authz_model_t *m;
        ref_t r;
        memset(&r, 0, sizeof r);
        rng = seed * 0x9e3779b97f4a7c15ull;
        assert_int_equal(authz_model_new(&m, NULL), 0);
        apply_ok(m, SCHEMA);
        for (int i = 0; i < 50; i++)
            tuple(m, &r, 1);
        for (int round = 0; round < 8; round++) {
            compare(m, &r, seed, round);
            for (int i = 0; i < 12; i++)
                tuple(m, &r, rnd(3) != 0);
        }
        authz_model_free(m);
    }
}

/* A chain under a blocked page: the walk reaches every page below it through its parent, and
 * none of them may be listed; unblocking lists them all again. */
static void test_a_block_closes_the_subtree(void **state)
{
    (void)state;
    authz_model_t *m;
    char op[160];
    unsigned found = 0;
    assert_int_equal(authz_model_new(&m, NULL), 0);
    apply_ok(m, SCHEMA);
    apply_ok(m, "{\"op\":\"write_tuples\",\"writes\":[\"space:s0#member@user:u0\","
                "\"page:p0#space@space:s0\"]}");
    for (int p = 1; p < NP; p++) {
        snprintf(op, sizeof op,
                 "{\"op\":\"write_tuples\",\"writes\":[\"page:p%d#parent@page:p%d\"]}", p, p - 1);
        apply_ok(m, op);
    }
    assert_int_equal(
        authz_rebac_lookup_resources(m, "user:u0", "page", "view", collect, &found, NULL, NULL), 0);
    assert_int_equal(found, (1u << NP) - 1);
    apply_ok(m, "{\"op\":\"write_tuples\",\"writes\":[\"page:p4#blocked@user:u0\"]}");
    found = 0;
    assert_int_equal(
        authz_rebac_lookup_resources(m, "user:u0", "page", "view", collect, &found, NULL, NULL), 0);
    assert_int_equal(found, 0xfu);
    /* a second way in below the block opens only what lies under it */
    apply_ok(m, "{\"op\":\"write_tuples\",\"writes\":[\"page:p8#space@space:s0\"]}");
    found = 0;
    assert_int_equal(
        authz_rebac_lookup_resources(m, "user:u0", "page", "view", collect, &found, NULL, NULL), 0);
    assert_int_equal(found, 0xfu | (((1u << NP) - 1) & ~0xffu));
    apply_ok(m, "{\"op\":\"write_tuples\",\"deletes\":[\"page:p4#blocked@user:u0\"]}");
    found = 0;
    assert_int_equal(
        authz_rebac_lookup_resources(m, "user:u0", "page", "view", collect, &found, NULL, NULL), 0);
    assert_int_equal(found, (1u << NP) - 1);
    authz_model_free(m);
}

/* A walk that reaches more than a 32nd of a large store turns its memos dense midway: the
 * lookup must still list exactly the pages a check (a small walk down, never dense) allows,
 * under blocks, for a reader of nearly everything and for one of a single space. */
typedef struct big_found {
    unsigned char *in;
    int n, dup;
} big_found_t;

static int big_collect(void *ctx, const char *name)
{
    big_found_t *f = ctx;
    int p = atoi(name + 1);
    assert_true(name[0] == 'p' && p >= 0 && p < f->n);
    f->dup += f->in[p];
    f->in[p] = 1;
    return 0;
}

static void test_a_large_walk_turns_dense_and_agrees_with_checks(void **state)
{
    (void)state;
    enum { PAGES = 20000, BATCH = 500 };
    authz_model_t *m;
    char *op = malloc(BATCH * 64 + 64), o[32];
    unsigned char *in = calloc(PAGES, 1);
    assert_non_null(op);
    assert_non_null(in);
    rng = 77;
    assert_int_equal(authz_model_new(&m, NULL), 0);
    apply_ok(m, SCHEMA);
    apply_ok(m, "{\"op\":\"write_tuples\",\"writes\":[\"space:s0#member@group:g0#member\","
                "\"space:s1#member@user:u1\",\"space:s2#member@user:u1\","
                "\"group:g0#member@user:u0\",\"group:g0#member@user:u1\"]}");
    for (int p0 = 0; p0 < PAGES; p0 += BATCH) {
        int n = sprintf(op, "{\"op\":\"write_tuples\",\"writes\":[");
        for (int p = p0; p < p0 + BATCH; p++) {
            if (p < 30) /* ten top pages a space */
                n += sprintf(op + n, "%s\"page:p%d#space@space:s%d\"", p > p0 ? "," : "", p, p % 3);
            else /* a tree under them */
                n += sprintf(op + n, "%s\"page:p%d#parent@page:p%u\"", p > p0 ? "," : "", p,
                             rnd((unsigned)p));
            if (rnd(40) == 0) /* a block closes a subtree to u0 (or to the group: both) */
                n += sprintf(op + n, ",\"page:p%d#blocked@%s\"", p,
                             rnd(2) ? "user:u0" : "group:g0#member");
        }
        sprintf(op + n, "]}");
        apply_ok(m, op);
    }
    for (int u = 0; u < 2; u++) {
        char s[32];
        big_found_t f = {in, PAGES, 0};
        int allowed = 0;
        memset(in, 0, PAGES);
        snprintf(s, sizeof s, "user:u%d", u);
        assert_int_equal(
            authz_rebac_lookup_resources(m, s, "page", "view", big_collect, &f, NULL, NULL), 0);
        assert_int_equal(f.dup, 0);
        for (int p = 0; p < PAGES; p++) {
            bool ok;
            snprintf(o, sizeof o, "page:p%d", p);
            assert_int_equal(authz_rebac_check(m, s, "view", o, &ok, NULL, NULL), 0);
            if (ok != in[p])
                fail_msg("%s view %s: check %d, lookup %d", s, o, ok, in[p]);
            allowed += ok;
        }
        /* both read far more than a 32nd of the store, and neither reads everything */
        assert_true(allowed > PAGES / 16 && allowed < PAGES);
    }
    authz_model_free(m);
    free(op);
    free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_decide_as_the_reference),
        cmocka_unit_test(test_a_block_closes_the_subtree),
        cmocka_unit_test(test_a_large_walk_turns_dense_and_agrees_with_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
