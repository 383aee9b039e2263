/* v1_rebac.c: relationships over HTTP: the schema (PUT, GET /v1/relationships/schema), tuple
 * writes and deletes (POST /v1/relationships), check, lookup-resources (sorted, paged by an
 * `after` cursor, no ceiling), lookup-subjects and expand. Writes need an admin key or manage
 * on V1_MODEL_RESOURCE; so do reads, except check and lookup-resources a subject asks about
 * itself. Relies on http/v1.h and the public API. */
#include "base/mem.h"
#include "http/es.h"
#include "http/v1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int gate(http_ctx_t *ctx, const http_req_t *req, const char *subject, http_resp_t *resp)
{
    char self[CORDON_ROLE_MAX + 16];
    if (v1_may_manage_model(ctx, req))
        return 0;
    snprintf(self, sizeof self, "user:%s", req->caller.subject);
    if (subject && req->caller.subject[0] && !strcmp(subject, self))
        return 0; /* a subject may ask about itself */
    es_error(resp, 403, "security_exception",
             "relationships need an admin key or [manage] on [%s] (a subject may check and look "
             "up its own)",
             V1_MODEL_RESOURCE);
    return -1;
}

/* The string fields names (NULL-terminated) of body into out, in order; 0, or fills resp. */
static int fields(json_t *body, const char *const *names, const char **out, http_resp_t *resp)
{
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v)
    {
        size_t i = 0;
        while (names[i] && strcmp(names[i], k))
            i++;
        if (!names[i] && strcmp(k, "after") && strcmp(k, "limit")) {
            es_error(resp, 400, "parsing_exception", "unknown field [%s]", k);
            return -1;
        }
    }
    for (size_t i = 0; names[i]; i++) {
        out[i] = json_string_value(json_object_get(body, names[i]));
        if (!out[i]) {
            es_error(resp, 400, "illegal_argument_exception", "[%s] must be a string", names[i]);
            return -1;
        }
    }
    return 0;
}

void v1_rebac_schema_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    json_t *body;
    if (gate(ctx, req, NULL, resp) || !(body = es_body(ctx, req, resp, 1)))
        return;
    v1_apply_ops(ctx, json_pack("[{s:s, s:o}]", "op", "put_schema", "schema", body), resp, NULL);
}

void v1_rebac_schema_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    char *doc = NULL;
    cordon_error err = {0};
    json_t *m = NULL, *schema;
    int rc;
    if (gate(ctx, req, NULL, resp))
        return;
    if ((rc = cordon_model_export(ctx->db, &doc, &err)) != 0) {
        es_error_cordon(resp, rc, &err, NULL);
        return;
    }
    m = json_loads(doc, 0, NULL);
    cordon_free(doc);
    schema = json_object_get(json_object_get(m, "rebac"), "schema");
    if (!schema)
        es_error(resp, 404, "resource_not_found_exception",
                 "no relationship schema; PUT one to /v1/relationships/schema");
    else
        es_reply(resp, 200, json_incref(schema));
    json_decref(m);
}

void v1_rebac_write(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    json_t *body, *w, *d;
    const char *k;
    json_t *v;
    if (gate(ctx, req, NULL, resp) || !(body = es_body(ctx, req, resp, 1)))
        return;
    json_object_foreach(body, k, v) if (strcmp(k, "writes") && strcmp(k, "deletes"))
    {
        es_error(resp, 400, "parsing_exception", "unknown field [%s]; give writes and deletes", k);
        json_decref(body);
        return;
    }
    w = json_object_get(body, "writes");
    d = json_object_get(body, "deletes");
    json_t *op = json_pack("[{s:s, s:O?, s:O?}]", "op", "write_tuples", "writes", w, "deletes", d);
    json_t *extra = json_pack("{s:I, s:I}", "written", (json_int_t)json_array_size(w), "deleted",
                              (json_int_t)json_array_size(d));
    json_decref(body);
    v1_apply_ops(ctx, op, resp, extra);
}

