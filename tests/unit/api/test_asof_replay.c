/* test_asof_replay.c: every as-of answer agrees with an independent replay of the change log.
 * A writer makes CORDON_ASOF_CHANGES (default 5,000) random changes, each its own revision:
 * users moved in and out of groups, the role that lets a user read granted and revoked, chunk
 * ACLs replaced (allowed groups and users, denies), chunks deleted and put back. The test logs
 * each change with its revision. Then thousands of random questions (a user, a chunk, a past
 * revision or a past moment) go to cordon_asof_check, and each answer is compared with the
 * state the test rebuilds by replaying its own log from the start up to that revision: no
 * shared code, no state kept by revision. Also the same after pruning the history's first
 * half. Relies on cmocka and the public API. */
/* cmocka.h needs these four first. */
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
#include <time.h>

#include "api_testutil.h"

#define NU 24 /* users u0.. */
#define NG 8  /* groups g0.. */
#define NC 120

enum { CH_JOIN, CH_LEAVE, CH_GRANT, CH_REVOKE, CH_ACL, CH_DELETE };

typedef struct change {
    uint64_t rev, time_us;    /* time_us: a moment after it, before the next */
    uint8_t kind, a, b;       /* user, group or chunk by kind */
    uint16_t allow_g, deny_g; /* group masks of an ACL */
    uint32_t allow_u;         /* user mask of an ACL */
} change_t;

typedef struct world {
    uint8_t member[NU];
    uint32_t reader; /* bit u: holds the role */
    uint8_t live[NC];
    uint16_t allow_g[NC], deny_g[NC];
    uint32_t allow_u[NC];
} world_t;

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void apply_change(world_t *w, const change_t *c)
{
    switch (c->kind) {
    case CH_JOIN: w->member[c->a] |= (uint8_t)(1u << c->b); break;
    case CH_LEAVE: w->member[c->a] &= (uint8_t) ~(1u << c->b); break;
    case CH_GRANT: w->reader |= 1u << c->a; break;
    case CH_REVOKE: w->reader &= ~(1u << c->a); break;
    case CH_ACL:
        w->live[c->a] = 1;
        w->allow_g[c->a] = c->allow_g;
        w->deny_g[c->a] = c->deny_g;
        w->allow_u[c->a] = c->allow_u;
        break;
    case CH_DELETE: w->live[c->a] = 0; break;
    }
}

/* The oracle: the log replayed from nothing up to revision rev. */
static int readable_at(const change_t *log, size_t n, uint64_t rev, int u, int c)
{
    world_t w;
    memset(&w, 0, sizeof w);
    for (size_t i = 0; i < n && log[i].rev <= rev; i++)
        apply_change(&w, &log[i]);
    return w.live[c] && (w.reader >> u & 1) &&
           ((w.allow_g[c] & w.member[u]) || (w.allow_u[c] >> u & 1)) &&
           !(w.deny_g[c] & w.member[u]);
}

static uint64_t model_op(cordon_t *db, const char *json)
{
    cordon_error err;
    uint64_t rev = 0;
    if (cordon_model_apply(db, json, &rev, &err))
        fail_msg("%s: %s", json, err.message);
    return rev;
}

/* Makes change c in the engine; its revision goes in c->rev. */
static void make_change(cordon_t *db, change_t *c)
{
    char json[200], id[8];
    cordon_error err;
    switch (c->kind) {
    case CH_JOIN:
    case CH_LEAVE:
        snprintf(json, sizeof json, "{\"op\":\"%s\",\"group\":\"g%d\",\"member\":\"u%d\"}",
                 c->kind == CH_JOIN ? "add_member" : "remove_member", c->b, c->a);
        c->rev = model_op(db, json);
        break;
    case CH_GRANT:
    case CH_REVOKE:
        snprintf(json, sizeof json, "{\"op\":\"%s\",\"to\":\"u%d\",\"role\":\"reader\"}",
                 c->kind == CH_GRANT ? "grant" : "revoke", c->a);
        c->rev = model_op(db, json);
        break;
    case CH_ACL: {
        char names[2][NG + NU][12];
        const char *allow[NG + NU], *deny[NG];
        size_t na = 0, nd = 0;
        for (int g = 0; g < NG; g++) {
            if (c->allow_g >> g & 1) {
                snprintf(names[0][na], sizeof names[0][0], "group:g%d", g);
                allow[na] = names[0][na];
                na++;
            }
            if (c->deny_g >> g & 1) {
                snprintf(names[1][nd], sizeof names[1][0], "group:g%d", g);
                deny[nd] = names[1][nd];
                nd++;
            }
        }
        for (int u = 0; u < NU; u++)
            if (c->allow_u >> u & 1) {
                snprintf(names[0][na], sizeof names[0][0], "user:u%d", u);
                allow[na] = names[0][na];
                na++;
            }
        snprintf(id, sizeof id, "c%d", c->a);
        cordon_chunk ch = {
            .id = id, .allowed = allow, .n_allowed = na, .denied = deny, .n_denied = nd};
        if (cordon_put(db, "docs", &ch, 1, &c->rev, &err))
            fail_msg("put: %s", err.message);
        break;
    }
    case CH_DELETE: {
        const char *ids[1] = {id};
        snprintf(id, sizeof id, "c%d", c->a);
        if (cordon_delete(db, "docs", ids, 1, NULL, &c->rev, &err))
            fail_msg("delete: %s", err.message);
        break;
    }
    }
}

