/* scim.c: what the SCIM routes share: errors in SCIM's shape, bodies, the model read as one
 * document, `attr eq "value"` filters, list pages, the PATCH path engine, and the discovery
 * routes (ServiceProviderConfig, Schemas, ResourceTypes). Relies on http/scim.h, http/v1.h
 * (who may change the model) and the public API. */
#include "http/scim.h"
#include "base/mem.h"
#include "http/es.h"
#include "http/v1.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

void scim_reply(http_resp_t *resp, int status, json_t *j)
{
    es_reply(resp, status, j);
    resp->content_type = "application/scim+json";
}

void scim_error(http_resp_t *resp, int status, const char *scim_type, const char *fmt, ...)
{
    char detail[512], st[8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    snprintf(st, sizeof st, "%d", status);
    scim_reply(resp, status,
               json_pack("{s:[s], s:s, s:s, s:s?}", "schemas", SCIM_ERROR_SCHEMA, "status", st,
                         "detail", detail, "scimType", scim_type));
}

int scim_gate(http_ctx_t *ctx, const http_req_t *req, http_resp_t *resp)
{
    if (v1_may_manage_model(ctx, req))
        return 0;
    scim_error(resp, 403, NULL,
               "provisioning needs an admin key or a key whose subject holds [manage] on [%s]",
               V1_MODEL_RESOURCE);
    return -1;
}

json_t *scim_body(const http_req_t *req, http_resp_t *resp)
{
    json_error_t je;
    json_t *j =
        req->body_len ? json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &je) : NULL;
    if (!req->body_len) {
        scim_error(resp, 400, "invalidSyntax", "the request needs a JSON body");
        return NULL;
    }
    if (!j) {
        scim_error(resp, 400, "invalidSyntax", "the body is not JSON: %s (line %d)", je.text,
                   je.line);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        scim_error(resp, 400, "invalidSyntax", "the body must be a JSON object");
        return NULL;
    }
    return j;
}

json_t *scim_model(http_ctx_t *ctx, http_resp_t *resp)
{
    char *doc = NULL;
    cordon_error err = {0};
    json_t *m = NULL;
    if (cordon_model_export(ctx->db, &doc, &err) == CORDON_OK)
        m = json_loads(doc, 0, NULL);
    cordon_free(doc);
    if (!m)
        scim_error(resp, 500, NULL, "the permission model cannot be read: %s",
                   err.message[0] ? err.message : "out of memory");
    return m;
}

int scim_apply(http_ctx_t *ctx, json_t *ops, http_resp_t *resp)
{
    cordon_error err = {0};
    char *s = json_dumps(ops, JSON_COMPACT);
    int rc = s ? cordon_model_apply_batch(ctx->db, s, NULL, &err) : CORDON_ERR_NOMEM;
    free(s);
    json_decref(ops);
    if (rc == CORDON_OK)
        return 0;
    if (rc == CORDON_ERR_INVALID || rc == CORDON_ERR_LIMIT)
        scim_error(resp, 400, "invalidValue", "%s", err.message);
    else if (rc == CORDON_ERR_NOT_FOUND)
        scim_error(resp, 404, NULL, "%s", err.message);
    else if (rc == CORDON_ERR_CONFLICT)
        scim_error(resp, 409, "uniqueness", "%s", err.message);
    else
        scim_error(resp, 500, NULL, "%s", err.message[0] ? err.message : cordon_strerror(rc));
    return -1;
}

json_t *scim_get_ci(json_t *o, const char *key)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) if (!strcasecmp(k, key)) return v;
    return NULL;
}

const char *scim_jstr(json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : "";
}

json_t *scim_find(json_t *doc, const char *list, const char *id)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(doc, list), i, x)
    {
        if (!strcmp(scim_jstr(json_object_get(x, "id")), id))
            return x;
    }
    return NULL;
}

json_t *scim_attrs(json_t *entity)
{
    return json_object_get(json_object_get(entity, "attributes"), "scim");
}

