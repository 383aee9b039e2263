/* ops.c: the op vocabulary (put_subject, add_member, grant, ...) that every model change goes
 * through, each validated completely before it touches the state. Relies on jansson, graph.c
 * and cond.c. */
#include "authz/internal.h"
#include "authz/rebac.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "base/date.h"
#include "base/mem.h"

typedef struct op_ctx {
    const json_t *op;
    const char *name; /* the op's name, for messages */
    bool mutated;     /* set once the state has started to change */
} op_ctx_t;

int az_name_check(const char *s, const char *field, cdn_err_t *err)
{
    size_t n = strlen(s);
    if (!n)
        return cdn_err_set(err, CDN_ERR_INVALID, "%s is empty; give a name", field);
    if (n >= AUTHZ_NAME_MAX)
        return cdn_err_set(err, CDN_ERR_LIMIT, "%s is %zu bytes long; the limit is %d", field, n,
                           AUTHZ_NAME_MAX - 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == ':' || c == 0x7f)
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "%s '%s' holds a space, control character or ':'; names may not "
                               "(':' separates a principal's kind from its name)",
                               field, s);
    }
    return CDN_OK;
}

/* Refuses keys outside `allowed` (NULL-terminated) so that a misspelt field is an error. */
static int only_fields(const json_t *obj, const char *what, const char *const *allowed,
                       cdn_err_t *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = !strcmp(*a, k);
        if (!ok)
            return cdn_err_set(err, CDN_ERR_INVALID, "%s: unknown field '%s'; remove it", what, k);
    }
    return CDN_OK;
}

static int str_field(const op_ctx_t *c, const char *field, bool required, bool is_name,
                     const char **out, cdn_err_t *err)
{
    const json_t *v = json_object_get(c->op, field);
    *out = NULL;
    if (!v) {
        if (required)
            return cdn_err_set(err, CDN_ERR_INVALID, "%s: field '%s' is missing", c->name, field);
        return CDN_OK;
    }
    if (!json_is_string(v))
        return cdn_err_set(err, CDN_ERR_INVALID, "%s: field '%s' must be a string", c->name, field);
    *out = json_string_value(v);
    if (strlen(*out) != json_string_length(v))
        return cdn_err_set(err, CDN_ERR_INVALID, "%s: field '%s' holds a NUL byte", c->name, field);
    if (is_name) {
        char what[64];
        snprintf(what, sizeof(what), "%s.%s", c->name, field);
        return az_name_check(*out, what, err);
    }
    return CDN_OK;
}

/* member_kind / to_kind: "subject" (default) or "group". */
static int kind_field(const op_ctx_t *c, const char *field, int *is_group, cdn_err_t *err)
{
    const char *k;
    int rc = str_field(c, field, false, false, &k, err);
    if (rc)
        return rc;
    *is_group = k && !strcmp(k, "group");
    if (k && !*is_group && strcmp(k, "subject"))
        return cdn_err_set(err, CDN_ERR_INVALID, "%s: %s is '%s'; use \"subject\" or \"group\"",
                           c->name, field, k);
    return CDN_OK;
}

static int lookup(const az_state_t *st, const op_ctx_t *c, int is_group, const char *id,
                  uint32_t *idx, cdn_err_t *err)
{
    bool found = is_group ? az_group_get(st, id, idx) : az_subject_get(st, id, idx);
    if (!found)
        return cdn_err_set(err, CDN_ERR_NOT_FOUND, "%s: no %s '%s'; create it first with %s",
                           c->name, is_group ? "group" : "subject", id,
                           is_group ? "put_group" : "put_subject");
    return CDN_OK;
}

