/* test_crash_model.c: crash trials at chosen points inside a permission-model write. A child
 * process changes the model (batches that create a subject, put it in a group and grant it
 * search on a collection; single ops that take an earlier subject out of its group; a close
 * and reopen now and then, which replays the log) and acknowledges each change with its
 * revision through a pipe; a test hook (base/testhook.h) kills it with SIGKILL at the n-th
 * pass of one point: after the change is installed in memory and before anything of it is
 * stored, or after it is committed and before it is acknowledged. The parent reopens the
 * directory and checks the model against the acknowledgements (every acknowledged change
 * there, the one in flight whole or absent, never in part: a batch's three ops together), and
 * the permission history against them too: at each acknowledged revision, as of that
 * revision, the subject's decision and view are what the change made them.
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

#define STEPS 80  /* a child that was not killed by then stops (no trial) */
#define GROUPS 3  /* subject s<i> joins group g<i % GROUPS> */
#define LEAVE 4   /* after every LEAVE-th step, subject s<i - 2> leaves its group */
#define REOPEN 10 /* a close and reopen after every REOPEN-th step */

enum { ACK_JOIN = 1, ACK_LEAVE = 2 };

typedef struct ack {
    uint32_t kind, subject;
    uint64_t revision;
} ack_t;

static void send_ack(int fd, uint32_t kind, uint32_t subject, uint64_t rev)
{
    ack_t a = {kind, subject, rev};
    if (write(fd, &a, sizeof a) != sizeof a)
        _exit(5);
}

static int join(cordon_t *db, uint32_t i, uint64_t *rev)
{
    char ops[512];
    snprintf(ops, sizeof ops,
             "[{\"op\":\"put_subject\",\"id\":\"s%u\"},"
             "{\"op\":\"add_member\",\"group\":\"g%u\",\"member\":\"s%u\"},"
             "{\"op\":\"grant\",\"to\":\"s%u\",\"permission\":{\"resource\":\"collection:crash\","
             "\"action\":\"search\"}}]",
             i, i % GROUPS, i, i);
    return cordon_model_apply_batch(db, ops, rev, NULL);
}

static int leave(cordon_t *db, uint32_t i, uint64_t *rev)
{
    char op[160];
    snprintf(op, sizeof op, "{\"op\":\"remove_member\",\"group\":\"g%u\",\"member\":\"s%u\"}",
             i % GROUPS, i);
    return cordon_model_apply(db, op, rev, NULL);
}

/* The child: changes the model until the hook kills it at the target-th pass of point (or
 * STEPS steps, then exits 0). */
static void child_main(const char *dir, int fd, cdn_hook_point_t point, long target)
{
    cordon_t *db;
    uint64_t rev;
    cdn_hook_kill_after(point, target);
    if (cordon_open(dir, NULL, &db, NULL))
        _exit(3);
    for (uint32_t i = 0; i < STEPS; i++) {
        if (join(db, i, &rev))
            _exit(4);
        send_ack(fd, ACK_JOIN, i, rev);
        if (i >= 2 && i % LEAVE == 0) {
            if (leave(db, i - 2, &rev))
                _exit(4);
            send_ack(fd, ACK_LEAVE, i - 2, rev);
        }
        if (i % REOPEN == REOPEN - 1) { /* the reopen replays the log */
            cordon_close(db);
            if (cordon_open(dir, NULL, &db, NULL))
                _exit(3);
        }
    }
    cordon_close(db);
    _exit(0);
}

/* The change the child would have made after the last acknowledgement: in flight when it
 * died, so there whole or not at all. */
static ack_t in_flight(const ack_t *last)
{
    if (!last)
        return (ack_t){ACK_JOIN, 0, 0};
    uint32_t i = last->kind == ACK_JOIN ? last->subject : last->subject + 2;
    if (last->kind == ACK_JOIN && i >= 2 && i % LEAVE == 0)
        return (ack_t){ACK_LEAVE, i - 2, 0};
    return (ack_t){ACK_JOIN, i + 1, 0};
}

/* What the model says of s<i> now or as of rev (0: now): whether it exists, whether it is in
 * its group, whether it may search. */
typedef struct seen {
    int exists, member, may_search;
} seen_t;

static seen_t look(cordon_t *db, uint32_t i, uint64_t rev)
{
    char id[16], group[16];
    seen_t s = {0, 0, 0};
    snprintf(id, sizeof id, "s%u", i);
    snprintf(group, sizeof group, "group:g%u", i % GROUPS);
    cordon_authz_request req = {.subject = id,
                                .resource = "collection:crash",
                                .action = "search",
                                .no_audit = 1,
                                .as_of_revision = rev};
    cordon_decision d;
    cordon_error err;
    int rc = cordon_is_authorized(db, &req, &d, &err);
    if (rc)
        fail_msg("is-authorized for %s as of %llu: %s", id, (unsigned long long)rev, err.message);
    s.exists = strcmp(d.reason, "SUBJECT_NOT_FOUND") != 0;
    s.may_search = d.authorized;
    if (!rev && s.exists) {
        char **p = NULL;
        size_t n = 0;
        assert_int_equal(cordon_view(db, id, &p, &n, NULL, NULL), 0);
        for (size_t k = 0; k < n; k++)
            s.member |= !strcmp(p[k], group);
        cordon_strings_free(p, n);
    }
    return s;
}

