/* scim_users.c: SCIM Users as subjects of the permission model. A user's id is the subject id,
 * the userName it was created with (so the ACLs a corpus arrives with, `user:alice@corp.com`,
 * name it); its SCIM attributes are kept in the subject's attributes under "scim" (conditions
 * read them as subject.attributes.scim.*), with "scim_meta" for created and lastModified. A
 * user made inactive holds a deny of every action on every resource, so the next request
 * reads nothing; deleting it deletes the subject. Relies on http/scim.h and the public API. */
#include "base/mem.h"
#include "http/scim.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static json_t *find_subject(json_t *doc, const char *id)
{
    return scim_find(doc, "subjects", id);
}

static const char *user_name(json_t *subj)
{
    return scim_attr_or_id(subj, "userName");
}

/* The deny that deprovisions a user: every action on every resource. */
static json_t *deny_all(const char *id)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "to", id, "to_kind", "subject", "permission",
                     "resource", "*", "action", "*", "effect", "deny");
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
    const char *id = scim_jstr(json_object_get(subj, "id"));
    json_t *scim = scim_attrs(subj);
    json_t *r = json_is_object(scim) ? json_deep_copy(scim) : json_object(), *groups = json_array();
    json_t *g, *m;
    size_t i, k;
    char loc[600];
    json_array_foreach(json_object_get(doc, "groups"), i, g)
    {
        json_array_foreach(json_object_get(g, "members"), k, m)
        {
            if (strcmp(scim_jstr(json_object_get(m, "kind")), "subject") ||
                strcmp(scim_jstr(json_object_get(m, "id")), id))
                continue;
            const char *gid = scim_jstr(json_object_get(g, "id"));
            snprintf(loc, sizeof loc, SCIM_PREFIX "/Groups/%s", gid);
            json_array_append_new(groups, json_pack("{s:s, s:s, s:s, s:s}", "value", gid, "display",
                                                    scim_attr_or_id(g, "displayName"), "type",
                                                    "direct", "$ref", loc));
        }
    }
    json_object_set_new(r, "schemas",
                        scim_get_ci(r, SCIM_ENTERPRISE_SCHEMA)
                            ? json_pack("[s, s]", SCIM_USER_SCHEMA, SCIM_ENTERPRISE_SCHEMA)
                            : json_pack("[s]", SCIM_USER_SCHEMA));
    json_object_set_new(r, "id", json_string(id));
    json_object_set_new(r, "userName", json_string(user_name(subj)));
    json_object_del(r, "active");
    json_object_set_new(r, "active", json_boolean(!inactive(doc, id)));
    json_object_set_new(r, "groups", groups);
    json_object_set_new(r, "meta", scim_meta(subj, "User", id));
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

/* Writes user id (old: its subject now, or NULL) with SCIM attributes res (borrowed), in one
 * change; 0, or fills resp. */
static int user_write(http_ctx_t *ctx, json_t *doc, const char *id, json_t *old, json_t *res,
                      http_resp_t *resp)
{
    int active;
    if (active_of(scim_get_ci(res, "active"), &active)) {
        scim_error(resp, 400, "invalidValue", "active must be true or false");
        return -1;
    }
    json_t *un = scim_get_ci(res, "userName");
    if (!json_is_string(un) || !json_string_length(un)) {
        scim_error(resp, 400, "invalidValue", "userName is required (a non-empty string)");
        return -1;
    }
    /* kept: the resource less what the server owns, and passwords, never stored */
    static const char *const drop[] = {"schemas",  "id",     "meta", "groups",
                                       "password", "active", NULL};
    json_t *attrs = scim_stored(old, res, drop);
    json_t *put =
        json_pack("{s:s, s:s, s:s, s:o}", "op", "put_subject", "id", id, "kind",
                  old ? scim_jstr(json_object_get(old, "kind")) : "user", "attributes", attrs);
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
        if (status == 201)
            scim_location(resp, "Users", id);
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
        if (strcmp(scim_jstr(json_object_get(s, "kind")), "user"))
            continue; /* services are not users */
        if (f.present) {
            const char *v = !strcasecmp(f.attr, "userName") ? user_name(s)
                            : !strcasecmp(f.attr, "id")
                                ? scim_jstr(json_object_get(s, "id"))
                                : scim_jstr(scim_get_ci(scim_attrs(s), f.attr));
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
    const char *name = scim_jstr(scim_get_ci(body, "userName"));
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
    json_t *body, *doc, *old, *ops, *res = NULL;
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
    if (scim_patch_all(res, ops, resp))
        goto done;
    if (user_write(ctx, doc, id, old, res, resp) == 0)
        user_answer(ctx, id, 200, resp);
done:
    json_decref(res);
    json_decref(doc);
    json_decref(body);
}

void scim_user_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    scim_delete(ctx, req, resp, "subjects", "delete_subject");
}
