/* v1_model.c: the permission model over HTTP: subjects, groups and their members, roles,
 * grants (with ids: a hash of the grant as exported), the whole model as one document. Each
 * route becomes model operations (docs/internals/authz.md); every write answers the revision
 * that made it visible. Needs an admin key or manage on V1_MODEL_RESOURCE.
 * Relies on http/v1.h, OpenSSL's SHA-256 for grant ids, and the public API. */
#include "base/date.h"
#include "base/mem.h"
#include "http/es.h"
#include "http/v1.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* A JSON string's value, "" for anything else. */
static const char *jstr(json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : "";
}

static int gate(http_ctx_t *ctx, const http_req_t *req, http_resp_t *resp)
{
    if (v1_may_manage_model(ctx, req))
        return 0;
    es_error(resp, 403, "security_exception",
             "the permission model's routes need an admin key or [manage] on [%s]",
             V1_MODEL_RESOURCE);
    return -1;
}

/* 0 when body has no key but those of keys; else fills resp (400 naming the first other one:
 * a misspelt field must not be dropped in silence). */
static int only_keys(json_t *body, const char *const *keys, const char *route, http_resp_t *resp)
{
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v)
    {
        size_t i = 0;
        while (keys[i] && strcmp(keys[i], k))
            i++;
        if (!keys[i]) {
            es_error(resp, 400, "parsing_exception", "unknown field [%s] in a %s request", k,
                     route);
            return -1;
        }
    }
    (void)v;
    return 0;
}

/* Applies ops in order as one change, all or none, in one revision; answers that revision, or
 * the failing op (then nothing changed). Steals ops. */
void v1_apply_ops(http_ctx_t *ctx, json_t *ops, http_resp_t *resp, json_t *extra)
{
    uint64_t rev = cordon_revision(ctx->db);
    size_t n = json_array_size(ops);
    cordon_error err = {0};
    char *s = n ? json_dumps(n == 1 ? json_array_get(ops, 0) : ops, JSON_COMPACT) : NULL;
    int rc = !n       ? CORDON_OK
             : !s     ? CORDON_ERR_NOMEM
             : n == 1 ? cordon_model_apply(ctx->db, s, &rev, &err)
                      : cordon_model_apply_batch(ctx->db, s, &rev, &err);
    free(s);
    if (rc) {
        es_error_cordon(resp, rc, &err, NULL);
        json_decref(ops);
        json_decref(extra);
        return;
    }
    json_decref(ops);
    json_t *j = json_pack("{s:b, s:I}", "acknowledged", 1, "revision", (json_int_t)rev);
    if (j && extra)
        json_object_update(j, extra);
    json_decref(extra);
    es_reply(resp, 200, j);
}

void v1_subject_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    static const char *const keys[] = {"attributes", "kind", "tenants", NULL};
    json_t *body, *op;
    if (gate(ctx, req, resp) || !(body = es_body(ctx, req, resp, 0)))
        return;
    if (only_keys(body, keys, "subject", resp)) {
        json_decref(body);
        return;
    }
    op = json_pack("{s:s, s:s}", "op", "put_subject", "id", req->seg[2]);
    if (json_object_get(body, "attributes"))
        json_object_set(op, "attributes", json_object_get(body, "attributes"));
    if (json_object_get(body, "kind"))
        json_object_set(op, "kind", json_object_get(body, "kind"));
    if (json_object_get(body, "tenants"))
        json_object_set(op, "tenants", json_object_get(body, "tenants"));
    v1_apply_ops(ctx, json_pack("[o]", op), resp, NULL);
    json_decref(body);
}

void v1_subject_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    if (gate(ctx, req, resp))
        return;
    v1_apply_ops(ctx, json_pack("[{s:s, s:s}]", "op", "delete_subject", "id", req->seg[2]), resp,
                 NULL);
}