const char *scim_attr_or_id(json_t *entity, const char *attr)
{
    json_t *v = scim_get_ci(scim_attrs(entity), attr);
    return json_is_string(v) ? json_string_value(v) : scim_jstr(json_object_get(entity, "id"));
}

json_t *scim_meta(json_t *entity, const char *type, const char *id)
{
    json_t *meta = json_object_get(json_object_get(entity, "attributes"), "scim_meta");
    char loc[600];
    snprintf(loc, sizeof loc, SCIM_PREFIX "/%ss/%s", type, id);
    return json_pack("{s:s, s:O?, s:O?, s:s}", "resourceType", type, "created",
                     json_object_get(meta, "created"), "lastModified",
                     json_object_get(meta, "lastModified"), "location", loc);
}

json_t *scim_stored(json_t *old, json_t *res, const char *const *drop)
{
    char now[32];
    json_t *keep = json_deep_copy(res), *oldattrs = json_object_get(old, "attributes");
    json_t *created = json_object_get(json_object_get(oldattrs, "scim_meta"), "created");
    json_t *attrs = json_is_object(oldattrs) ? json_deep_copy(oldattrs) : json_object();
    for (size_t i = 0; drop[i]; i++) {
        json_t *v;
        while ((v = scim_get_ci(keep, drop[i]))) {
            const char *k;
            json_t *x;
            json_object_foreach(keep, k, x) if (x == v)
            {
                json_object_del(keep, k);
                break;
            }
        }
    }
    scim_now(now, sizeof now);
    json_object_set_new(attrs, "scim", keep);
    json_object_set_new(attrs, "scim_meta",
                        json_pack("{s:s, s:s}", "created",
                                  json_is_string(created) ? json_string_value(created) : now,
                                  "lastModified", now));
    return attrs;
}

void scim_location(http_resp_t *resp, const char *endpoint, const char *id)
{
    if (resp->n_extra >= 2)
        return;
    snprintf(resp->extra_name[resp->n_extra], sizeof resp->extra_name[0], "Location");
    snprintf(resp->extra_value[resp->n_extra], sizeof resp->extra_value[0],
             SCIM_PREFIX "/%s/%.120s", endpoint, id);
    resp->n_extra++;
}

void scim_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp, const char *list,
                 const char *op)
{
    const char *id = req->seg[3];
    json_t *doc;
    if (scim_gate(ctx, req, resp) || !(doc = scim_model(ctx, resp)))
        return;
    if (!scim_find(doc, list, id))
        scim_error(resp, 404, NULL, "no %s [%s]", strcmp(list, "groups") ? "user" : "group", id);
    else if (scim_apply(ctx, json_pack("[{s:s, s:s}]", "op", op, "id", id), resp) == 0) {
        resp->status = 204;
        resp->body.len = 0;
    }
    json_decref(doc);
}

void scim_now(char *out, size_t cap)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- Filters and lists ---- */

int scim_filter_read(const http_req_t *req, const char *const *allowed, scim_filter_t *f,
                     http_resp_t *resp)
{
    const char *s = http_arg(req, "filter"), *p, *q;
    size_t n;
    memset(f, 0, sizeof *f);
    if (!s)
        return 0;
    f->present = 1;
    p = s + strspn(s, " ");
    n = strcspn(p, " ");
    if (n == 0 || n >= sizeof f->attr)
        goto bad;
    memcpy(f->attr, p, n);
    p += n + strspn(p + n, " ");
    if (strncasecmp(p, "eq ", 3))
        goto bad;
    p += 3 + strspn(p + 3, " ");
    if (*p != '"' || !(q = strchr(p + 1, '"')) || q[1 + strspn(q + 1, " ")] != '\0' ||
        (size_t)(q - p - 1) >= sizeof f->value)
        goto bad;
    memcpy(f->value, p + 1, (size_t)(q - p - 1));
    for (size_t i = 0; allowed[i]; i++)
        if (!strcasecmp(allowed[i], f->attr))
            return 0;
    scim_error(resp, 400, "invalidFilter",
               "cannot filter on [%s]; the attributes are those of "
               "`ATTRIBUTE eq \"VALUE\"` this resource lists in docs",
               f->attr);
    return -1;
bad:
    scim_error(resp, 400, "invalidFilter",
               "the filter [%.200s] is not of the form ATTRIBUTE eq \"VALUE\"", s);
    return -1;
}