/* Appends an entity slot of `size` bytes to *arr, zeroed. */
static void *slot_add(void **arr, uint32_t *n, uint32_t *cap, size_t size)
{
    size_t c = *cap;
    if (cdn_grow(arr, &c, (size_t)*n + 1, size))
        return NULL;
    *cap = (uint32_t)c;
    char *slot = (char *)*arr + (size_t)*n * size;
    memset(slot, 0, size);
    (*n)++;
    return slot;
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Reads put_subject's "tenants" (absent or null: none) into a sorted array of unique names. */
static int tenants_parse(const json_t *t, json_t **out, cdn_err_t *err)
{
    size_t i;
    json_t *v;
    *out = NULL;
    if (!t || json_is_null(t))
        return CDN_OK;
    if (!json_is_array(t))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "put_subject: tenants must be an array of tenant names");
    if (json_array_size(t) > AUTHZ_TENANTS_MAX)
        return cdn_err_set(err, CDN_ERR_LIMIT, "put_subject: %zu tenants; the limit is %d",
                           json_array_size(t), AUTHZ_TENANTS_MAX);
    const char **names = cdn_malloc((json_array_size(t) + 1) * sizeof *names);
    size_t n = 0;
    int rc = names ? CDN_OK : cdn_err_set(err, CDN_ERR_NOMEM, "put_subject: out of memory");
    json_array_foreach(t, i, v)
    {
        if (rc)
            break;
        if (!json_is_string(v))
            rc = cdn_err_set(err, CDN_ERR_INVALID, "put_subject: tenants[%zu] is not a string", i);
        else if ((rc = acl_tag_check(json_string_value(v), "put_subject: tenant", err)) == CDN_OK)
            names[n++] = json_string_value(v);
    }
    if (!rc && n) {
        qsort(names, n, sizeof *names, cmp_cstr);
        if (!(*out = json_array()))
            rc = cdn_err_set(err, CDN_ERR_NOMEM, "put_subject: out of memory");
        for (size_t k = 0; k < n && !rc; k++)
            if ((k == 0 || strcmp(names[k - 1], names[k])) &&
                json_array_append_new(*out, json_string(names[k])))
                rc = cdn_err_set(err, CDN_ERR_NOMEM, "put_subject: out of memory");
    }
    cdn_free(names);
    if (rc) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

static int op_put_subject(az_state_t *st, op_ctx_t *c, cdn_err_t *err)
{
    static const char *const f[] = {"op", "id", "kind", "attributes", "tenants", NULL};
    const char *id, *kind;
    json_t *tenants;
    int rc;
    if ((rc = only_fields(c->op, c->name, f, err)) ||
        (rc = str_field(c, "id", true, true, &id, err)) ||
        (rc = str_field(c, "kind", false, false, &kind, err)))
        return rc;
    if (kind && strcmp(kind, "user") && strcmp(kind, "service"))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "put_subject: kind is '%s'; use \"user\" or \"service\"", kind);
    const json_t *a = json_object_get(c->op, "attributes");
    if (a && !json_is_object(a))
        return cdn_err_set(err, CDN_ERR_INVALID, "put_subject: attributes must be a JSON object");
    if ((rc = tenants_parse(json_object_get(c->op, "tenants"), &tenants, err)))
        return rc;
    json_t *attrs = a ? json_deep_copy(a) : json_object();
    if (!attrs) {
        json_decref(tenants);
        return cdn_err_set(err, CDN_ERR_NOMEM, "put_subject: out of memory");
    }
    uint8_t k = kind && !strcmp(kind, "service") ? AZ_KIND_SERVICE : AZ_KIND_USER;
    uint32_t idx;
    if (!az_subject_get(st, id, &idx) && az_subject_add(st, id, &idx)) {
        json_decref(attrs);
        json_decref(tenants);
        return cdn_err_set(err, CDN_ERR_NOMEM, "put_subject: out of memory");
    }
    json_decref(st->subjects[idx].attrs);
    json_decref(st->subjects[idx].tenants);
    st->subjects[idx].attrs = attrs;
    st->subjects[idx].tenants = tenants;
    st->subjects[idx].kind = k;
    return CDN_OK;
}

/* Appends a new entity called id to a table and its name map; the map slot is reserved first,
 * so that nothing can fail after the entity exists. */
static int entity_add(void **arr, uint32_t *n, uint32_t *cap, size_t size, az_map_t *map,
                      const char *id, uint32_t *idx)
{
    char *copy = cdn_strdup(id);
    if (!copy || az_map_put(map, copy, *n)) {
        cdn_free(copy);
        return CDN_ERR_NOMEM;
    }
    char **slot = slot_add(arr, n, cap, size);
    if (!slot) {
        az_map_del(map, copy);
        cdn_free(copy);
        return CDN_ERR_NOMEM;
    }
    *slot = copy; /* every entity starts with its id */
    *idx = *n - 1;
    return CDN_OK;
}

int az_subject_add(az_state_t *st, const char *id, uint32_t *idx)
{
    return entity_add((void **)&st->subjects, &st->nsubjects, &st->capsubjects,
                      sizeof(az_subject_t), &st->subject_map, id, idx);
}

int az_group_add(az_state_t *st, const char *id, uint32_t *idx)
{
    return entity_add((void **)&st->groups, &st->ngroups, &st->capgroups, sizeof(az_group_t),
                      &st->group_map, id, idx);
}