/* Reopens dir and checks the model and its history against acks[0..n). */
static void verify(const char *dir, const ack_t *acks, size_t n, cdn_hook_point_t point)
{
    int joined[STEPS + 1] = {0}, left[STEPS + 1] = {0};
    uint32_t top = 0;
    for (size_t k = 0; k < n; k++) {
        if (acks[k].kind == ACK_JOIN)
            joined[acks[k].subject] = 1, top = acks[k].subject + 1;
        else
            left[acks[k].subject] = 1;
    }
    ack_t fl = in_flight(n ? &acks[n - 1] : NULL);
    cordon_t *db;
    assert_int_equal(cordon_open(dir, NULL, &db, NULL), 0);
    if (fl.kind == ACK_JOIN && fl.subject < STEPS) { /* the batch in flight: whole or absent */
        seen_t s = look(db, fl.subject, 0);
        if (s.exists != s.member || s.exists != s.may_search)
            fail_msg("point %d: the batch in flight for s%u applied in part (exists %d, member "
                     "%d, may search %d)",
                     point, fl.subject, s.exists, s.member, s.may_search);
        if (s.exists)
            joined[fl.subject] = 1, top = fl.subject + 1;
    }
    for (uint32_t i = 0; i < top; i++) {
        seen_t s = look(db, i, 0);
        if (!joined[i] || !s.exists || !s.may_search)
            fail_msg("point %d: acknowledged subject s%u is missing or may not search", point, i);
        int fl_leave = fl.kind == ACK_LEAVE && fl.subject == i;
        if (left[i] && s.member)
            fail_msg("point %d: s%u's acknowledged leave is undone", point, i);
        if (!left[i] && !s.member && !fl_leave)
            fail_msg("point %d: s%u left its group without a leave", point, i);
    }
    /* As of each acknowledged revision, the change it made. */
    for (size_t k = 0; k < n; k++) {
        seen_t s = look(db, acks[k].subject, acks[k].revision);
        if (!s.exists || !s.may_search)
            fail_msg("point %d: as of revision %llu, s%u is not what its acknowledged change "
                     "made it",
                     point, (unsigned long long)acks[k].revision, acks[k].subject);
        if (acks[k].kind == ACK_JOIN && acks[k].revision > 1) {
            seen_t before = look(db, acks[k].subject, acks[k].revision - 1);
            if (before.exists)
                fail_msg("point %d: s%u exists before the revision that created it", point,
                         acks[k].subject);
        }
    }
    cordon_close(db);
}

/* One trial: a fresh directory, a child killed at the target-th pass of point. 1 when the
 * child was killed (a trial), 0 when it finished first. */
static int trial(cdn_hook_point_t point, long target)
{
    char dir[64];
    cordon_t *db;
    cordon_collection_spec spec = {.name = "crash", .dim = 4, .metric = CORDON_METRIC_L2};
    api_db_open(dir, sizeof dir, &db);
    assert_int_equal(cordon_collection_create(db, &spec, NULL), 0);
    for (int g = 0; g < GROUPS; g++) {
        char op[64];
        snprintf(op, sizeof op, "{\"op\":\"put_group\",\"id\":\"g%d\"}", g);
        assert_int_equal(cordon_model_apply(db, op, NULL, NULL), 0);
    }
    cordon_close(db);
    static ack_t acks[STEPS * 2];
    size_t n;
    int killed = crash_child_run(dir, child_main, point, target, acks, sizeof *acks,
                                 sizeof acks / sizeof *acks, &n);
    verify(dir, acks, n, point);
    tu_rmrf(dir);
    return killed;
}

static void test_kill_at_points_inside_a_model_write(void **state)
{
    (void)state;
    static const cdn_hook_point_t points[] = {CDN_HOOK_MODEL_APPLIED, CDN_HOOK_MODEL_STORED};
    static const char *const names[] = {"model changed in memory, not stored",
                                        "model change stored, not acknowledged"};
    const char *env = getenv("CORDON_CRASH_TRIALS");
    long per = env ? strtol(env, NULL, 10) : 4;
    uint64_t s = 77;
    if (per < 1)
        per = 4;
    for (int p = 0; p < 2; p++) {
        long killed = 0;
        for (long t = 0; t < per; t++) /* about 1.25 model writes a step */
            killed += trial(points[p], 1 + (long)(tu_rand(&s) % 90));
        printf("crash points: %s: %ld trials, %ld killed there, 0 acknowledged changes lost\n",
               names[p], per, killed);
        assert_true(killed > 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_at_points_inside_a_model_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