static long arg_long(const http_req_t *req, const char *name, long dflt)
{
    const char *s = http_arg(req, name);
    char *end;
    long v;
    if (!s)
        return dflt;
    v = strtol(s, &end, 10);
    return *s && !*end ? v : dflt;
}

void scim_list_reply(const http_req_t *req, json_t *resources, http_resp_t *resp)
{
    long start = arg_long(req, "startIndex", 1), count = arg_long(req, "count", 100);
    size_t total = json_array_size(resources), from, n;
    json_t *page = json_array();
    if (start < 1) /* RFC 7644 3.4.2.4: less than 1 is 1 */
        start = 1;
    if (count < 0)
        count = 0;
    if (count > SCIM_PAGE_MAX)
        count = SCIM_PAGE_MAX;
    from = (size_t)start - 1;
    for (n = 0; page && from + n < total && n < (size_t)count; n++)
        json_array_append(page, json_array_get(resources, from + n));
    json_decref(resources);
    scim_reply(resp, 200,
               json_pack("{s:[s], s:I, s:I, s:I, s:o}", "schemas", SCIM_LIST_SCHEMA, "totalResults",
                         (json_int_t)total, "startIndex", (json_int_t)start, "itemsPerPage",
                         (json_int_t)n, "Resources", page));
}

/* ---- PATCH paths ---- */

typedef struct ppath {
    char attr[128];   /* the attribute, e.g. "emails" */
    char sub[128];    /* after a '.', e.g. "value"; "" for none */
    char fattr[64];   /* in a [x eq "v"] filter, x; "" for no filter */
    char fvalue[512]; /* and v */
    char urn[160];    /* an extension schema the attribute lives in; "" for the core */
} ppath_t;

static int path_parse(const char *path, ppath_t *p)
{
    const char *s = path, *br, *dot;
    memset(p, 0, sizeof *p);
    if (!strncasecmp(s, "urn:", 4)) {
        /* urn:...:User:attr, the attribute after the last ':' of the schema's URN */
        const char *last = strrchr(s, ':');
        size_t un = (size_t)(last - s);
        if (!strncasecmp(s, SCIM_USER_SCHEMA ":", strlen(SCIM_USER_SCHEMA) + 1) ||
            !strncasecmp(s, SCIM_GROUP_SCHEMA ":", strlen(SCIM_GROUP_SCHEMA) + 1))
            un = 0; /* the core schema named in full */
        if (un >= sizeof p->urn)
            return -1;
        memcpy(p->urn, s, un);
        s = last + 1;
    }
    br = strchr(s, '[');
    dot = br ? NULL : strchr(s, '.');
    size_t an = br ? (size_t)(br - s) : dot ? (size_t)(dot - s) : strlen(s);
    if (!an || an >= sizeof p->attr)
        return -1;
    memcpy(p->attr, s, an);
    if (br) {
        const char *end = strchr(br, ']'), *q1, *q2;
        char inner[640];
        size_t in = end ? (size_t)(end - br - 1) : 0;
        if (!end || in >= sizeof inner)
            return -1;
        memcpy(inner, br + 1, in);
        inner[in] = '\0';
        size_t fn = strcspn(inner, " ");
        if (!fn || fn >= sizeof p->fattr || strncasecmp(inner + fn, " eq \"", 5))
            return -1;
        memcpy(p->fattr, inner, fn);
        q1 = inner + fn + 4;
        q2 = strchr(q1 + 1, '"');
        if (!q2 || q2[1] || (size_t)(q2 - q1 - 1) >= sizeof p->fvalue)
            return -1;
        memcpy(p->fvalue, q1 + 1, (size_t)(q2 - q1 - 1));
        if (end[1] && end[1] != '.')
            return -1;
        dot = end[1] == '.' ? end + 1 : NULL;
    }
    if (dot) {
        if (!dot[1] || strlen(dot + 1) >= sizeof p->sub || strchr(dot + 1, '.'))
            return -1;
        snprintf(p->sub, sizeof p->sub, "%s", dot + 1);
    }
    return 0;
}