int az_role_add(az_state_t *st, const char *id, uint32_t *idx)
{
    return entity_add((void **)&st->roles, &st->nroles, &st->caproles, sizeof(az_role_t),
                      &st->role_map, id, idx);
}

static void grants_clear(az_grants_t *gs)
{
    for (uint32_t i = 0; i < gs->n; i++)
        az_grant_free(gs->v[i]);
    cdn_free(gs->v);
    memset(gs, 0, sizeof(*gs));
}

static int op_delete_subject(az_state_t *st, op_ctx_t *c, cdn_err_t *err)
{
    static const char *const f[] = {"op", "id", NULL};
    const char *id;
    uint32_t idx;
    int rc;
    if ((rc = only_fields(c->op, c->name, f, err)) ||
        (rc = str_field(c, "id", true, true, &id, err)) || (rc = lookup(st, c, 0, id, &idx, err)))
        return rc;
    az_subject_t *s = &st->subjects[idx];
    az_graph_delete_subject(st, idx);
    grants_clear(&s->grants);
    json_decref(s->attrs);
    json_decref(s->tenants);
    s->attrs = s->tenants = NULL;
    az_map_del(&st->subject_map, s->id);
    cdn_free(s->id);
    s->id = NULL;
    return CDN_OK;
}

static int op_put_group(az_state_t *st, op_ctx_t *c, cdn_err_t *err)
{
    static const char *const f[] = {"op", "id", "attributes", NULL};
    const char *id;
    uint32_t idx;
    int rc;
    if ((rc = only_fields(c->op, c->name, f, err)) ||
        (rc = str_field(c, "id", true, true, &id, err)))
        return rc;
    const json_t *a = json_object_get(c->op, "attributes");
    json_t *attrs = NULL;
    if (a && !json_is_null(a) && !json_is_object(a))
        return cdn_err_set(err, CDN_ERR_INVALID, "put_group: attributes must be a JSON object");
    if (json_is_object(a) && json_object_size(a) && !(attrs = json_deep_copy(a)))
        return cdn_err_set(err, CDN_ERR_NOMEM, "put_group: out of memory");
    if (!az_group_get(st, id, &idx) && az_group_add(st, id, &idx)) {
        json_decref(attrs);
        return cdn_err_set(err, CDN_ERR_NOMEM, "put_group: out of memory");
    }
    if (a) { /* given: replaces them ({} or null clears); absent: they stay */
        json_decref(st->groups[idx].attrs);
        st->groups[idx].attrs = attrs;
    }
    return CDN_OK;
}

static int op_delete_group(az_state_t *st, op_ctx_t *c, cdn_err_t *err)
{
    static const char *const f[] = {"op", "id", NULL};
    const char *id;
    uint32_t idx;
    int rc;
    if ((rc = only_fields(c->op, c->name, f, err)) ||
        (rc = str_field(c, "id", true, true, &id, err)) || (rc = lookup(st, c, 1, id, &idx, err)))
        return rc;
    c->mutated = true;
    if (az_graph_delete_group(st, idx))
        return cdn_err_set(err, CDN_ERR_NOMEM, "delete_group: out of memory");
    az_group_t *g = &st->groups[idx];
    grants_clear(&g->grants);
    az_ids_free(&g->anc);
    az_map_del(&st->group_map, g->id);
    cdn_free(g->id);
    json_decref(g->attrs);
    g->id = NULL;
    g->attrs = NULL;
    return CDN_OK;
}

static int membership_fields(az_state_t *st, op_ctx_t *c, uint32_t *group, uint32_t *member,
                             int *is_group, cdn_err_t *err)
{
    static const char *const f[] = {"op", "group", "member", "member_kind", NULL};
    const char *g, *mem;
    int rc;
    if ((rc = only_fields(c->op, c->name, f, err)) ||
        (rc = str_field(c, "group", true, true, &g, err)) ||
        (rc = str_field(c, "member", true, true, &mem, err)) ||
        (rc = kind_field(c, "member_kind", is_group, err)) ||
        (rc = lookup(st, c, 1, g, group, err)) || (rc = lookup(st, c, *is_group, mem, member, err)))
        return rc;
    return CDN_OK;
}

static int op_add_member(az_state_t *st, op_ctx_t *c, cdn_err_t *err)
{
    uint32_t g, mem;
    int is_group, rc;
    if ((rc = membership_fields(st, c, &g, &mem, &is_group, err)))
        return rc;
    rc = az_graph_add_member(st, g, mem, is_group, err);
    c->mutated = rc == CDN_ERR_NOMEM;
    return rc;
}

