/* scim_users.c: SCIM Users as subjects of the permission model. A user's id is the subject id,
 * the userName it was created with (so the ACLs a corpus arrives with, `user:alice@corp.com`,
 * name it); its SCIM attributes are kept in the subject's attributes under "scim" (conditions
 * read them as subject.attributes.scim.*), with "scim_meta" for created and lastModified. A
 * user made inactive holds a deny of every action on every resource, so the next request
 * reads nothing; deleting it deletes the subject. Relies on http/scim.h and the public API. */
#include "http/scim.h"
#include "base/mem.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *jstr(json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : "";
}

static json_t *find_subject(json_t *doc, const char *id)
{
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(doc, "subjects"), i, s) if (!strcmp(
        jstr(json_object_get(s, "id")), id)) return s;
    return NULL;
}

static json_t *scim_of(json_t *subj)
{
    return json_object_get(json_object_get(subj, "attributes"), "scim");
}

static const char *user_name(json_t *subj)
{
    json_t *n = scim_get_ci(scim_of(subj), "userName");
    return json_is_string(n) ? json_string_value(n) : jstr(json_object_get(subj, "id"));
}

/* The deny that deprovisions a user: every action on every resource. */
static json_t *deny_all(const char *id)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "to", id, "to_kind", "subject",
                     "permission", "resource", "*", "action", "*", "effect", "deny");
}

static int inactive(json_t *doc, const char *id)
{
    json_t *want = deny_all(id), *g;
    size_t i;
    int found = 0;
    json_array_foreach(json_object_get(doc, "grants"), i, g) found |= json_equal(g, want);
    json_decref(want);
    return found;
}

static json_t *user_resource(json_t *doc, json_t *subj)
{
    const char *id = jstr(json_object_get(subj, "id"));
    json_t *scim = scim_of(subj), *meta = json_object_get(json_object_get(subj, "attributes"),
                                                          "scim_meta");
    json_t *r = json_is_object(scim) ? json_deep_copy(scim) : json_object(), *groups = json_array();
    json_t *g, *m;
    size_t i, k;
    char loc[600];
    json_array_foreach(json_object_get(doc, "groups"), i, g)
    {
        json_array_foreach(json_object_get(g, "members"), k, m)
        {
            if (strcmp(jstr(json_object_get(m, "kind")), "subject") ||
                strcmp(jstr(json_object_get(m, "id")), id))
                continue;
            json_t *gscim = json_object_get(json_object_get(g, "attributes"), "scim");
            const char *gid = jstr(json_object_get(g, "id"));
            json_t *disp = scim_get_ci(gscim, "displayName");
            snprintf(loc, sizeof loc, SCIM_PREFIX "/Groups/%s", gid);
            json_array_append_new(groups, json_pack("{s:s, s:s, s:s, s:s}", "value", gid,
                                                    "display", json_is_string(disp) ? json_string_value(disp) : gid,
                                                    "type", "direct", "$ref", loc));
        }
    }
    snprintf(loc, sizeof loc, SCIM_PREFIX "/Users/%s", id);
    json_object_set_new(r, "schemas",
                        scim_get_ci(r, SCIM_ENTERPRISE_SCHEMA)
                            ? json_pack("[s, s]", SCIM_USER_SCHEMA, SCIM_ENTERPRISE_SCHEMA)
                            : json_pack("[s]", SCIM_USER_SCHEMA));
    json_object_set_new(r, "id", json_string(id));
    json_object_set_new(r, "userName", json_string(user_name(subj)));
    json_object_del(r, "active");
    json_object_set_new(r, "active", json_boolean(!inactive(doc, id)));
    json_object_set_new(r, "groups", groups);
    json_object_set_new(
        r, "meta",
        json_pack("{s:s, s:O?, s:O?, s:s}", "resourceType", "User", "created",
                  json_object_get(meta, "created"), "lastModified",
                  json_object_get(meta, "lastModified"), "location", loc));
    return r;
}

/* A subject id a userName can be: what the model takes as an id. */
static int id_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 127)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == ':' || s[i] == 0x7f)
            return 0;
    return 1;
}