/* Sets o[key] (matching an existing key without case) to v (stolen). */
static int set_ci(json_t *o, const char *key, json_t *v)
{
    const char *k;
    json_t *x;
    json_object_foreach(o, k, x) if (!strcasecmp(k, key)) return json_object_set_new(o, k, v);
    return json_object_set_new(o, key, v);
}

static void del_ci(json_t *o, const char *key)
{
    const char *k;
    json_t *x;
    json_object_foreach(o, k, x) if (!strcasecmp(k, key))
    {
        json_object_del(o, k);
        return;
    }
}

static int elem_matches(json_t *e, const ppath_t *p)
{
    json_t *v = scim_get_ci(e, p->fattr);
    return json_is_string(v) && !strcmp(json_string_value(v), p->fvalue);
}

/* add/replace/remove at a parsed path of obj. */
static int patch_at(json_t *obj, int op, const ppath_t *p, json_t *value, http_resp_t *resp)
{
    enum { ADD, REPLACE, REMOVE };
    json_t *cur = scim_get_ci(obj, p->attr);
    if (p->fattr[0]) { /* attr[x eq "v"](.sub) */
        size_t i;
        json_t *e;
        int hit = 0;
        if (cur && !json_is_array(cur)) {
            scim_error(resp, 400, "invalidPath", "[%s] is not multi-valued", p->attr);
            return -1;
        }
        for (i = 0; cur && i < json_array_size(cur);) {
            e = json_array_get(cur, i);
            if (!json_is_object(e) || !elem_matches(e, p)) {
                i++;
                continue;
            }
            hit = 1;
            if (op == REMOVE && !p->sub[0]) {
                json_array_remove(cur, i);
                continue;
            }
            if (op == REMOVE)
                del_ci(e, p->sub);
            else if (p->sub[0])
                set_ci(e, p->sub, json_incref(value));
            else
                json_array_set(cur, i, value);
            i++;
        }
        if (hit || op == REMOVE)
            return 0;
        /* nothing matched: add the element the filter describes */
        json_t *ne = p->sub[0] ? json_pack("{s:s}", p->fattr, p->fvalue) : json_deep_copy(value);
        if (p->sub[0])
            set_ci(ne, p->sub, json_incref(value));
        if (!cur) {
            set_ci(obj, p->attr, json_array());
            cur = scim_get_ci(obj, p->attr);
        }
        json_array_append_new(cur, ne);
        return 0;
    }
    if (p->sub[0]) { /* attr.sub */
        if (op == REMOVE) {
            if (json_is_object(cur))
                del_ci(cur, p->sub);
            return 0;
        }
        if (!json_is_object(cur)) {
            set_ci(obj, p->attr, json_object());
            cur = scim_get_ci(obj, p->attr);
        }
        return set_ci(cur, p->sub, json_incref(value));
    }
    if (op == REMOVE && json_is_array(cur) && json_is_array(value)) {
        /* {"op": "Remove", "path": "members", "value": [{"value": ID}]}, as Entra ID sends
         * it: the values listed, not all of them */
        size_t i;
        json_t *v;
        json_array_foreach(value, i, v)
        {
            json_t *want = json_is_object(v) ? scim_get_ci(v, "value") : v;
            for (size_t k = 0; k < json_array_size(cur);) {
                json_t *e = json_array_get(cur, k),
                       *have = json_is_object(e) ? scim_get_ci(e, "value") : e;
                if (json_equal(have, want))
                    json_array_remove(cur, k);
                else
                    k++;
            }
        }
        return 0;
    }
    if (op == REMOVE) {
        del_ci(obj, p->attr);
        return 0;
    }
    if (op == ADD && json_is_array(cur) && json_is_array(value)) { /* add appends */
        size_t i;
        json_t *v;
        json_array_foreach(value, i, v)
        {
            size_t k;
            json_t *w;
            int dup = 0;
            json_array_foreach(cur, k, w) dup |= json_equal(w, v);
            if (!dup)
                json_array_append(cur, v);
        }
        return 0;
    }
    return set_ci(obj, p->attr, json_incref(value));
}

