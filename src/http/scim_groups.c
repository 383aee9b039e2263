/* scim_groups.c: SCIM Groups as groups of the permission model. A group's id is made from the
 * displayName it was created with (each space, control character or ':' becomes '-': the ACLs
 * of a corpus name it `group:<id>`); its SCIM attributes are kept in the group's attributes
 * under "scim". Members are subjects (users) or groups, by id; a PUT or PATCH that changes them
 * becomes the add_member and remove_member operations of the difference, all in one change.
 * Relies on http/scim.h and the public API. */
#include "base/mem.h"
#include "http/scim.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *display_name(json_t *g)
{
    return scim_attr_or_id(g, "displayName");
}

static json_t *group_resource(json_t *g, int with_members)
{
    const char *id = scim_jstr(json_object_get(g, "id"));
    json_t *scim = scim_attrs(g);
    json_t *r = json_is_object(scim) ? json_deep_copy(scim) : json_object(), *m;
    char loc[600];
    size_t i;
    json_object_set_new(r, "schemas", json_pack("[s]", SCIM_GROUP_SCHEMA));
    json_object_set_new(r, "id", json_string(id));
    json_object_set_new(r, "displayName", json_string(display_name(g)));
    if (with_members) {
        json_t *members = json_array();
        json_array_foreach(json_object_get(g, "members"), i, m)
        {
            int grp = !strcmp(scim_jstr(json_object_get(m, "kind")), "group");
            const char *mid = scim_jstr(json_object_get(m, "id"));
            snprintf(loc, sizeof loc, SCIM_PREFIX "/%s/%s", grp ? "Groups" : "Users", mid);
            json_array_append_new(members, json_pack("{s:s, s:s, s:s}", "value", mid, "type",
                                                     grp ? "Group" : "User", "$ref", loc));
        }
        json_object_set_new(r, "members", members);
    }
    json_object_set_new(r, "meta", scim_meta(g, "Group", id));
    return r;
}

/* The model id a displayName gives a new group; "" when none can be made. */
static void id_from_name(const char *name, char *out, size_t cap)
{
    size_t n = 0;
    for (; name[n] && n + 1 < cap && n < 127; n++) {
        unsigned char c = (unsigned char)name[n];
        out[n] = c <= ' ' || c == ':' || c == 0x7f ? '-' : (char)c;
    }
    while (n && name[n] && ((unsigned char)name[n] & 0xc0) == 0x80)
        n--; /* cut whole UTF-8 characters only */
    out[n] = '\0';
}

/* Reads members (an array of {"value"}) into the model's terms: [{"id", "kind"}]. NULL with
 * resp filled when one names neither a user nor a group. */
static json_t *members_wanted(json_t *doc, json_t *members, http_resp_t *resp)
{
    json_t *out = json_array(), *m;
    size_t i;
    if (members && !json_is_array(members)) {
        scim_error(resp, 400, "invalidValue", "members must be a list of {\"value\": ID}");
        json_decref(out);
        return NULL;
    }
    json_array_foreach(members, i, m)
    {
        const char *v = scim_jstr(scim_get_ci(m, "value"));
        const char *kind = scim_find(doc, "subjects", v) ? "subject"
                           : scim_find(doc, "groups", v) ? "group"
                                                         : NULL;
        if (!kind) {
            scim_error(resp, 400, "invalidValue", "members[%zu]: no user or group [%.200s]", i, v);
            json_decref(out);
            return NULL;
        }
        json_array_append_new(out, json_pack("{s:s, s:s}", "id", v, "kind", kind));
    }
    return out;
}

static int has_member(json_t *list, json_t *m)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) if (json_equal(x, m)) return 1;
    return 0;
}

/* Writes group id (old: the group now, or NULL) with SCIM attributes res (borrowed) and, when
 * members is not NULL, exactly those members; one change. 0, or fills resp. */
static int group_write(http_ctx_t *ctx, const char *id, json_t *old, json_t *res, json_t *members,
                       http_resp_t *resp)
{
    static const char *const drop[] = {"schemas", "id", "meta", "members", NULL};
    json_t *d = scim_get_ci(res, "displayName"), *m;
    size_t i;
    if (!json_is_string(d) || !json_string_length(d)) {
        scim_error(resp, 400, "invalidValue", "displayName is required (a non-empty string)");
        return -1;
    }
    json_t *ops = json_pack("[{s:s, s:s, s:o}]", "op", "put_group", "id", id, "attributes",
                            scim_stored(old, res, drop));
    json_t *cur = json_object_get(old, "members");
    json_array_foreach(cur, i, m) if (members && !has_member(members, m)) json_array_append_new(
        ops, json_pack("{s:s, s:s, s:O, s:O}", "op", "remove_member", "group", id, "member",
                       json_object_get(m, "id"), "member_kind", json_object_get(m, "kind")));
    json_array_foreach(members, i, m) if (!has_member(cur, m)) json_array_append_new(
        ops, json_pack("{s:s, s:s, s:O, s:O}", "op", "add_member", "group", id, "member",
                       json_object_get(m, "id"), "member_kind", json_object_get(m, "kind")));
    return scim_apply(ctx, ops, resp);
}