static int op_remove_member(az_state_t *st, op_ctx_t *c, cdn_err_t *err)
{
    uint32_t g, mem;
    int is_group, rc;
    if ((rc = membership_fields(st, c, &g, &mem, &is_group, err)))
        return rc;
    bool present = is_group ? az_ids_has(&st->groups[mem].parents, g)
                            : az_ids_has(&st->subjects[mem].groups, g);
    if (!present)
        return cdn_err_set(err, CDN_ERR_NOT_FOUND,
                           "remove_member: %s '%s' is not a direct member of group '%s'",
                           is_group ? "group" : "subject",
                           is_group ? st->groups[mem].id : st->subjects[mem].id, st->groups[g].id);
    c->mutated = true;
    if (az_graph_remove_member(st, g, mem, is_group))
        return cdn_err_set(err, CDN_ERR_NOMEM, "remove_member: out of memory");
    return CDN_OK;
}

static int resource_check(const char *r, const char *field, az_perm_t *p, cdn_err_t *err)
{
    size_t n = strlen(r);
    if (n >= AUTHZ_RESOURCE_MAX)
        return cdn_err_set(err, CDN_ERR_LIMIT, "%s.resource is %zu bytes; the limit is %d", field,
                           n, AUTHZ_RESOURCE_MAX - 1);
    const char *star = strchr(r, '*');
    if (!strcmp(r, "*")) {
        p->res_kind = AZ_RES_ANY;
        return CDN_OK;
    }
    const char *colon = strchr(r, ':');
    if (!colon || colon == r || (star && star != r + n - 1) || (star && star <= colon))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "%s.resource '%s' is not a pattern; write \"type:id\", "
                           "\"type:prefix*\" or \"*\"",
                           field, r);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)r[i] < ' ')
            return cdn_err_set(err, CDN_ERR_INVALID, "%s.resource holds a control character",
                               field);
    p->res_kind = star ? AZ_RES_PREFIX : AZ_RES_EXACT;
    p->res_len = (uint32_t)(star ? n - 1 : n);
    return CDN_OK;
}

/* A deny that can reach a label ("label:NAME" resources) is applied to searches as well as to
 * decisions, by leaving out the chunks that carry the label: it must then name one label
 * exactly and hold without a condition, since a search has no request to test one against.
 * "*" denies every collection too, so searches stop before labels matter. */
static int label_deny_check(const char *res, const az_perm_t *p, const json_t *cond,
                            const char *field, cdn_err_t *err)
{
    static const char lbl[] = "label:";
    size_t n = p->res_kind == AZ_RES_PREFIX ? p->res_len : strlen(res), m = sizeof lbl - 1;
    bool reaches =
        p->res_kind == AZ_RES_PREFIX ? !strncmp(res, lbl, n < m ? n : m) : !strncmp(res, lbl, m);
    if (!reaches || p->res_kind == AZ_RES_ANY)
        return CDN_OK;
    if (p->res_kind == AZ_RES_PREFIX)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "%s: a deny on labels names one label (\"label:NAME\"), not the "
                           "pattern '%s'",
                           field, res);
    if (cond && !json_is_null(cond))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "%s: a deny on '%s' takes no condition: searches apply it, and a "
                           "search has no request context to test one against",
                           field, res);
    return acl_tag_check(res + m, field, err);
}

