/* track.c: which entities each change touched, and each entity's fragment: the part of the
 * model a decision about one subject reads from it (a subject's kind, attributes, direct groups
 * and grants; a group's direct parents and grants; a role's permissions). The permission
 * history keeps a version of a fragment at every revision that changed it, so that a past
 * decision reads a handful of fragments (slice.c) instead of rebuilding a whole past model.
 * Relies on jansson and json.c's grant and permission encoders. */
#include "authz/internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

static int touch_field(az_names_t *t, const json_t *op, char kind, const char *field)
{
    const char *id = json_string_value(json_object_get(op, field));
    return id ? az_names_add(t, kind, id) : CDN_OK;
}

static char kind_of(const json_t *op, const char *field)
{
    const char *k = json_string_value(json_object_get(op, field));
    return k && !strcmp(k, "group") ? AUTHZ_ENT_GROUP : AUTHZ_ENT_SUBJECT;
}

int az_touch_op(az_names_t *t, const az_state_t *st, const json_t *op)
{
    const char *name = json_string_value(json_object_get(op, "op"));
    const char *id = json_string_value(json_object_get(op, "id"));
    uint32_t idx;
    int rc = CDN_OK;
    if (!name)
        return CDN_OK; /* refused by the op code */
    if (!strcmp(name, "put_subject") || !strcmp(name, "delete_subject"))
        return touch_field(t, op, AUTHZ_ENT_SUBJECT, "id");
    if (!strcmp(name, "put_group"))
        return touch_field(t, op, AUTHZ_ENT_GROUP, "id");
    if (!strcmp(name, "put_role"))
        return touch_field(t, op, AUTHZ_ENT_ROLE, "id");
    if (!strcmp(name, "add_member") || !strcmp(name, "remove_member"))
        return touch_field(t, op, kind_of(op, "member_kind"), "member");
    if (!strcmp(name, "grant") || !strcmp(name, "revoke"))
        return touch_field(t, op, kind_of(op, "to_kind"), "to");
    if (!strcmp(name, "delete_group")) {
        /* its direct members lose it from their own fragments */
        if ((rc = touch_field(t, op, AUTHZ_ENT_GROUP, "id")) || !id || !az_group_get(st, id, &idx))
            return rc;
        const az_group_t *g = &st->groups[idx];
        for (uint32_t i = 0; i < g->subjects.n && !rc; i++)
            rc = az_names_add(t, AUTHZ_ENT_SUBJECT, st->subjects[g->subjects.v[i]].id);
        for (uint32_t i = 0; i < g->children.n && !rc; i++)
            rc = az_names_add(t, AUTHZ_ENT_GROUP, st->groups[g->children.v[i]].id);
        return rc;
    }
    if (!strcmp(name, "delete_role")) {
        /* every holder of a grant of it loses the grant */
        if ((rc = touch_field(t, op, AUTHZ_ENT_ROLE, "id")) || !id || !az_role_get(st, id, &idx))
            return rc;
        for (uint32_t i = 0; i < st->nsubjects && !rc; i++)
            for (uint32_t k = 0; st->subjects[i].id && k < st->subjects[i].grants.n; k++)
                if (st->subjects[i].grants.v[k]->role == (int64_t)idx) {
                    rc = az_names_add(t, AUTHZ_ENT_SUBJECT, st->subjects[i].id);
                    break;
                }
        for (uint32_t i = 0; i < st->ngroups && !rc; i++)
            for (uint32_t k = 0; st->groups[i].id && k < st->groups[i].grants.n; k++)
                if (st->groups[i].grants.v[k]->role == (int64_t)idx) {
                    rc = az_names_add(t, AUTHZ_ENT_GROUP, st->groups[i].id);
                    break;
                }
    }
    return rc;
}

int az_touch_all(az_names_t *t, const az_state_t *st)
{
    int rc = CDN_OK;
    for (uint32_t i = 0; i < st->nsubjects && !rc; i++)
        if (st->subjects[i].id)
            rc = az_names_add(t, AUTHZ_ENT_SUBJECT, st->subjects[i].id);
    for (uint32_t i = 0; i < st->ngroups && !rc; i++)
        if (st->groups[i].id)
            rc = az_names_add(t, AUTHZ_ENT_GROUP, st->groups[i].id);
    for (uint32_t i = 0; i < st->nroles && !rc; i++)
        if (st->roles[i].id)
            rc = az_names_add(t, AUTHZ_ENT_ROLE, st->roles[i].id);
    return rc;
}

