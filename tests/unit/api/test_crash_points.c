/* test_crash_points.c: crash trials at chosen points inside a commit. A child process writes
 * (batches of chunks, ACL changes of whole batches, deletes, and a close and reopen now and
 * then, which saves the graph, codes and text checkpoints) and acknowledges each write through
 * a pipe; a test hook (base/testhook.h) kills it with SIGKILL at the n-th pass of one point:
 * after a batch's vectors are written and before they are synced, after an LMDB commit and
 * before memory is told, or while a checkpoint file is written and not yet renamed. The parent
 * then reopens the directory and checks the store against what was acknowledged (every
 * acknowledged write there, the one in flight whole or absent) and the derived indexes against
 * the store: each chunk found by its own vector through an exact scan and through the graph,
 * by its own token through the text index, and the readable count of every principal right.
 * CORDON_CRASH_TRIALS (default 4) sets the trials per point. Relies on fork/kill, cmocka, the
 * public API, base/testhook.h and api_testutil.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_testutil.h"
#include "crash_testutil.h"

#define DIM 8
#define PER 12       /* chunks a batch */
#define MAX_BATCH 64 /* a child that was not killed by then stops (no trial) */
#define NDEL 4       /* chunks a delete removes from the front of a batch */

enum { ACK_PUT = 1, ACK_ACL = 2, ACK_DEL = 3 };

typedef struct ack {
    uint32_t kind, batch, tag;
} ack_t;

static void chunk_vec(uint32_t b, int i, float *v)
{
    uint64_t s = (uint64_t)b * 1000003u + (uint64_t)i * 7919u + 17u;
    for (int d = 0; d < DIM; d++)
        v[d] = tu_randf(&s);
}

static void group_name(uint32_t b, uint32_t tag, char *out, size_t cap)
{
    if (tag)
        snprintf(out, cap, "group:moved%u", tag);
    else
        snprintf(out, cap, "group:g%u", b % 3);
}

static int put_batch(cordon_t *db, uint32_t b)
{
    char ids[PER][24], text[PER][64], grp[32];
    float v[PER][DIM];
    cordon_field f[PER];
    cordon_chunk c[PER];
    const char *allowed[1] = {grp};
    group_name(b, 0, grp, sizeof grp);
    for (int i = 0; i < PER; i++) {
        snprintf(ids[i], sizeof ids[i], "b%u-%d", b, i);
        snprintf(text[i], sizeof text[i], "tok%ux%d common words", b, i);
        chunk_vec(b, i, v[i]);
        f[i] = (cordon_field){"body", text[i]};
        c[i] = (cordon_chunk){.id = ids[i],
                              .vector = v[i],
                              .fields = &f[i],
                              .n_fields = 1,
                              .allowed = allowed,
                              .n_allowed = 1};
    }
    return cordon_put(db, "crash", c, PER, NULL, NULL);
}

static int acl_batch(cordon_t *db, uint32_t b, uint32_t tag)
{
    char ids[PER][24], grp[32];
    const char *allowed[1] = {grp};
    cordon_acl_change ch[PER];
    size_t n = 0;
    group_name(b, tag, grp, sizeof grp);
    for (int i = NDEL; i < PER; i++) { /* the chunks no delete touches */
        snprintf(ids[n], sizeof ids[n], "b%u-%d", b, i);
        ch[n] = (cordon_acl_change){ids[n], allowed, 1, NULL, 0, NULL, 0};
        n++;
    }
    return cordon_set_acl(db, "crash", ch, n, NULL, NULL);
}

static int del_batch(cordon_t *db, uint32_t b)
{
    char ids[NDEL][24];
    const char *p[NDEL];
    for (int i = 0; i < NDEL; i++) {
        snprintf(ids[i], sizeof ids[i], "b%u-%d", b, i);
        p[i] = ids[i];
    }
    return cordon_delete(db, "crash", p, NDEL, NULL, NULL, NULL);
}

static void send_ack(int fd, uint32_t kind, uint32_t b, uint32_t tag)
{
    ack_t a = {kind, b, tag};
    if (write(fd, &a, sizeof a) != sizeof a)
        _exit(5);
}

/* The child: writes until the hook kills it at the target-th pass of point (or MAX_BATCH
 * batches, then exits 0). */
static void child_main(const char *dir, int fd, cdn_hook_point_t point, long target)
{
    cordon_t *db;
    cdn_hook_kill_after(point, target);
    if (cordon_open(dir, NULL, &db, NULL))
        _exit(3);
    for (uint32_t b = 0; b < MAX_BATCH; b++) {
        if (put_batch(db, b))
            _exit(4);
        send_ack(fd, ACK_PUT, b, 0);
        if (b >= 1 && b % 3 == 1) {
            if (acl_batch(db, b - 1, b))
                _exit(4);
            send_ack(fd, ACK_ACL, b - 1, b);
        }
        if (b >= 2 && b % 4 == 2) {
            if (del_batch(db, b - 2))
                _exit(4);
            send_ack(fd, ACK_DEL, b - 2, 0);
        }
        if (b % 5 == 4) { /* a close saves the checkpoints; the reopen loads them */
            cordon_close(db);
            if (cordon_open(dir, NULL, &db, NULL))
                _exit(3);
        }
    }
    cordon_close(db);
    _exit(0);
}