/* A member as the routes take it: "alice" (a subject), "group:eng", or {"id", "kind"}. */
static json_t *member_op(const char *op, const char *group, json_t *m)
{
    const char *id =
        json_is_string(m) ? json_string_value(m) : json_string_value(json_object_get(m, "id"));
    const char *kind = json_string_value(json_object_get(m, "kind"));
    if (!id)
        return NULL;
    if (!kind && !strncmp(id, "group:", 6)) {
        kind = "group";
        id += 6;
    } else if (!kind && !strncmp(id, "user:", 5)) {
        id += 5;
    }
    return json_pack("{s:s, s:s, s:s, s:s}", "op", op, "group", group, "member", id, "member_kind",
                     kind && !strcmp(kind, "group") ? "group" : "subject");
}

/* The group's direct members in an exported model, as member ops would name them. */
static json_t *current_members(http_ctx_t *ctx, const char *group)
{
    char *doc = NULL;
    json_t *m = NULL, *g, *out = json_array();
    size_t i;
    if (cordon_model_export(ctx->db, &doc, NULL) == CORDON_OK)
        m = json_loads(doc, 0, NULL);
    cordon_free(doc);
    json_array_foreach(json_object_get(m, "groups"), i, g)
    {
        if (!strcmp(jstr(json_object_get(g, "id")), group)) {
            json_decref(out);
            out = json_deep_copy(json_object_get(g, "members"));
            break;
        }
    }
    json_decref(m);
    return out ? out : json_array();
}

static int same_member(json_t *op, json_t *cur)
{
    return !strcmp(jstr(json_object_get(op, "member")),
                   json_string_value(json_object_get(cur, "id"))) &&
           !strcmp(jstr(json_object_get(op, "member_kind")),
                   json_string_value(json_object_get(cur, "kind")));
}

static int member_ops(json_t *ops, const char *op, const char *group, json_t *list,
                      http_resp_t *resp)
{
    size_t i;
    json_t *m;
    if (list && !json_is_array(list)) {
        es_error(resp, 400, "illegal_argument_exception",
                 "members must be a list of subject ids, \"group:ID\" or {\"id\", \"kind\"}");
        return -1;
    }
    json_array_foreach(list, i, m)
    {
        json_t *o = member_op(op, group, m);
        if (!o) {
            es_error(resp, 400, "illegal_argument_exception",
                     "member %zu: give a subject id, \"group:ID\" or {\"id\", \"kind\"}", i);
            return -1;
        }
        json_array_append_new(ops, o);
    }
    return 0;
}

/* PUT /v1/groups/{id} {"members": [...]}: creates the group; with members, makes them its
 * direct members (adding and removing the difference). */
void v1_group_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    static const char *const keys[] = {"members", NULL};
    const char *group = req->seg[2];
    json_t *body, *ops, *want, *cur, *o, *c;
    size_t i, j;
    if (gate(ctx, req, resp) || !(body = es_body(ctx, req, resp, 0)))
        return;
    if (only_keys(body, keys, "group", resp)) {
        json_decref(body);
        return;
    }
    ops = json_pack("[{s:s, s:s}]", "op", "put_group", "id", group);
    want = json_array();
    if (member_ops(want, "add_member", group, json_object_get(body, "members"), resp)) {
        json_decref(ops);
        json_decref(want);
        json_decref(body);
        return;
    }
    if (json_object_get(body, "members")) {
        cur = current_members(ctx, group);
        json_array_foreach(cur, i, c)
        {
            int keep = 0;
            json_array_foreach(want, j, o) keep |= same_member(o, c);
            if (!keep)
                json_array_append_new(ops,
                                      json_pack("{s:s, s:s, s:O, s:O}", "op", "remove_member",
                                                "group", group, "member", json_object_get(c, "id"),
                                                "member_kind", json_object_get(c, "kind")));
        }
        json_array_foreach(want, j, o)
        {
            int have = 0;
            json_array_foreach(cur, i, c) have |= same_member(o, c);
            if (!have)
                json_array_append(ops, o);
        }
        json_decref(cur);
    }
    json_decref(want);
    v1_apply_ops(ctx, ops, resp, NULL);
    json_decref(body);
}