int az_perm_build(const json_t *src, const char *field, az_perm_t *out, cdn_err_t *err)
{
    static const char *const f[] = {"resource", "action",     "condition",
                                    "effect",   "authorizer", NULL};
    memset(out, 0, sizeof(*out));
    if (!json_is_object(src))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "%s must be an object {\"resource\", \"action\", \"condition\"?}",
                           field);
    const json_t *res = json_object_get(src, "resource"), *act = json_object_get(src, "action");
    const json_t *cond = json_object_get(src, "condition"), *eff = json_object_get(src, "effect");
    int rc = only_fields(src, field, f, err);
    if (rc)
        return rc;
    if (eff && !json_is_null(eff) &&
        (!json_is_string(eff) ||
         (strcmp(json_string_value(eff), "allow") && strcmp(json_string_value(eff), "deny"))))
        return cdn_err_set(err, CDN_ERR_INVALID, "%s.effect must be \"allow\" or \"deny\"", field);
    out->deny = json_is_string(eff) && !strcmp(json_string_value(eff), "deny");
    if (!json_is_string(res) || !json_is_string(act))
        return cdn_err_set(err, CDN_ERR_INVALID, "%s needs string fields resource and action",
                           field);
    if ((rc = resource_check(json_string_value(res), field, out, err)))
        return rc;
    char lower[AUTHZ_ACTION_MAX];
    const char *a = json_string_value(act);
    if (!*a || strchr(a, ' ') || !az_lower(a, lower, sizeof(lower)))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "%s.action '%s' must be 1..%d bytes without spaces", field, a,
                           AUTHZ_ACTION_MAX - 1);
    out->any_action = !strcmp(lower, "*");
    if (out->deny && (rc = label_deny_check(json_string_value(res), out, cond, field, err)))
        return rc;
    const json_t *by = json_object_get(src, "authorizer");
    if (by && !json_is_null(by)) {
        const char *b = json_string_value(by);
        size_t n = b ? strlen(b) : 0;
        if (!n || n > 63 || strspn(b, "abcdefghijklmnopqrstuvwxyz0123456789_-") != n)
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "%s.authorizer must name an authorizer: 1 to 63 of [a-z0-9_-]",
                               field);
        if (out->deny)
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "%s: a deny cannot be delegated to an authorizer (a deny must "
                               "hold whether or not a service answers)",
                               field);
        if (!(out->authorizer = cdn_strdup(b)))
            goto nomem;
    }
    if (!(out->resource = cdn_strdup(json_string_value(res))) || !(out->action = cdn_strdup(lower)))
        goto nomem;
    if (cond && !json_is_null(cond)) {
        if ((rc = az_cond_compile(cond, &out->cond, err)))
            goto fail;
        out->cond_text = json_dumps(cond, JSON_COMPACT | JSON_SORT_KEYS);
        if (!out->cond_text || !(out->cond_src = json_deep_copy(cond)))
            goto nomem;
        if (strlen(out->cond_text) >= AUTHZ_COND_TEXT_MAX) {
            rc = cdn_err_set(err, CDN_ERR_LIMIT,
                             "%s.condition is %zu bytes as JSON; the limit "
                             "is %d",
                             field, strlen(out->cond_text), AUTHZ_COND_TEXT_MAX - 1);
            goto fail;
        }
        /* json_dumps used malloc: move it to our allocator so az_perm_clear can free it */
        char *t = cdn_strdup(out->cond_text);
        free(out->cond_text);
        out->cond_text = t;
        if (!t)
            goto nomem;
    }
    return CDN_OK;
nomem:
    rc = cdn_err_set(err, CDN_ERR_NOMEM, "%s: out of memory", field);
fail:
    az_perm_clear(out);
    return rc;
}

static int op_put_role(az_state_t *st, op_ctx_t *c, cdn_err_t *err)
{
    static const char *const f[] = {"op", "id", "permissions", NULL};
    const char *id;
    int rc;
    if ((rc = only_fields(c->op, c->name, f, err)) ||
        (rc = str_field(c, "id", true, true, &id, err)))
        return rc;
    const json_t *ps = json_object_get(c->op, "permissions");
    if (ps && !json_is_array(ps))
        return cdn_err_set(err, CDN_ERR_INVALID, "put_role: permissions must be an array");
    size_t n = ps ? json_array_size(ps) : 0;
    az_perm_t *perms = n ? cdn_calloc(n, sizeof(*perms)) : NULL;
    if (n && !perms)
        return cdn_err_set(err, CDN_ERR_NOMEM, "put_role: out of memory");
    for (size_t i = 0; i < n; i++) {
        char field[48];
        snprintf(field, sizeof(field), "put_role.permissions[%zu]", i);
        if ((rc = az_perm_build(json_array_get(ps, i), field, &perms[i], err))) {
            for (size_t k = 0; k < i; k++)
                az_perm_clear(&perms[k]);
            cdn_free(perms);
            return rc;
        }
    }
    for (size_t i = 0; i < n; i++)
        st->denies |= perms[i].deny;
    uint32_t idx;
    az_role_t *r = NULL;
    if (!az_role_get(st, id, &idx)) {
        if (az_role_add(st, id, &idx)) {
            for (size_t k = 0; k < n; k++)
                az_perm_clear(&perms[k]);
            cdn_free(perms);
            return cdn_err_set(err, CDN_ERR_NOMEM, "put_role: out of memory");
        }
        r = &st->roles[idx];
    } else {
        r = &st->roles[idx];
        for (uint32_t k = 0; k < r->nperms; k++)
            az_perm_clear(&r->perms[k]);
        cdn_free(r->perms);
    }
    r->perms = perms;
    r->nperms = (uint32_t)n;
    return CDN_OK;
}