/* The object res keeps an extension schema's attributes in (made when create is set), or
 * NULL. */
static json_t *ext_object(json_t *res, const char *urn, int create)
{
    json_t *ext = scim_get_ci(res, urn);
    if (!json_is_object(ext) && create) {
        set_ci(res, urn, json_object());
        ext = scim_get_ci(res, urn);
    }
    return json_is_object(ext) ? ext : NULL;
}

int scim_patch_apply(json_t *res, const char *op, const char *path, json_t *value,
                     http_resp_t *resp)
{
    int code = !strcasecmp(op, "add")       ? 0
               : !strcasecmp(op, "replace") ? 1
               : !strcasecmp(op, "remove")  ? 2
                                            : -1;
    ppath_t p;
    if (code < 0) {
        scim_error(resp, 400, "invalidSyntax", "op [%.40s] is not add, replace or remove", op);
        return -1;
    }
    if (!path) { /* value: attributes to add or replace, some perhaps URN-qualified */
        const char *k;
        json_t *v;
        if (code == 2) {
            scim_error(resp, 400, "noTarget", "a remove needs a path");
            return -1;
        }
        if (!json_is_object(value)) {
            scim_error(resp, 400, "invalidValue", "an operation without a path takes an object");
            return -1;
        }
        json_object_foreach(value, k, v)
        {
            if (!strcasecmp(k, SCIM_ENTERPRISE_SCHEMA) && json_is_object(v)) {
                json_t *ext = ext_object(res, k, 1); /* the extension's attributes, merged */
                json_object_update(ext, v);
                continue;
            }
            if (path_parse(k, &p)) {
                scim_error(resp, 400, "invalidPath", "[%.200s] is not an attribute path", k);
                return -1;
            }
            json_t *target = p.urn[0] ? ext_object(res, p.urn, 1) : res;
            if (patch_at(target, code, &p, v, resp))
                return -1;
        }
        return 0;
    }
    if (path_parse(path, &p)) {
        scim_error(resp, 400, "invalidPath", "[%.200s] is not an attribute path", path);
        return -1;
    }
    if (code != 2 && !value) {
        scim_error(resp, 400, "invalidValue", "an %s needs a value", op);
        return -1;
    }
    json_t *target = p.urn[0] ? ext_object(res, p.urn, code != 2) : res;
    return target ? patch_at(target, code, &p, value, resp) : 0;
}

int scim_patch_all(json_t *res, json_t *ops, http_resp_t *resp)
{
    size_t i;
    json_t *o;
    json_array_foreach(ops, i, o)
    {
        json_t *path = scim_get_ci(o, "path");
        if (scim_patch_apply(res, json_string_value(scim_get_ci(o, "op")),
                             json_is_string(path) ? json_string_value(path) : NULL,
                             scim_get_ci(o, "value"), resp))
            return -1;
    }
    return 0;
}

json_t *scim_patch_ops(json_t *body, http_resp_t *resp)
{
    json_t *ops = scim_get_ci(body, "Operations"), *o;
    size_t i;
    if (!json_is_array(ops) || !json_array_size(ops)) {
        scim_error(resp, 400, "invalidSyntax",
                   "a PATCH needs \"Operations\": [{\"op\", \"path\"?, \"value\"?}]");
        return NULL;
    }
    if (json_array_size(ops) > SCIM_PATCH_OPS_MAX) {
        scim_error(resp, 400, "tooMany", "%zu operations; the limit is %d", json_array_size(ops),
                   SCIM_PATCH_OPS_MAX);
        return NULL;
    }
    json_array_foreach(ops, i, o)
    {
        json_t *op = scim_get_ci(o, "op"), *path = scim_get_ci(o, "path");
        if (!json_is_object(o) || !json_is_string(op) || (path && !json_is_string(path))) {
            scim_error(resp, 400, "invalidSyntax",
                       "Operations[%zu] needs a string \"op\" and at most a string \"path\"", i);
            return NULL;
        }
    }
    return ops;
}