void v1_group_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    if (gate(ctx, req, resp))
        return;
    v1_apply_ops(ctx, json_pack("[{s:s, s:s}]", "op", "delete_group", "id", req->seg[2]), resp,
                 NULL);
}

void v1_group_members(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    static const char *const keys[] = {"add", "remove", NULL};
    json_t *body, *ops = json_array();
    if (gate(ctx, req, resp) || !(body = es_body(ctx, req, resp, 1))) {
        json_decref(ops);
        return;
    }
    if (only_keys(body, keys, "members", resp) ||
        member_ops(ops, "remove_member", req->seg[2], json_object_get(body, "remove"), resp) ||
        member_ops(ops, "add_member", req->seg[2], json_object_get(body, "add"), resp))
        json_decref(ops);
    else
        v1_apply_ops(ctx, ops, resp, NULL);
    json_decref(body);
}

void v1_role_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    static const char *const keys[] = {"permissions", NULL};
    json_t *body;
    if (gate(ctx, req, resp) || !(body = es_body(ctx, req, resp, 1)))
        return;
    if (only_keys(body, keys, "role", resp)) {
        json_decref(body);
        return;
    }
    v1_apply_ops(ctx,
                 json_pack("[{s:s, s:s, s:O?}]", "op", "put_role", "id", req->seg[2], "permissions",
                           json_object_get(body, "permissions")),
                 resp, NULL);
    json_decref(body);
}

void v1_role_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    if (gate(ctx, req, resp))
        return;
    v1_apply_ops(ctx, json_pack("[{s:s, s:s}]", "op", "delete_role", "id", req->seg[2]), resp,
                 NULL);
}

/* ---- Grants, named by a hash of their exported form. ---- */

static void grant_id(json_t *g, char out[18])
{
    unsigned char h[SHA256_DIGEST_LENGTH];
    char *s = json_dumps(g, JSON_COMPACT | JSON_SORT_KEYS);
    SHA256((const unsigned char *)(s ? s : ""), s ? strlen(s) : 0, h);
    free(s);
    out[0] = 'g';
    for (int i = 0; i < 8; i++)
        snprintf(out + 1 + 2 * i, 3, "%02x", h[i]);
}

static json_t *exported_grants(http_ctx_t *ctx)
{
    char *doc = NULL;
    json_t *m = NULL, *g;
    if (cordon_model_export(ctx->db, &doc, NULL) == CORDON_OK)
        m = json_loads(doc, 0, NULL);
    cordon_free(doc);
    g = json_incref(json_object_get(m, "grants"));
    json_decref(m);
    return g ? g : json_array();
}

/* json_equal, with two absent values equal. */
static int same_opt(json_t *a, json_t *b)
{
    return (!a && !b) || (a && b && json_equal(a, b));
}

/* 1 when the end key of two validity windows is the same moment (absent in both counts). */
static int same_end(json_t *a, json_t *b, const char *key)
{
    json_t *x = json_object_get(a, key), *y = json_object_get(b, key);
    double mx, my;
    if (!x || !y)
        return !x && !y;
    return json_is_string(x) && json_is_string(y) &&
           !cdn_date_parse(json_string_value(x), json_string_length(x), 0, &mx) &&
           !cdn_date_parse(json_string_value(y), json_string_length(y), 0, &my) && mx == my;
}

/* 1 when exported grant e is the grant body asked for (actions compare without case, as the
 * model stores them lowercase). */
static int same_grant(json_t *e, json_t *b)
{
    const char *bk = json_string_value(json_object_get(b, "to_kind"));
    json_t *ep = json_object_get(e, "permission"), *bp = json_object_get(b, "permission");
    if (strcmp(jstr(json_object_get(e, "to")), jstr(json_object_get(b, "to"))) ||
        strcmp(jstr(json_object_get(e, "to_kind")), bk ? bk : "subject") ||
        !same_opt(json_object_get(e, "role"), json_object_get(b, "role")) ||
        !same_opt(json_object_get(e, "scope"), json_object_get(b, "scope")) ||
        !same_end(json_object_get(e, "valid"), json_object_get(b, "valid"), "from") ||
        !same_end(json_object_get(e, "valid"), json_object_get(b, "valid"), "until"))
        return 0;
    if (!ep && !bp)
        return 1;
    return ep && bp &&
           !strcmp(jstr(json_object_get(ep, "resource")), jstr(json_object_get(bp, "resource"))) &&
           !strcasecmp(jstr(json_object_get(ep, "action")), jstr(json_object_get(bp, "action"))) &&
           same_opt(json_object_get(ep, "condition"), json_object_get(bp, "condition"));
}