static void group_answer(http_ctx_t *ctx, const http_req_t *req, const char *id, int status,
                         http_resp_t *resp)
{
    json_t *doc = scim_model(ctx, resp), *g;
    const char *ex = http_arg(req, "excludedAttributes");
    if (!doc)
        return;
    if (!(g = scim_find(doc, "groups", id)))
        scim_error(resp, 404, NULL, "no group [%s]", id);
    else {
        scim_reply(resp, status, group_resource(g, !(ex && strcasestr(ex, "members"))));
        if (status == 201)
            scim_location(resp, "Groups", id);
    }
    json_decref(doc);
}

void scim_groups_list(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    static const char *const attrs[] = {"displayName", "externalId", "id", NULL};
    const char *ex = http_arg(req, "excludedAttributes");
    scim_filter_t f;
    json_t *doc, *g, *out;
    size_t i;
    if (scim_gate(ctx, req, resp) || scim_filter_read(req, attrs, &f, resp) ||
        !(doc = scim_model(ctx, resp)))
        return;
    out = json_array();
    json_array_foreach(json_object_get(doc, "groups"), i, g)
    {
        if (f.present) {
            const char *v = !strcasecmp(f.attr, "displayName") ? display_name(g)
                            : !strcasecmp(f.attr, "id")
                                ? scim_jstr(json_object_get(g, "id"))
                                : scim_jstr(scim_get_ci(scim_attrs(g), f.attr));
            if (!strcasecmp(f.attr, "displayName") ? strcasecmp(v, f.value) : strcmp(v, f.value))
                continue;
        }
        json_array_append_new(out, group_resource(g, !(ex && strcasestr(ex, "members"))));
    }
    json_decref(doc);
    scim_list_reply(req, out, resp);
}

void scim_group_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    if (scim_gate(ctx, req, resp))
        return;
    group_answer(ctx, req, req->seg[3], 200, resp);
}

void scim_group_create(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    json_t *body, *doc = NULL, *g, *members = NULL;
    char id[128];
    size_t i;
    if (scim_gate(ctx, req, resp) || !(body = scim_body(req, resp)))
        return;
    const char *name = scim_jstr(scim_get_ci(body, "displayName"));
    id_from_name(name, id, sizeof id);
    if (!*name || !*id)
        scim_error(resp, 400, "invalidValue", "displayName is required (a non-empty string)");
    else if ((doc = scim_model(ctx, resp))) {
        int taken = scim_find(doc, "groups", id) != NULL;
        json_array_foreach(json_object_get(doc, "groups"), i, g) taken |=
            !strcasecmp(display_name(g), name);
        if (taken)
            scim_error(resp, 409, "uniqueness", "a group [%.200s] exists", name);
        else if ((members = members_wanted(doc, scim_get_ci(body, "members"), resp)) &&
                 group_write(ctx, id, NULL, body, members, resp) == 0)
            group_answer(ctx, req, id, 201, resp);
    }
    json_decref(members);
    json_decref(doc);
    json_decref(body);
}

void scim_group_replace(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    const char *id = req->seg[3];
    json_t *body, *doc, *old, *members = NULL;
    if (scim_gate(ctx, req, resp) || !(body = scim_body(req, resp)))
        return;
    if ((doc = scim_model(ctx, resp))) {
        if (!(old = scim_find(doc, "groups", id)))
            scim_error(resp, 404, NULL, "no group [%s]", id);
        else if ((members = members_wanted(doc, scim_get_ci(body, "members"), resp)) &&
                 group_write(ctx, id, old, body, members, resp) == 0)
            group_answer(ctx, req, id, 200, resp);
        json_decref(doc);
    }
    json_decref(members);
    json_decref(body);
}

void scim_group_patch(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    const char *id = req->seg[3];
    json_t *body, *doc, *old, *ops, *res = NULL, *members = NULL;
    if (scim_gate(ctx, req, resp) || !(body = scim_body(req, resp)))
        return;
    if (!(ops = scim_patch_ops(body, resp)) || !(doc = scim_model(ctx, resp))) {
        json_decref(body);
        return;
    }
    if (!(old = scim_find(doc, "groups", id))) {
        scim_error(resp, 404, NULL, "no group [%s]", id);
        goto done;
    }
    res = group_resource(old, 1);
    if (scim_patch_all(res, ops, resp))
        goto done;
    if ((members = members_wanted(doc, scim_get_ci(res, "members"), resp)) &&
        group_write(ctx, id, old, res, members, resp) == 0)
        group_answer(ctx, req, id, 200, resp);
done:
    json_decref(members);
    json_decref(res);
    json_decref(doc);
    json_decref(body);
}

void scim_group_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    scim_delete(ctx, req, resp, "groups", "delete_group");
}