static void grants_drop_role(az_grants_t *gs, int64_t role)
{
    uint32_t w = 0;
    for (uint32_t i = 0; i < gs->n; i++) {
        if (gs->v[i]->role == role)
            az_grant_free(gs->v[i]);
        else
            gs->v[w++] = gs->v[i];
    }
    gs->n = w;
}

static int op_delete_role(az_state_t *st, op_ctx_t *c, cdn_err_t *err)
{
    static const char *const f[] = {"op", "id", NULL};
    const char *id;
    uint32_t idx;
    int rc;
    if ((rc = only_fields(c->op, c->name, f, err)) ||
        (rc = str_field(c, "id", true, true, &id, err)))
        return rc;
    if (!az_role_get(st, id, &idx))
        return cdn_err_set(err, CDN_ERR_NOT_FOUND, "delete_role: no role '%s'", id);
    for (uint32_t i = 0; i < st->nsubjects; i++)
        grants_drop_role(&st->subjects[i].grants, idx);
    for (uint32_t i = 0; i < st->ngroups; i++)
        grants_drop_role(&st->groups[i].grants, idx);
    az_role_t *r = &st->roles[idx];
    for (uint32_t k = 0; k < r->nperms; k++)
        az_perm_clear(&r->perms[k]);
    cdn_free(r->perms);
    r->perms = NULL;
    r->nperms = 0;
    az_map_del(&st->role_map, r->id);
    cdn_free(r->id);
    r->id = NULL;
    return CDN_OK;
}

/* Parses grant/revoke fields into a fresh grant and finds where it goes. */
static int grant_parse(az_state_t *st, op_ctx_t *c, az_grant_t **out, az_grants_t **owner,
                       cdn_err_t *err)
{
    static const char *const f[] = {"op",         "to",    "to_kind", "role",
                                    "permission", "scope", "valid",   NULL};
    const char *to, *role;
    int is_group, rc;
    uint32_t to_idx, role_idx = 0;
    if ((rc = only_fields(c->op, c->name, f, err)) ||
        (rc = str_field(c, "to", true, true, &to, err)) ||
        (rc = kind_field(c, "to_kind", &is_group, err)) ||
        (rc = str_field(c, "role", false, true, &role, err)) ||
        (rc = lookup(st, c, is_group, to, &to_idx, err)))
        return rc;
    const json_t *perm = json_object_get(c->op, "permission"),
                 *scope = json_object_get(c->op, "scope");
    if (!role == !perm)
        return cdn_err_set(err, CDN_ERR_INVALID, "%s: give exactly one of role or permission",
                           c->name);
    if (role && !az_role_get(st, role, &role_idx))
        return cdn_err_set(err, CDN_ERR_NOT_FOUND, "%s: no role '%s'; create it with put_role",
                           c->name, role);
    const char *stype = NULL, *sid = NULL;
    if (scope && !json_is_null(scope)) {
        static const char *const sf[] = {"type", "id", NULL};
        const json_t *t = json_object_get(scope, "type"), *i = json_object_get(scope, "id");
        if (!json_is_object(scope) || !json_is_string(t) || !json_is_string(i))
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "%s: scope must be {\"type\": \"...\", \"id\": \"...\"}", c->name);
        if ((rc = only_fields(scope, "scope", sf, err)) ||
            (rc = az_name_check(json_string_value(t), "scope.type", err)) ||
            (rc = az_name_check(json_string_value(i), "scope.id", err)))
            return rc;
        stype = json_string_value(t);
        sid = json_string_value(i);
    }
    az_grant_t *g = cdn_calloc(1, sizeof(*g));
    if (!g)
        return cdn_err_set(err, CDN_ERR_NOMEM, "%s: out of memory", c->name);
    g->to_kind = is_group ? AZ_TO_GROUP : AZ_TO_SUBJECT;
    g->to = to_idx;
    g->role = role ? (int64_t)role_idx : -1;
    if (perm) {
        if (!(g->perm = cdn_calloc(1, sizeof(*g->perm))))
            rc = cdn_err_set(err, CDN_ERR_NOMEM, "%s: out of memory", c->name);
        else if ((rc = az_perm_build(perm, "permission", g->perm, err))) {
            cdn_free(g->perm);
            g->perm = NULL;
        }
    }
    if (!rc && stype && (!(g->scope_type = cdn_strdup(stype)) || !(g->scope_id = cdn_strdup(sid))))
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "%s: out of memory", c->name);
    if (!rc)
        rc = az_window_parse(json_object_get(c->op, "valid"), g, c->name, err);
    if (rc) {
        az_grant_free(g);
        return rc;
    }
    *owner = is_group ? &st->groups[to_idx].grants : &st->subjects[to_idx].grants;
    *out = g;
    return CDN_OK;
}