/* ---- Discovery ---- */

void scim_service_provider_config(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    (void)ctx;
    (void)req;
    scim_reply(
        resp, 200,
        json_pack("{s:[s], s:s, s:{s:b}, s:{s:b}, s:{s:b, s:i}, s:{s:b}, s:{s:b}, s:{s:b}, "
                  "s:[{s:s, s:s, s:s, s:b}], s:{s:s}}",
                  "schemas", "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig",
                  "documentationUri", "docs/api/scim.md", "patch", "supported", 1, "bulk",
                  "supported", 0, "filter", "supported", 1, "maxResults", SCIM_PAGE_MAX,
                  "changePassword", "supported", 0, "sort", "supported", 0, "etag", "supported", 0,
                  "authenticationSchemes", "type", "oauthbearertoken", "name", "API key",
                  "description",
                  "Authorization: Bearer with an admin key or one whose subject holds manage on "
                  "model:permissions",
                  "primary", 1, "meta", "resourceType", "ServiceProviderConfig"));
}

static json_t *attr(const char *name, const char *type, int multi, int required,
                    const char *mutability)
{
    return json_pack("{s:s, s:s, s:b, s:b, s:b, s:s, s:s, s:s}", "name", name, "type", type,
                     "multiValued", multi, "required", required, "caseExact", 0, "mutability",
                     mutability, "returned", "default", "uniqueness",
                     !strcmp(name, "userName") || !strcmp(name, "displayName") ? "server" : "none");
}

static json_t *user_schema(void)
{
    return json_pack(
        "{s:s, s:s, s:s, s:[o, o, o, o, o, o, o, o], s:{s:s}}", "id", SCIM_USER_SCHEMA, "name",
        "User", "description",
        "A subject of the permission model (its id is the userName it was created "
        "with)",
        "attributes", attr("userName", "string", 0, 1, "readWrite"),
        attr("externalId", "string", 0, 0, "readWrite"), attr("name", "complex", 0, 0, "readWrite"),
        attr("displayName", "string", 0, 0, "readWrite"),
        attr("emails", "complex", 1, 0, "readWrite"), attr("active", "boolean", 0, 0, "readWrite"),
        attr("title", "string", 0, 0, "readWrite"), attr("groups", "complex", 1, 0, "readOnly"),
        "meta", "resourceType", "Schema");
}

static json_t *group_schema(void)
{
    return json_pack("{s:s, s:s, s:s, s:[o, o, o], s:{s:s}}", "id", SCIM_GROUP_SCHEMA, "name",
                     "Group", "description", "A group of the permission model", "attributes",
                     attr("displayName", "string", 0, 1, "readWrite"),
                     attr("externalId", "string", 0, 0, "readWrite"),
                     attr("members", "complex", 1, 0, "readWrite"), "meta", "resourceType",
                     "Schema");
}

void scim_schemas(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    (void)ctx;
    scim_list_reply(req, json_pack("[o, o]", user_schema(), group_schema()), resp);
}

void scim_resource_types(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    (void)ctx;
    json_t *user = json_pack("{s:[s], s:s, s:s, s:s, s:s, s:[{s:s, s:b}], s:{s:s}}", "schemas",
                             "urn:ietf:params:scim:schemas:core:2.0:ResourceType", "id", "User",
                             "name", "User", "endpoint", "/Users", "schema", SCIM_USER_SCHEMA,
                             "schemaExtensions", "schema", SCIM_ENTERPRISE_SCHEMA, "required", 0,
                             "meta", "resourceType", "ResourceType");
    json_t *group = json_pack("{s:[s], s:s, s:s, s:s, s:s, s:{s:s}}", "schemas",
                              "urn:ietf:params:scim:schemas:core:2.0:ResourceType", "id", "Group",
                              "name", "Group", "endpoint", "/Groups", "schema", SCIM_GROUP_SCHEMA,
                              "meta", "resourceType", "ResourceType");
    scim_list_reply(req, json_pack("[o, o]", user, group), resp);
}