/* What the acknowledgements say, batch by batch. */
typedef struct expect {
    int put, deleted;
    uint32_t tag; /* the last acknowledged ACL change's tag, 0 for none */
} expect_t;

/* The next write the child would have made after the last acknowledgement (the one in flight
 * when it died), so its effect may be there whole or not at all. */
static ack_t in_flight(const ack_t *last, int any)
{
    ack_t n = {ACK_PUT, 0, 0};
    if (!any)
        return n;
    uint32_t b = last->kind == ACK_PUT   ? last->batch
                 : last->kind == ACK_ACL ? last->batch + 1
                                         : last->batch + 2;
    if (last->kind == ACK_PUT && b >= 1 && b % 3 == 1)
        return (ack_t){ACK_ACL, b - 1, b};
    if (last->kind != ACK_DEL && b >= 2 && b % 4 == 2)
        return (ack_t){ACK_DEL, b - 2, 0};
    return (ack_t){ACK_PUT, b + 1, 0};
}

static int get_stored(cordon_t *db, uint32_t b, int i, char *acl, size_t cap)
{
    char id[24];
    cordon_record *r = NULL;
    snprintf(id, sizeof id, "b%u-%d", b, i);
    int rc = cordon_read_stored(db, "crash", id, &r, NULL);
    if (rc == CORDON_OK)
        snprintf(acl, cap, "%s", r->n_allowed ? r->allowed[0] : "");
    cordon_record_free(r);
    return rc == CORDON_OK;
}

/* The store and the derived indexes agree on chunk (b, i), readable by principal acl. */
static void check_indexes(cordon_t *db, uint32_t b, int i, const char *acl, int graph)
{
    char id[24], tok[40];
    float v[DIM];
    const char *p[1] = {acl};
    cordon_subject who = {.principals = p, .n_principals = 1};
    cordon_result *r = NULL;
    snprintf(id, sizeof id, "b%u-%d", b, i);
    snprintf(tok, sizeof tok, "tok%ux%d", b, i);
    chunk_vec(b, i, v);
    for (int pass = 0; pass < (graph ? 2 : 1); pass++) {
        cordon_query q = {.vector = v,
                          .k = 1,
                          .strategy = pass ? CORDON_STRATEGY_PREFILTER : CORDON_STRATEGY_EXACT};
        assert_int_equal(cordon_search(db, "crash", &who, &q, &r, NULL), 0);
        if (r->n_hits != 1 || strcmp(r->hits[0].id, id))
            fail_msg("%s not found by its own vector (%s) as %s", id, pass ? "graph" : "exact",
                     acl);
        cordon_result_free(r);
    }
    cordon_query t = {.text = tok, .k = 5};
    assert_int_equal(cordon_search(db, "crash", &who, &t, &r, NULL), 0);
    if (r->n_hits != 1 || strcmp(r->hits[0].id, id))
        fail_msg("%s not found by its token in the text index as %s (%zu hits)", id, acl,
                 r->n_hits);
    cordon_result_free(r);
}

static uint64_t readable_as(cordon_t *db, const char *acl)
{
    const char *p[1] = {acl};
    cordon_subject who = {.principals = p, .n_principals = 1};
    cordon_query q = {.text = "common", .k = 1};
    cordon_result *r = NULL;
    assert_int_equal(cordon_search(db, "crash", &who, &q, &r, NULL), 0);
    uint64_t n = r->readable;
    cordon_result_free(r);
    return n;
}