static bool opt_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool grant_eq(const az_grant_t *a, const az_grant_t *b)
{
    if (a->role != b->role || !opt_eq(a->scope_type, b->scope_type) ||
        !opt_eq(a->scope_id, b->scope_id) || a->windowed != b->windowed ||
        (a->windowed && (a->from_us != b->from_us || a->until_us != b->until_us)))
        return false;
    if (a->role >= 0)
        return true;
    return a->perm->deny == b->perm->deny && !strcmp(a->perm->resource, b->perm->resource) &&
           !strcmp(a->perm->action, b->perm->action) &&
           opt_eq(a->perm->cond_text, b->perm->cond_text) &&
           opt_eq(a->perm->authorizer, b->perm->authorizer);
}

static int op_grant(az_state_t *st, op_ctx_t *c, bool revoke, cdn_err_t *err)
{
    az_grant_t *g = NULL;
    az_grants_t *gs = NULL;
    int rc = grant_parse(st, c, &g, &gs, err);
    if (rc)
        return rc;
    uint32_t at = 0;
    while (at < gs->n && !grant_eq(gs->v[at], g))
        at++;
    if (revoke) {
        az_grant_free(g);
        if (at == gs->n)
            return cdn_err_set(err, CDN_ERR_NOT_FOUND,
                               "revoke: no such grant to '%s'; export the model to see grants",
                               json_string_value(json_object_get(c->op, "to")));
        az_grant_free(gs->v[at]);
        memmove(gs->v + at, gs->v + at + 1, (gs->n - at - 1) * sizeof(*gs->v));
        gs->n--;
        return CDN_OK;
    }
    if (at < gs->n) {
        az_grant_free(g); /* granting twice is a no-op */
        return CDN_OK;
    }
    if (az_grants_push(gs, g)) {
        az_grant_free(g);
        return cdn_err_set(err, CDN_ERR_NOMEM, "grant: out of memory");
    }
    st->windows |= g->windowed;
    st->denies |= g->perm && g->perm->deny;
    return CDN_OK;
}

static int window_end(const json_t *valid, const char *key, const char *what, int64_t *us,
                      cdn_err_t *err)
{
    const json_t *v = json_object_get(valid, key);
    double ms;
    if (!v || json_is_null(v))
        return CDN_OK;
    if (!json_is_string(v) ||
        cdn_date_parse(json_string_value(v), json_string_length(v), 0, &ms) != CDN_OK)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "%s: valid.%s must be a date such as \"2026-12-01T09:00:00Z\"", what,
                           key);
    *us = (int64_t)(ms * 1000.0);
    return CDN_OK;
}

int az_window_parse(const json_t *valid, az_grant_t *g, const char *what, cdn_err_t *err)
{
    static const char *const f[] = {"from", "until", NULL};
    int rc;
    g->windowed = false;
    g->from_us = INT64_MIN;
    g->until_us = INT64_MAX;
    if (!valid || json_is_null(valid))
        return CDN_OK;
    if (!json_is_object(valid))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "%s: valid must be {\"from\": date, \"until\": date} (either may "
                           "be left out)",
                           what);
    if ((rc = only_fields(valid, "valid", f, err)) ||
        (rc = window_end(valid, "from", what, &g->from_us, err)) ||
        (rc = window_end(valid, "until", what, &g->until_us, err)))
        return rc;
    if (g->from_us >= g->until_us)
        return cdn_err_set(err, CDN_ERR_INVALID, "%s: valid.until must come after valid.from",
                           what);
    g->windowed = g->from_us != INT64_MIN || g->until_us != INT64_MAX;
    return CDN_OK;
}

int az_grants_push(az_grants_t *gs, az_grant_t *g)
{
    size_t cap = gs->cap;
    void *p = gs->v;
    if (cdn_grow(&p, &cap, (size_t)gs->n + 1, sizeof(*gs->v)))
        return CDN_ERR_NOMEM;
    gs->v = p;
    gs->cap = (uint32_t)cap;
    gs->v[gs->n++] = g;
    return CDN_OK;
}