void v1_rebac_check(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    static const char *const names[] = {"subject", "permission", "object", NULL};
    const char *f[3];
    cordon_error err = {0};
    uint64_t rev = 0;
    int allowed, rc;
    json_t *body = es_body(ctx, req, resp, 1);
    if (!body)
        return;
    if (!fields(body, names, f, resp) && !gate(ctx, req, f[0], resp)) {
        if ((rc = cordon_rebac_check(ctx->db, f[0], f[1], f[2], &allowed, &rev, &err)) != 0)
            es_error_cordon(resp, rc, &err, NULL);
        else
            es_reply(resp, 200,
                     json_pack("{s:b, s:I}", "allowed", allowed, "revision", (json_int_t)rev));
    }
    json_decref(body);
}

static int collect(void *ctx, const char *name)
{
    return json_array_append_new((json_t *)ctx, json_string(name)) ? CORDON_ERR_NOMEM : 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* Sorts names and keeps those after `after`, at most limit (0: all); stolen, returns the
 * page and sets *next to the last one kept when more remain. */
static json_t *page(json_t *names, const char *after, size_t limit, const char **next)
{
    size_t n = json_array_size(names), k = 0;
    json_t **v = cdn_malloc((n ? n : 1) * sizeof *v), *out = json_array();
    for (size_t i = 0; v && i < n; i++)
        v[i] = json_array_get(names, i);
    if (v && n)
        qsort(v, n, sizeof *v, cmp_str);
    *next = NULL;
    for (size_t i = 0; v && out && i < n; i++) {
        if (after && strcmp(json_string_value(v[i]), after) <= 0)
            continue;
        if (limit && k == limit) {
            *next = json_string_value(json_array_get(out, k - 1));
            break;
        }
        json_array_append(out, v[i]);
        k++;
    }
    cdn_free(v);
    json_decref(names);
    return out;
}

static void lookup(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp, int resources)
{
    static const char *const rn[] = {"subject", "type", "permission", NULL};
    static const char *const sn[] = {"object", "permission", "subject_type", NULL};
    const char *f[3], *next = NULL;
    cordon_error err = {0};
    uint64_t rev = 0;
    int rc;
    json_t *body = es_body(ctx, req, resp, 1), *names = json_array();
    if (!body || fields(body, resources ? rn : sn, f, resp) ||
        gate(ctx, req, resources ? f[0] : NULL, resp))
        goto done;
    json_t *lim = json_object_get(body, "limit"), *after = json_object_get(body, "after");
    if ((lim && (!json_is_integer(lim) || json_integer_value(lim) < 1)) ||
        (after && !json_is_string(after))) {
        es_error(resp, 400, "illegal_argument_exception",
                 "[limit] is a positive integer and [after] a string (the last of a page)");
        goto done;
    }
    rc = resources
             ? cordon_rebac_lookup_resources(ctx->db, f[0], f[1], f[2], collect, names, &rev, &err)
             : cordon_rebac_lookup_subjects(ctx->db, f[0], f[1], f[2], collect, names, &rev, &err);
    if (rc) {
        es_error_cordon(resp, rc, &err, NULL);
        goto done;
    }
    json_t *out = page(json_incref(names), json_string_value(after),
                       lim ? (size_t)json_integer_value(lim) : 0, &next);
    json_t *j = json_pack("{s:o, s:I}", resources ? "resources" : "subjects", out, "revision",
                          (json_int_t)rev);
    if (j && next) /* more remain: the cursor of the next page */
        json_object_set_new(j, "next", json_string(next));
    es_reply(resp, 200, j);
done:
    json_decref(names);
    json_decref(body);
}

void v1_rebac_lookup_resources(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    lookup(ctx, req, resp, 1);
}

void v1_rebac_lookup_subjects(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    lookup(ctx, req, resp, 0);
}

void v1_rebac_expand(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    static const char *const names[] = {"object", "permission", NULL};
    const char *f[2];
    cordon_error err = {0};
    char *tree = NULL;
    int rc;
    json_t *body = es_body(ctx, req, resp, 1);
    if (!body)
        return;
    if (!fields(body, names, f, resp) && !gate(ctx, req, NULL, resp)) {
        if ((rc = cordon_rebac_expand(ctx->db, f[0], f[1], &tree, &err)) != 0)
            es_error_cordon(resp, rc, &err, NULL);
        else
            es_reply(resp, 200, json_pack("{s:o}", "tree", json_loads(tree, 0, NULL)));
        cordon_free(tree);
    }
    json_decref(body);
}