/* A random change that moves something (a leave of a group not joined changes nothing). */
static void random_change(uint64_t *s, const world_t *w, change_t *c)
{
    memset(c, 0, sizeof *c);
    for (;;) {
        int r = (int)(tu_rand(s) % 100);
        c->a = (uint8_t)(tu_rand(s) % NU);
        c->b = (uint8_t)(tu_rand(s) % NG);
        if (r < 40) {
            c->kind = w->member[c->a] >> c->b & 1 ? CH_LEAVE : CH_JOIN;
            return;
        }
        if (r < 50) {
            c->kind = w->reader >> c->a & 1 ? CH_REVOKE : CH_GRANT;
            return;
        }
        c->a = (uint8_t)(tu_rand(s) % NC);
        if (r < 92) {
            c->kind = CH_ACL;
            c->allow_g = (uint16_t)(tu_rand(s) & tu_rand(s) & 0xff);
            c->deny_g = (uint16_t)(tu_rand(s) % 4 ? 0 : 1u << (tu_rand(s) % NG));
            c->allow_u = (uint32_t)(tu_rand(s) % 3 ? 0 : 1u << (tu_rand(s) % NU));
            return;
        }
        if (w->live[c->a]) {
            c->kind = CH_DELETE;
            return;
        }
    }
}

static long ask(cordon_t *db, const change_t *log, size_t n, uint64_t lo_rev, uint64_t *s,
                int questions, long *asked)
{
    long wrong = 0;
    for (int k = 0; k < questions; k++) {
        size_t i = lo_rev ? 0 : (size_t)(tu_rand(s) % n);
        while (lo_rev && log[i].rev < lo_rev)
            i++;
        if (lo_rev)
            i += (size_t)(tu_rand(s) % (n - i));
        int u = (int)(tu_rand(s) % NU), c = (int)(tu_rand(s) % NC), by_time = k % 4 == 3;
        char user[8], id[8];
        snprintf(user, sizeof user, "u%d", u);
        snprintf(id, sizeof id, "c%d", c);
        cordon_subject who = {.subject_id = user};
        cordon_asof_request q = {.collection = "docs", .subject = &who, .chunk_id = id};
        if (by_time)
            q.time_us = log[i].time_us;
        else
            q.revision = log[i].rev;
        cordon_asof_answer a;
        cordon_error err;
        if (cordon_asof_check(db, &q, &a, &err))
            fail_msg("as-of: %s", err.message);
        if (a.revision != log[i].rev)
            fail_msg("as of %s named revision %llu, not %llu", by_time ? "a time" : "a revision",
                     (unsigned long long)a.revision, (unsigned long long)log[i].rev);
        wrong += a.readable != readable_at(log, n, log[i].rev, u, c);
        (*asked)++;
    }
    return wrong;
}

static void test_asof_agrees_with_a_replay_of_the_log(void **state)
{
    (void)state;
    const char *env = getenv("CORDON_ASOF_CHANGES");
    size_t n = env ? strtoul(env, NULL, 10) : 5000;
    if (n < 500)
        n = 500;
    char dir[64];
    cordon_t *db;
    uint64_t s = 2024;
    api_db_open(dir, sizeof dir, &db);
    cordon_collection_spec spec = {.name = "docs"};
    assert_int_equal(cordon_collection_create(db, &spec, NULL), 0);
    model_op(db, "{\"op\":\"put_role\",\"id\":\"reader\",\"permissions\":["
                 "{\"resource\":\"collection:docs\",\"action\":\"read\"}]}");
    for (int g = 0; g < NG; g++) {
        char json[64];
        snprintf(json, sizeof json, "{\"op\":\"put_group\",\"id\":\"g%d\"}", g);
        model_op(db, json);
    }
    for (int u = 0; u < NU; u++) {
        char json[64];
        snprintf(json, sizeof json, "{\"op\":\"put_subject\",\"id\":\"u%d\"}", u);
        model_op(db, json);
    }
    change_t *log = calloc(n, sizeof *log);
    world_t w;
    memset(&w, 0, sizeof w);
    for (size_t i = 0; i < n; i++) {
        random_change(&s, &w, &log[i]);
        make_change(db, &log[i]);
        apply_change(&w, &log[i]);
        log[i].time_us = now_us();
    }
    long asked = 0, wrong = ask(db, log, n, 0, &s, 3000, &asked);
    printf("as-of replay: %zu changes, %ld questions, %ld against the replay\n", n, asked, wrong);
    assert_int_equal(wrong, 0);
    /* forget the first half: the second answers as before, the first is gone */
    uint64_t start;
    assert_int_equal(cordon_history_prune(db, log[n / 2].rev, 0, &start, NULL, NULL), 0);
    api_db_reopen(dir, &db);
    wrong = ask(db, log, n, log[n / 2].rev, &s, 1000, &asked);
    assert_int_equal(wrong, 0);
    cordon_subject who = {.subject_id = "u0"};
    cordon_asof_request q = {
        .collection = "docs", .subject = &who, .chunk_id = "c0", .revision = log[n / 2 - 1].rev};
    cordon_asof_answer a;
    assert_int_equal(cordon_asof_check(db, &q, &a, NULL), CORDON_ERR_NOT_FOUND);
    free(log);
    api_db_close(dir, db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_asof_agrees_with_a_replay_of_the_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