void v1_grant_post(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    json_t *body, *op, *all, *g;
    char id[18] = "";
    size_t i;
    if (gate(ctx, req, resp) || !(body = es_body(ctx, req, resp, 1)))
        return;
    op = json_deep_copy(body);
    json_object_set_new(op, "op", json_string("grant"));
    cordon_error err = {0};
    uint64_t rev = 0;
    char *s = json_dumps(op, JSON_COMPACT);
    int rc = s ? cordon_model_apply(ctx->db, s, &rev, &err) : CORDON_ERR_NOMEM;
    free(s);
    json_decref(op);
    if (rc) {
        es_error_cordon(resp, rc, &err, NULL);
        json_decref(body);
        return;
    }
    all = exported_grants(ctx);
    json_array_foreach(all, i, g) if (same_grant(g, body)) grant_id(g, id);
    json_decref(all);
    es_reply(
        resp, 200,
        json_pack("{s:b, s:s, s:I}", "acknowledged", 1, "id", id, "revision", (json_int_t)rev));
    json_decref(body);
}

void v1_grant_list(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    json_t *all, *g, *out = json_array();
    char id[18];
    size_t i;
    if (gate(ctx, req, resp)) {
        json_decref(out);
        return;
    }
    /* Read before the export, as a decision's: the grants reflect at least this revision. */
    uint64_t rev = cordon_revision(ctx->db);
    all = exported_grants(ctx);
    json_array_foreach(all, i, g)
    {
        json_t *one = json_deep_copy(g);
        grant_id(g, id);
        json_object_set_new(one, "id", json_string(id));
        json_array_append_new(out, one);
    }
    json_decref(all);
    es_reply(resp, 200, json_pack("{s:o, s:I}", "grants", out, "revision", (json_int_t)rev));
}

void v1_grant_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    json_t *all, *g, *op = NULL;
    char id[18];
    size_t i;
    if (gate(ctx, req, resp))
        return;
    all = exported_grants(ctx);
    json_array_foreach(all, i, g)
    {
        grant_id(g, id);
        if (!op && !strcmp(id, req->seg[2])) {
            op = json_deep_copy(g);
            json_object_set_new(op, "op", json_string("revoke"));
        }
    }
    json_decref(all);
    if (!op)
        es_error(resp, 404, "resource_not_found_exception", "no grant [%s]", req->seg[2]);
    else
        v1_apply_ops(ctx, json_pack("[o]", op), resp, NULL);
}

void v1_model_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    char *json = NULL;
    cordon_error err = {0};
    int rc;
    if (gate(ctx, req, resp))
        return;
    if ((rc = cordon_model_export(ctx->db, &json, &err)) != 0) {
        es_error_cordon(resp, rc, &err, NULL);
        return;
    }
    resp->body.len = 0;
    cdn_buf_puts(&resp->body, json);
    resp->status = 200;
    cordon_free(json);
}

void v1_model_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    cordon_error err = {0};
    uint64_t rev = 0;
    json_t *body;
    int rc;
    if (gate(ctx, req, resp) || !(body = es_body(ctx, req, resp, 1)))
        return;
    json_decref(body);
    if ((rc = cordon_model_import(ctx->db, req->body, &rev, &err)) != 0)
        es_error_cordon(resp, rc, &err, NULL);
    else
        es_reply(resp, 200,
                 json_pack("{s:b, s:I}", "acknowledged", 1, "revision", (json_int_t)rev));
}