/* "active" as a boolean: true/false, or the strings identity providers send ("False"). */
static int active_of(json_t *v, int *out)
{
    if (!v || json_is_null(v))
        return *out = 1, 0;
    if (json_is_boolean(v))
        return *out = json_is_true(v), 0;
    if (json_is_string(v) && !strcasecmp(json_string_value(v), "true"))
        return *out = 1, 0;
    if (json_is_string(v) && !strcasecmp(json_string_value(v), "false"))
        return *out = 0, 0;
    return -1;
}

/* The attributes kept for a user: the resource less what the server owns (and passwords,
 * which it never stores). */
static void strip(json_t *r)
{
    static const char *const drop[] = {"schemas", "id", "meta", "groups", "password", "active"};
    for (size_t i = 0; i < sizeof drop / sizeof *drop; i++)
        while (scim_get_ci(r, drop[i])) {
            const char *k;
            json_t *v;
            json_object_foreach(r, k, v) if (!strcasecmp(k, drop[i]))
            {
                json_object_del(r, k);
                break;
            }
        }
}

/* Writes user id (old: its subject now, or NULL) with SCIM attributes res (borrowed), in one
 * change; 0, or fills resp. */
static int user_write(http_ctx_t *ctx, json_t *doc, const char *id, json_t *old, json_t *res,
                      http_resp_t *resp)
{
    int active;
    char now[32];
    if (active_of(scim_get_ci(res, "active"), &active)) {
        scim_error(resp, 400, "invalidValue", "active must be true or false");
        return -1;
    }
    json_t *un = scim_get_ci(res, "userName");
    if (!json_is_string(un) || !json_string_length(un)) {
        scim_error(resp, 400, "invalidValue", "userName is required (a non-empty string)");
        return -1;
    }
    json_t *keep = json_deep_copy(res);
    strip(keep);
    scim_now(now, sizeof now);
    json_t *oldattrs = json_object_get(old, "attributes"), *created =
        json_object_get(json_object_get(oldattrs, "scim_meta"), "created");
    json_t *attrs = json_is_object(oldattrs) ? json_deep_copy(oldattrs) : json_object();
    json_object_set_new(attrs, "scim", keep);
    json_object_set_new(attrs, "scim_meta",
                        json_pack("{s:s, s:s}", "created",
                                  json_is_string(created) ? json_string_value(created) : now,
                                  "lastModified", now));
    json_t *put = json_pack("{s:s, s:s, s:s, s:o}", "op", "put_subject", "id", id, "kind",
                            old ? jstr(json_object_get(old, "kind")) : "user", "attributes", attrs);
    if (json_object_get(old, "tenants"))
        json_object_set(put, "tenants", json_object_get(old, "tenants"));
    json_t *ops = json_pack("[o]", put);
    int was_inactive = old && inactive(doc, id);
    if ((active == 0) != (was_inactive != 0)) {
        json_t *g = deny_all(id);
        json_object_set_new(g, "op", json_string(active ? "revoke" : "grant"));
        json_array_append_new(ops, g);
    }
    return scim_apply(ctx, ops, resp);
}

/* Answers the user as stored now. */
static void user_answer(http_ctx_t *ctx, const char *id, int status, http_resp_t *resp)
{
    json_t *doc = scim_model(ctx, resp), *s;
    if (!doc)
        return;
    if (!(s = find_subject(doc, id)))
        scim_error(resp, 404, NULL, "no user [%s]", id);
    else {
        scim_reply(resp, status, user_resource(doc, s));
        if (status == 201 && resp->n_extra < 2) {
            snprintf(resp->extra_name[resp->n_extra], sizeof resp->extra_name[0], "Location");
            snprintf(resp->extra_value[resp->n_extra], sizeof resp->extra_value[0],
                     SCIM_PREFIX "/Users/%.120s", id);
            resp->n_extra++;
        }
    }
    json_decref(doc);
}