void authz_model_track(authz_model_t *m, bool on)
{
    pthread_rwlock_wrlock(&m->lock);
    m->track = on;
    az_names_free(&m->touched);
    pthread_rwlock_unlock(&m->lock);
}

/* ---- Fragments. ---- */

static json_t *ids_json(const az_state_t *st, const az_ids_t *ids, int groups)
{
    json_t *a = json_array();
    for (uint32_t i = 0; a && i < ids->n; i++) {
        const char *id = groups ? st->groups[ids->v[i]].id : st->subjects[ids->v[i]].id;
        if (json_array_append_new(a, json_string(id))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* The fragment of the live entity kind/id as compact JSON (*out NULL when there is none). */
static int fragment(const az_state_t *st, char kind, const char *id, char **out)
{
    uint32_t idx;
    json_t *o = NULL;
    int rc = CDN_OK;
    *out = NULL;
    if (kind == AUTHZ_ENT_SUBJECT && az_subject_get(st, id, &idx)) {
        const az_subject_t *s = &st->subjects[idx];
        json_t *grants = json_array();
        o = json_pack("{s:s, s:O, s:o, s:o}", "kind",
                      s->kind == AZ_KIND_SERVICE ? "service" : "user", "attributes", s->attrs,
                      "groups", ids_json(st, &s->groups, 1), "grants", grants);
        if (o && s->tenants && json_object_set(o, "tenants", s->tenants))
            rc = CDN_ERR_NOMEM;
        else if (o)
            rc = az_grants_json(st, &s->grants, s->id, "subject", grants);
    } else if (kind == AUTHZ_ENT_GROUP && az_group_get(st, id, &idx)) {
        const az_group_t *g = &st->groups[idx];
        json_t *grants = json_array();
        /* its place among the groups: decisions scan a subject's groups in that order, so a
         * slice must hold them in it to report the same matching grant */
        o = json_pack("{s:I, s:o, s:o}", "order", (json_int_t)idx, "parents",
                      ids_json(st, &g->parents, 1), "grants", grants);
        if (o)
            rc = az_grants_json(st, &g->grants, g->id, "group", grants);
    } else if (kind == AUTHZ_ENT_ROLE && az_role_get(st, id, &idx)) {
        const az_role_t *r = &st->roles[idx];
        json_t *ps = json_array();
        o = json_pack("{s:o}", "permissions", ps);
        for (uint32_t k = 0; o && !rc && k < r->nperms; k++)
            if (json_array_append_new(ps, az_perm_json(&r->perms[k])))
                rc = CDN_ERR_NOMEM;
    } else {
        return CDN_OK; /* not there (deleted, or never was) */
    }
    char *text = o && !rc ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!text)
        return CDN_ERR_NOMEM;
    *out = cdn_strdup(text);
    free(text);
    return *out ? CDN_OK : CDN_ERR_NOMEM;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int authz_changes(authz_model_t *m, bool all, authz_change_fn fn, void *ctx, cdn_err_t *err)
{
    az_names_t every = {0};
    pthread_rwlock_rdlock(&m->lock);
    int rc = m->broken ? CDN_ERR_INTERNAL : CDN_OK;
    az_names_t *t = &m->touched;
    if (!rc && all) {
        rc = az_touch_all(&every, m->st);
        t = &every;
    }
    if (!rc && t->n)
        qsort(t->v, t->n, sizeof *t->v, cmp_name);
    for (uint32_t i = 0; !rc && i < t->n; i++) {
        char *frag;
        if (i && !strcmp(t->v[i], t->v[i - 1]))
            continue;
        if ((rc = fragment(m->st, t->v[i][0], t->v[i] + 1, &frag)) == CDN_OK) {
            rc = fn(ctx, t->v[i][0], t->v[i] + 1, frag);
            cdn_free(frag);
        }
    }
    /* Only writers, which the caller serialises, touch the list: clearing it here cannot race
     * with the readers the read lock lets in. */
    az_names_free(&m->touched);
    az_names_free(&every);
    pthread_rwlock_unlock(&m->lock);
    if (rc == CDN_ERR_INTERNAL)
        return cdn_err_set(err, rc, "authz: the model is broken; import or reopen it");
    if (rc == CDN_ERR_NOMEM)
        return cdn_err_set(err, rc, "authz: out of memory writing the model's fragments");
    return rc && !(err && err->code) ? cdn_err_set(err, rc, "%s", cdn_strerror(rc)) : rc;
}
