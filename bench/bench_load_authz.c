/* bench_load_authz.c: the authorization rows of `cordon bench load`: the large catalog of
 * `cordon bench authz` (10,000 users, 1,000 nested groups, 500 roles) goes into the server
 * through /_cordon/model, then each user, a different subject of the catalog, asks
 * POST /api/auth/is-authorized (target authz) or its batch form (authz-batch) for its five
 * checks in turn, and every decision is checked against the reason it must give: an allow
 * that should have been a deny counts as a leak, any other wrong answer as an error. Relies on
 * bench_catalog, bench_load_users.c and jansson. */
#include "bench_catalog.h"
#include "bench_load_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPS_PER_REQUEST 2000

typedef struct ops_buf {
    load_run_t *r;
    bench_http_t *admin;
    cdn_buf_t b;
    size_t n;
} ops_buf_t;

static int ops_send(ops_buf_t *o)
{
    if (!o->n)
        return 0;
    int rc = cdn_buf_puts(&o->b, "]}");
    json_t *j = rc ? NULL : load_admin(&o->r->srv, o->admin, "POST", "/_cordon/model", o->b.data);
    json_decref(j);
    o->b.len = 0; /* the next operation starts a new request in the same buffer */
    o->n = 0;
    return j ? 0 : -1;
}

static int ops_add(void *arg, const char *op_json)
{
    ops_buf_t *o = arg;
    int rc = cdn_buf_puts(&o->b, o->n ? "," : "{\"ops\":[");
    rc = rc ? rc : cdn_buf_puts(&o->b, op_json);
    if (rc)
        return -1;
    return ++o->n == OPS_PER_REQUEST ? ops_send(o) : 0;
}

/* One check as the body of is-authorized, or as an item of a batch (no subject). */
static int put_check(cdn_buf_t *b, const bench_check_t *k, int with_subject)
{
    int rc =
        with_subject ? cdn_buf_printf(b, "{\"subject\":\"%s\",", k->subject) : cdn_buf_puts(b, "{");
    return rc ? rc
              : cdn_buf_printf(b,
                               "\"permission\":{\"resource\":\"%s\",\"action\":\"%s\"},"
                               "\"context\":{\"amount\":%d}}",
                               k->resource, k->action, k->amount);
}

/* The catalog's user for benchmark user i: spread over the 10,000. */
static int user_of(size_t i)
{
    return (int)((i * 313 + 1) % BENCH_CATALOG_LARGE_USERS);
}

/* One decision (its authorized and reason) against check c. */
static int check_decision(load_user_t *u, int allowed, const char *reason, size_t reason_len, int c)
{
    int want_allow = c < 2;
    u->checked++;
    if (allowed && !want_allow) {
        if (u->leaks++ == 0)
            fprintf(stderr, "cordon bench load: LEAK: authz user %d allowed %s\n", u->idx,
                    bench_check_names[c]);
        return 0;
    }
    if (!reason || reason_len != strlen(bench_check_reasons[c]) ||
        memcmp(reason, bench_check_reasons[c], reason_len) || allowed != want_allow) {
        fprintf(stderr, "cordon bench load: authz user %d, %s: %.*s, expected %s\n", u->idx,
                bench_check_names[c], reason ? (int)reason_len : 11,
                reason ? reason : "(no reason)", bench_check_reasons[c]);
        return -1;
    }
    return 0;
}

/* Body b of a single-check phase is check b % 5 of its user. */
static int check_single(load_user_t *u, size_t b, const bench_http_resp_t *resp)
{
    json_t *j = json_loadb(resp->body, resp->body_len, 0, NULL);
    json_t *d = json_object_get(j, "data"), *r = json_object_get(d, "reason");
    int rc = json_is_object(d) ? check_decision(u, json_is_true(json_object_get(d, "authorized")),
                                                json_string_value(r), json_string_length(r),
                                                (int)(b % BENCH_CATALOG_CHECKS))
                               : -1;
    json_decref(j);
    return rc;
}

/* A batch's item i is check i % 5. Its thousand results are read by a scan of the answer for
 * each result's opening, {"authorized": true|false, "reason": "..." (the order the server
 * writes them in), not by a JSON tree: on this 2-core machine the load generator's own parsing
 * takes the server's CPU. Any other shape is an error. */