static int state_apply(az_state_t *st, const json_t *op, bool *mutated, cdn_err_t *err)
{
    *mutated = false;
    if (!json_is_object(op))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "an op must be a JSON object with an \"op\" field");
    const json_t *name = json_object_get(op, "op");
    if (!json_is_string(name))
        return cdn_err_set(err, CDN_ERR_INVALID, "op: field \"op\" is missing or not a string");
    op_ctx_t c = {op, json_string_value(name), false};
    int rc;
    if (!strcmp(c.name, "put_subject"))
        rc = op_put_subject(st, &c, err);
    else if (!strcmp(c.name, "delete_subject"))
        rc = op_delete_subject(st, &c, err);
    else if (!strcmp(c.name, "put_group"))
        rc = op_put_group(st, &c, err);
    else if (!strcmp(c.name, "delete_group"))
        rc = op_delete_group(st, &c, err);
    else if (!strcmp(c.name, "add_member"))
        rc = op_add_member(st, &c, err);
    else if (!strcmp(c.name, "remove_member"))
        rc = op_remove_member(st, &c, err);
    else if (!strcmp(c.name, "put_role"))
        rc = op_put_role(st, &c, err);
    else if (!strcmp(c.name, "delete_role"))
        rc = op_delete_role(st, &c, err);
    else if (!strcmp(c.name, "grant") || !strcmp(c.name, "revoke"))
        rc = op_grant(st, &c, c.name[0] == 'r', err);
    else if (!strcmp(c.name, "put_schema"))
        rc = rb_op_put_schema(st, op, &c.mutated, err);
    else if (!strcmp(c.name, "write_tuples"))
        rc = rb_op_write_tuples(st, op, &c.mutated, err);
    else
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "op '%s' is unknown; use put_subject, delete_subject, put_group, "
                           "delete_group, add_member, remove_member, put_role, delete_role, "
                           "grant, revoke, put_schema or write_tuples",
                           c.name);
    *mutated = c.mutated;
    return rc;
}

int az_state_apply(az_state_t *st, const json_t *op, cdn_err_t *err)
{
    bool mutated;
    return state_apply(st, op, &mutated, err);
}

static int views_reserve(authz_model_t *m)
{
    uint32_t need = m->st->nsubjects;
    if (need <= m->nviews)
        return CDN_OK;
    uint32_t ncap = need < 64 ? 64 : need * 2;
    _Atomic(authz_view_t *) *v = cdn_realloc(m->views, ncap * sizeof(*v));
    if (!v)
        return CDN_ERR_NOMEM;
    for (uint32_t i = m->nviews; i < ncap; i++)
        atomic_init(&v[i], NULL);
    m->views = v;
    m->nviews = ncap;
    return CDN_OK;
}

int authz_apply_json(authz_model_t *m, const json_t *op, cdn_err_t *err)
{
    pthread_rwlock_wrlock(&m->lock);
    int rc;
    bool mutated = false;
    if (m->broken)
        rc = cdn_err_set(err, CDN_ERR_INTERNAL,
                         "the authorization model is broken after an out-of-memory error; "
                         "import or reopen it");
    else if (m->track && az_touch_op(&m->touched, m->st, op))
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory recording the change");
    else
        rc = state_apply(m->st, op, &mutated, err);
    if (rc && mutated) {
        /* Half applied: reads fail closed from now on, and the revision moves so that a
         * request holding a view of the state before starts over (and fails closed). */
        m->broken = true;
        atomic_fetch_add(&m->revision, 1);
    }
    if (!rc) {
        az_model_views_drop(m);
        if (views_reserve(m))
            az_model_views_drop(m); /* no room to cache views: they are simply not cached */
        atomic_fetch_add(&m->revision, 1);
        if (m->changes)
            atomic_fetch_add(m->changes, 1);
    }
    pthread_rwlock_unlock(&m->lock);
    return rc;
}

int authz_apply(authz_model_t *m, const char *op_json, cdn_err_t *err)
{
    json_error_t jerr;
    json_t *op = json_loads(op_json, 0, &jerr);
    if (!op)
        return cdn_err_set(err, CDN_ERR_INVALID, "op is not valid JSON: %s at line %d column %d",
                           jerr.text, jerr.line, jerr.column);
    int rc = authz_apply_json(m, op, err);
    json_decref(op);
    return rc;
}