void scim_users_list(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    static const char *const attrs[] = {"userName", "externalId", "id", "displayName", NULL};
    scim_filter_t f;
    json_t *doc, *s, *out;
    size_t i;
    if (scim_gate(ctx, req, resp) || scim_filter_read(req, attrs, &f, resp) ||
        !(doc = scim_model(ctx, resp)))
        return;
    out = json_array();
    json_array_foreach(json_object_get(doc, "subjects"), i, s)
    {
        if (strcmp(jstr(json_object_get(s, "kind")), "user"))
            continue; /* services are not users */
        if (f.present) {
            const char *v = !strcasecmp(f.attr, "userName") ? user_name(s)
                            : !strcasecmp(f.attr, "id")     ? jstr(json_object_get(s, "id"))
                                                            : jstr(scim_get_ci(scim_of(s), f.attr));
            /* userName is compared without case (RFC 7643 4.1.1), the others exactly */
            if (!strcasecmp(f.attr, "userName") ? strcasecmp(v, f.value) : strcmp(v, f.value))
                continue;
        }
        json_array_append_new(out, user_resource(doc, s));
    }
    json_decref(doc);
    scim_list_reply(req, out, resp);
}

void scim_user_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    if (scim_gate(ctx, req, resp))
        return;
    user_answer(ctx, req->seg[3], 200, resp);
}

void scim_user_create(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    json_t *body, *doc = NULL, *s;
    size_t i;
    if (scim_gate(ctx, req, resp) || !(body = scim_body(req, resp)))
        return;
    const char *name = jstr(scim_get_ci(body, "userName"));
    if (!*name)
        scim_error(resp, 400, "invalidValue", "userName is required (a non-empty string)");
    else if (!id_ok(name))
        scim_error(resp, 400, "invalidValue",
                   "userName [%.200s] becomes the subject's id, which holds no space, control "
                   "character or ':' and at most 127 bytes",
                   name);
    else if ((doc = scim_model(ctx, resp))) {
        int taken = find_subject(doc, name) != NULL;
        json_array_foreach(json_object_get(doc, "subjects"), i, s) taken |=
            !strcasecmp(user_name(s), name);
        if (taken)
            scim_error(resp, 409, "uniqueness", "a user named [%.200s] exists", name);
        else if (user_write(ctx, doc, name, NULL, body, resp) == 0)
            user_answer(ctx, name, 201, resp);
    }
    json_decref(doc);
    json_decref(body);
}

void scim_user_replace(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    const char *id = req->seg[3];
    json_t *body, *doc, *old;
    if (scim_gate(ctx, req, resp) || !(body = scim_body(req, resp)))
        return;
    if ((doc = scim_model(ctx, resp))) {
        if (!(old = find_subject(doc, id)))
            scim_error(resp, 404, NULL, "no user [%s]", id);
        else if (user_write(ctx, doc, id, old, body, resp) == 0)
            user_answer(ctx, id, 200, resp);
        json_decref(doc);
    }
    json_decref(body);
}

void scim_user_patch(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    const char *id = req->seg[3];
    json_t *body, *doc, *old, *ops, *o, *res = NULL;
    size_t i;
    if (scim_gate(ctx, req, resp) || !(body = scim_body(req, resp)))
        return;
    if (!(ops = scim_patch_ops(body, resp)) || !(doc = scim_model(ctx, resp))) {
        json_decref(body);
        return;
    }
    if (!(old = find_subject(doc, id))) {
        scim_error(resp, 404, NULL, "no user [%s]", id);
        goto done;
    }
    res = user_resource(doc, old); /* patched as the client sees it, active included */
    json_array_foreach(ops, i, o)
    {
        json_t *path = scim_get_ci(o, "path");
        if (scim_patch_apply(res, json_string_value(scim_get_ci(o, "op")),
                             json_is_string(path) ? json_string_value(path) : NULL,
                             scim_get_ci(o, "value"), resp))
            goto done;
    }
    if (user_write(ctx, doc, id, old, res, resp) == 0)
        user_answer(ctx, id, 200, resp);
done:
    json_decref(res);
    json_decref(doc);
    json_decref(body);
}

void scim_user_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    const char *id = req->seg[3];
    json_t *doc;
    if (scim_gate(ctx, req, resp) || !(doc = scim_model(ctx, resp)))
        return;
    if (!find_subject(doc, id))
        scim_error(resp, 404, NULL, "no user [%s]", id);
    else if (scim_apply(ctx, json_pack("[{s:s, s:s}]", "op", "delete_subject", "id", id), resp) ==
             0) {
        resp->status = 204;
        resp->body.len = 0;
    }
    json_decref(doc);
}