/* Reopens dir and checks it against the acknowledgements acks[0..n). */
static void verify(const char *dir, const ack_t *acks, size_t n, cdn_hook_point_t point)
{
    expect_t ex[MAX_BATCH + 2] = {{0}};
    uint32_t top = 0;
    for (size_t k = 0; k < n; k++) {
        const ack_t *a = &acks[k];
        if (a->kind == ACK_PUT)
            ex[a->batch].put = 1, top = a->batch + 1;
        else if (a->kind == ACK_ACL)
            ex[a->batch].tag = a->tag;
        else
            ex[a->batch].deleted = 1;
    }
    ack_t fl = in_flight(n ? &acks[n - 1] : NULL, n > 0);
    cordon_t *db;
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    /* The in-flight write: whole or absent, never in part. */
    if (fl.kind == ACK_PUT && fl.batch < MAX_BATCH) {
        char acl[64];
        int there = 0;
        for (int i = 0; i < PER; i++)
            there += get_stored(db, fl.batch, i, acl, sizeof acl);
        if (there != 0 && there != PER)
            fail_msg("point %d: batch %u in flight is there in part (%d of %d)", point, fl.batch,
                     there, PER);
        if (there == PER)
            ex[fl.batch].put = 1, top = fl.batch + 1;
    }
    uint64_t counts[3 + MAX_BATCH + 1] = {0}; /* readable by g0..g2, then by moved<tag> */
    for (uint32_t b = 0; b < top; b++) {
        if (!ex[b].put)
            fail_msg("point %d: acknowledged batch %u is missing", point, b);
        int fl_acl = fl.kind == ACK_ACL && fl.batch == b;
        int fl_del = fl.kind == ACK_DEL && fl.batch == b;
        int deleted_seen = -1, acl_seen = -1;
        for (int i = 0; i < PER; i++) {
            char acl[64], want_old[32], want_new[32];
            int there = get_stored(db, b, i, acl, sizeof acl);
            if (i < NDEL) {
                int gone = !there;
                if (ex[b].deleted && !gone)
                    fail_msg("point %d: acknowledged delete of b%u-%d undone", point, b, i);
                if (!ex[b].deleted && gone && !fl_del)
                    fail_msg("point %d: b%u-%d vanished", point, b, i);
                if (fl_del) {
                    if (deleted_seen >= 0 && deleted_seen != gone)
                        fail_msg("point %d: the delete in flight applied in part", point);
                    deleted_seen = gone;
                }
                if (!there)
                    continue;
                group_name(b, 0, want_old, sizeof want_old);
                if (strcmp(acl, want_old))
                    fail_msg("point %d: b%u-%d has ACL %s, not %s", point, b, i, acl, want_old);
            } else {
                if (!there)
                    fail_msg("point %d: b%u-%d is missing", point, b, i);
                group_name(b, ex[b].tag, want_old, sizeof want_old);
                group_name(b, fl.tag, want_new, sizeof want_new);
                int is_new = fl_acl && !strcmp(acl, want_new);
                if (strcmp(acl, want_old) && !is_new)
                    fail_msg("point %d: b%u-%d has ACL %s, not %s", point, b, i, acl, want_old);
                if (fl_acl) {
                    if (acl_seen >= 0 && acl_seen != is_new)
                        fail_msg("point %d: the ACL change in flight applied in part", point);
                    acl_seen = is_new;
                }
            }
            if (!strncmp(acl, "group:g", 7))
                counts[acl[7] - '0']++;
            else
                counts[3 + (size_t)atoi(acl + 11)]++;
            check_indexes(db, b, i, acl, i % 5 == 0);
        }
    }
    for (int g = 0; g < 3; g++) {
        char name[24];
        snprintf(name, sizeof name, "group:g%d", g);
        assert_int_equal(readable_as(db, name), counts[g]);
    }
    for (uint32_t t = 1; t <= MAX_BATCH; t++)
        if (counts[3 + t]) {
            char name[24];
            snprintf(name, sizeof name, "group:moved%u", t);
            assert_int_equal(readable_as(db, name), counts[3 + t]);
        }
    cordon_close(db);
}

/* One trial: a fresh directory, a child killed at the target-th pass of point. 1 when the
 * child was killed (a trial), 0 when it finished first. */
static int trial(cdn_hook_point_t point, long target)
{
    char dir[64];
    cordon_t *db;
    const char *tf[] = {"body"};
    cordon_collection_spec spec = {.asserted_principals = 1,
                                   .name = "crash",
                                   .dim = DIM,
                                   .metric = CORDON_METRIC_L2,
                                   .text_fields = tf,
                                   .n_text_fields = 1};
    api_db_open(dir, sizeof dir, &db);
    assert_int_equal(cordon_collection_create(db, &spec, NULL), 0);
    cordon_close(db);
    static ack_t acks[MAX_BATCH * 3];
    size_t n;
    int killed = crash_child_run(dir, child_main, point, target, acks, sizeof *acks,
                                 sizeof acks / sizeof *acks, &n);
    verify(dir, acks, n, point);
    tu_rmrf(dir);
    return killed;
}

static void test_kill_at_points_inside_a_commit(void **state)
{
    (void)state;
    static const cdn_hook_point_t points[] = {CDN_HOOK_VECTORS_UNSYNCED, CDN_HOOK_COMMITTED,
                                              CDN_HOOK_FILE_WRITTEN};
    static const char *const names[] = {"vectors written, not synced", "committed, memory not told",
                                        "checkpoint written"};
    const char *env = getenv("CORDON_CRASH_TRIALS");
    long per = env ? strtol(env, NULL, 10) : 4;
    uint64_t s = 99;
    if (per < 1)
        per = 4;
    for (int p = 0; p < 3; p++) {
        long killed = 0;
        for (long t = 0; t < per; t++) {
            /* passes per batch: about 1 (vectors), 1.6 (commits), 0.6 (checkpoint files) */
            long target = 1 + (long)(tu_rand(&s) % (p == 2 ? 24 : 60));
            killed += trial(points[p], target);
        }
        printf("crash points: %s: %ld trials, %ld killed there, 0 acknowledged writes lost\n",
               names[p], per, killed);
        assert_true(killed > 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_at_points_inside_a_commit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