static int check_batch(load_user_t *u, size_t b, const bench_http_resp_t *resp)
{
    static const char open[] = "{\"authorized\":", rkey[] = ",\"reason\":\"";
    const char *p = resp->body, *end = resp->body + resp->body_len;
    size_t i = 0;
    (void)b;
    while ((p = memmem(p, (size_t)(end - p), open, sizeof open - 1)) != NULL) {
        p += sizeof open - 1;
        int allowed = end - p >= 4 && !memcmp(p, "true", 4);
        if (!allowed && !(end - p >= 5 && !memcmp(p, "false", 5)))
            return -1;
        p += allowed ? 4 : 5;
        if ((size_t)(end - p) < sizeof rkey - 1 || memcmp(p, rkey, sizeof rkey - 1))
            return -1;
        p += sizeof rkey - 1;
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q || check_decision(u, allowed, p, (size_t)(q - p), (int)(i % BENCH_CATALOG_CHECKS)))
            return -1;
        i++;
        p = q;
    }
    return i == u->ph->r->o.authz_batch ? 0 : -1;
}

/* The bodies of every user (LOAD_MAX_USERS): five single checks, or one batch. */
static char **authz_bodies(const load_run_t *r, int batch, size_t *n)
{
    size_t per = batch ? 1 : BENCH_CATALOG_CHECKS;
    char **bodies = calloc(LOAD_MAX_USERS * per, sizeof *bodies);
    *n = LOAD_MAX_USERS * per;
    for (size_t i = 0; bodies && i < LOAD_MAX_USERS; i++) {
        bench_check_t k[BENCH_CATALOG_CHECKS];
        bench_catalog_user_checks(user_of(i), k);
        for (size_t c = 0; c < per; c++) {
            cdn_buf_t b;
            int rc = 0;
            cdn_buf_init(&b, 1 << 24);
            if (batch) {
                rc = cdn_buf_printf(&b, "{\"subject\":\"%s\",\"checks\":[", k[0].subject);
                for (size_t x = 0; !rc && x < r->o.authz_batch; x++)
                    rc = (x ? cdn_buf_puts(&b, ",") : 0) ||
                         put_check(&b, &k[x % BENCH_CATALOG_CHECKS], 0);
                rc = rc ? rc : cdn_buf_puts(&b, "]}");
            } else {
                rc = put_check(&b, &k[c], 1);
            }
            if (rc) {
                cdn_buf_free(&b);
                load_bodies_free(bodies, *n);
                return NULL;
            }
            bodies[i * per + c] = b.data;
        }
    }
    return bodies;
}

static int load_catalog(load_run_t *r, bench_http_t *admin)
{
    ops_buf_t o = {.r = r, .admin = admin};
    bench_catalog_t c = {.name = "large", .op = ops_add, .arg = &o};
    double t0 = load_now_s();
    cdn_buf_init(&o.b, 1 << 26);
    int rc = bench_catalog_build(&c, 1) || ops_send(&o) ? -1 : 0;
    cdn_buf_free(&o.b);
    if (!rc && !r->o.json)
        printf("# the large catalog (%ld model operations: %d users, 1,000 nested groups, 500 "
               "roles, %ld permissions) loaded through /_cordon/model in %.1f s\n",
               c.ops, BENCH_CATALOG_LARGE_USERS, c.perms, load_now_s() - t0);
    return rc;
}

int load_authz_rows(load_run_t *r, bench_http_t *admin)
{
    int rc = load_catalog(r, admin);
    for (int batch = 0; !rc && batch < 2; batch++) {
        if (!(r->o.targets & (batch ? LOAD_T_AUTHZ_BATCH : LOAD_T_AUTHZ)))
            continue;
        load_phase_t ph = {.r = r,
                           .target = batch ? "authz-batch" : "authz",
                           .method = "POST",
                           .per_user = batch ? 1 : BENCH_CATALOG_CHECKS,
                           .per_request = batch ? r->o.authz_batch : 1,
                           .check = batch ? check_batch : check_single,
                           .key_full = -1}; /* the admin key, naming each user's subject */
        snprintf(ph.path, sizeof ph.path, "/api/auth/is-authorized%s", batch ? "/batch" : "");
        if (!(ph.bodies = authz_bodies(r, batch, &ph.nbodies)))
            return -1;
        load_row_t row;
        ph.users = 2; /* warm-up, not reported */
        ph.seconds = r->o.seconds < 2 ? r->o.seconds : 2;
        rc = load_run_users(&ph, &row);
        r->warmup_leaks += row.leaks;
        r->warmup_errors += row.errors;
        for (size_t k = 0; !rc && k < r->o.n_users; k++) {
            ph.users = r->o.users[k];
            ph.seconds = r->o.seconds;
            if ((rc = load_run_users(&ph, &row)) == 0)
                load_row_add(r, &row);
            if (!r->o.json)
                fprintf(stderr, "  %s, %zu users: %.0f checks/s\n", ph.target, ph.users, row.rate);
        }
        load_bodies_free(ph.bodies, ph.nbodies);
    }
    return rc;
}
