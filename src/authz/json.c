/* json.c: the whole model as one JSON document: export (sorted, deterministic) and import
 * (built aside from the op vocabulary, then swapped in atomically). Relies on jansson, ops.c. */
#include "authz/internal.h"
#include "authz/rebac.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

/* ---- export ---- */

typedef struct ord {
    const char *id;
    uint32_t idx;
} ord_t;

static int cmp_ord(const void *a, const void *b)
{
    return strcmp(((const ord_t *)a)->id, ((const ord_t *)b)->id);
}

_Static_assert(offsetof(az_subject_t, id) == 0 && offsetof(az_group_t, id) == 0 &&
                   offsetof(az_role_t, id) == 0,
               "sorted() reads the id at the start of each entity");

/* Live entities of one table sorted by id; caller frees. */
static ord_t *sorted(const void *base, uint32_t n, size_t stride, uint32_t *count)
{
    ord_t *o = cdn_malloc((n ? n : 1) * sizeof(*o));
    *count = 0;
    if (!o)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        /* every entity struct starts with its `char *id` */
        const char *id = *(char *const *)((const char *)base + (size_t)i * stride);
        if (id)
            o[(*count)++] = (ord_t){id, i};
    }
    qsort(o, *count, sizeof(*o), cmp_ord);
    return o;
}

static int members_json(const az_state_t *st, const az_group_t *g, json_t *arr)
{
    /* ids are indexes: sort members by name for a stable document */
    uint32_t n = g->subjects.n + g->children.n, k = 0;
    ord_t *o = cdn_malloc((n ? n : 1) * sizeof(*o));
    if (!o)
        return CDN_ERR_NOMEM;
    for (uint32_t i = 0; i < g->subjects.n; i++)
        o[k++] = (ord_t){st->subjects[g->subjects.v[i]].id, 0};
    qsort(o, k, sizeof(*o), cmp_ord);
    for (uint32_t i = 0; i < g->children.n; i++)
        o[k++] = (ord_t){st->groups[g->children.v[i]].id, 1};
    qsort(o + g->subjects.n, g->children.n, sizeof(*o), cmp_ord);
    int rc = CDN_OK;
    for (uint32_t i = 0; i < k && !rc; i++)
        if (json_array_append_new(arr, json_pack("{s:s, s:s}", "id", o[i].id, "kind",
                                                 o[i].idx ? "group" : "subject")))
            rc = CDN_ERR_NOMEM;
    cdn_free(o);
    return rc;
}

static int export_state(const az_state_t *st, json_t *doc)
{
    json_t *subs = json_array(), *groups = json_array(), *roles = json_array(),
           *grants = json_array();
    int rc = CDN_ERR_NOMEM;
    uint32_t ns, ng, nr;
    ord_t *os = sorted(st->subjects, st->nsubjects, sizeof(az_subject_t), &ns);
    ord_t *og = sorted(st->groups, st->ngroups, sizeof(az_group_t), &ng);
    ord_t *orl = sorted(st->roles, st->nroles, sizeof(az_role_t), &nr);
    if (json_object_set_new(doc, "subjects", subs) || json_object_set_new(doc, "groups", groups) ||
        json_object_set_new(doc, "roles", roles) || json_object_set_new(doc, "grants", grants) ||
        !os || !og || !orl)
        goto out;
    for (uint32_t i = 0; i < ns; i++) {
        const az_subject_t *s = &st->subjects[os[i].idx];
        json_t *o =
            json_pack("{s:s, s:s, s:O}", "id", s->id, "kind",
                      s->kind == AZ_KIND_SERVICE ? "service" : "user", "attributes", s->attrs);
        if (!o || (s->tenants && json_object_set(o, "tenants", s->tenants)) ||
            json_array_append_new(subs, o))
            goto out;
    }
    for (uint32_t i = 0; i < ng; i++) {
        json_t *mem = json_array(), *attrs = st->groups[og[i].idx].attrs;
        json_t *o = json_pack("{s:s, s:o}", "id", og[i].id, "members", mem);
        if (!o || (attrs && json_object_set(o, "attributes", attrs)) ||
            json_array_append_new(groups, o) || members_json(st, &st->groups[og[i].idx], mem))
            goto out;
    }
    for (uint32_t i = 0; i < nr; i++) {
        const az_role_t *r = &st->roles[orl[i].idx];
        json_t *ps = json_array();
        if (json_array_append_new(roles, json_pack("{s:s, s:o}", "id", r->id, "permissions", ps)))
            goto out;
        for (uint32_t k = 0; k < r->nperms; k++)
            if (json_array_append_new(ps, az_perm_json(&r->perms[k])))
                goto out;
    }
    for (uint32_t i = 0; i < ns; i++) {
        const az_subject_t *s = &st->subjects[os[i].idx];
        if (az_grants_json(st, &s->grants, s->id, "subject", grants))
            goto out;
    }
    for (uint32_t i = 0; i < ng; i++)
        if (az_grants_json(st, &st->groups[og[i].idx].grants, og[i].id, "group", grants))
            goto out;
    if (st->rebac && st->rebac->schema) {
        json_t *rb = rb_export(st->rebac);
        if (!rb || json_object_set_new(doc, "rebac", rb))
            goto out;
    }
    rc = CDN_OK;
out:
    cdn_free(os);
    cdn_free(og);
    cdn_free(orl);
    return rc;
}

int authz_export(authz_model_t *m, char **json_out, cdn_err_t *err)
{
    if (!m || !json_out)
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_export: NULL argument");
    *json_out = NULL;
    json_t *doc = json_pack("{s:i}", "version", 1);
    if (!doc)
        return cdn_err_set(err, CDN_ERR_NOMEM, "authz_export: out of memory");
    pthread_rwlock_rdlock(&m->lock);
    int rc = m->broken ? CDN_ERR_INTERNAL : export_state(m->st, doc);
    /* The document shares attribute and condition objects with the state: serialize and
     * release it before a writer may replace them. */
    char *text = rc ? NULL : json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(doc);
    pthread_rwlock_unlock(&m->lock);
    if (rc == CDN_ERR_INTERNAL)
        return cdn_err_set(err, rc, "authz_export: the model is broken; import or reopen it");
    if (!text || !(*json_out = cdn_strdup(text))) {
        free(text);
        return cdn_err_set(err, CDN_ERR_NOMEM, "authz_export: out of memory");
    }
    free(text);
    return CDN_OK;
}

/* ---- import ---- */

/* Applies a copy of `src` with "op" set, so the document goes through the same validation
 * as live ops; `where` prefixes the error message (e.g. "groups[3]"). */
static int apply_as(az_state_t *st, const char *op, json_t *src, const char *where, cdn_err_t *err)
{
    json_t *o = json_is_object(src) ? json_copy(src) : NULL;
    if (!o)
        return cdn_err_set(err, CDN_ERR_INVALID, "import: %s must be an object", where);
    json_object_set_new(o, "op", json_string(op));
    int rc = az_state_apply(st, o, err);
    json_decref(o);
    if (rc && err) {
        char msg[CDN_ERR_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        cdn_err_set(err, rc, "import: %s: %s", where, msg);
    }
    return rc;
}

static int import_groups(az_state_t *st, const json_t *groups, cdn_err_t *err)
{
    size_t i, k;
    json_t *g, *mem;
    char where[64];
    json_array_foreach(groups, i, g)
    {
        const char *key;
        json_t *val;
        if (!json_is_object(g))
            return cdn_err_set(err, CDN_ERR_INVALID, "import: groups[%zu] must be an object", i);
        json_object_foreach(g, key, val)
        {
            if (strcmp(key, "id") && strcmp(key, "members") && strcmp(key, "attributes"))
                return cdn_err_set(err, CDN_ERR_INVALID,
                                   "import: groups[%zu]: unknown field '%s'; a group has id, "
                                   "members and attributes",
                                   i, key);
        }
    }
    json_array_foreach(groups, i, g)
    {
        snprintf(where, sizeof(where), "groups[%zu]", i);
        json_t *o = json_pack("{s:O?, s:O?}", "id", json_object_get(g, "id"), "attributes",
                              json_object_get(g, "attributes"));
        int rc = o ? apply_as(st, "put_group", o, where, err) : CDN_ERR_NOMEM;
        json_decref(o);
        if (rc)
            return rc;
    }
    json_array_foreach(groups, i, g)
    {
        json_t *members = json_object_get(g, "members");
        if (members && !json_is_array(members))
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "import: groups[%zu].members must be an "
                               "array",
                               i);
        json_array_foreach(members, k, mem)
        {
            snprintf(where, sizeof(where), "groups[%zu].members[%zu]", i, k);
            json_t *o =
                json_pack("{s:O?, s:O?, s:O?}", "group", json_object_get(g, "id"), "member",
                          json_object_get(mem, "id"), "member_kind", json_object_get(mem, "kind"));
            int rc = o ? apply_as(st, "add_member", o, where, err) : CDN_ERR_NOMEM;
            json_decref(o);
            if (rc)
                return rc;
        }
    }
    return CDN_OK;
}

static int import_list(az_state_t *st, const json_t *doc, const char *key, const char *op,
                       cdn_err_t *err)
{
    const json_t *arr = json_object_get(doc, key);
    if (!arr)
        return CDN_OK;
    if (!json_is_array(arr))
        return cdn_err_set(err, CDN_ERR_INVALID, "import: %s must be an array", key);
    if (!strcmp(key, "groups"))
        return import_groups(st, arr, err);
    size_t i;
    json_t *e;
    char where[64];
    json_array_foreach(arr, i, e)
    {
        snprintf(where, sizeof(where), "%s[%zu]", key, i);
        int rc = apply_as(st, op, e, where, err);
        if (rc)
            return rc;
    }
    return CDN_OK;
}

/* A private state built from a document of authz_export's shape: *out, or an error. */
static int state_from_doc(const char *doc_json, az_state_t **out, cdn_err_t *err)
{
    *out = NULL;
    json_error_t jerr;
    json_t *doc = json_loads(doc_json, 0, &jerr);
    if (!doc)
        return cdn_err_set(err, CDN_ERR_INVALID, "import: not valid JSON: %s at line %d column %d",
                           jerr.text, jerr.line, jerr.column);
    int rc = CDN_OK;
    const char *k;
    json_t *v;
    if (!json_is_object(doc))
        rc = cdn_err_set(err, CDN_ERR_INVALID, "import: the document must be a JSON object");
    else
        json_object_foreach(doc, k, v)
        {
            bool known = !strcmp(k, "version") || !strcmp(k, "subjects") || !strcmp(k, "groups") ||
                         !strcmp(k, "roles") || !strcmp(k, "grants") || !strcmp(k, "rebac");
            if (!known && !rc)
                rc = cdn_err_set(err, CDN_ERR_INVALID,
                                 "import: unknown top-level field '%s'; the document has "
                                 "version, subjects, groups, roles, grants and rebac",
                                 k);
        }
    json_t *ver = json_is_object(doc) ? json_object_get(doc, "version") : NULL;
    if (!rc && ver && !(json_is_integer(ver) && json_integer_value(ver) == 1))
        rc = cdn_err_set(err, CDN_ERR_INVALID, "import: version must be 1");
    az_state_t *st = rc ? NULL : az_state_new();
    if (!rc && !st)
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "import: out of memory");
    if (!rc && !(rc = import_list(st, doc, "subjects", "put_subject", err)) &&
        !(rc = import_list(st, doc, "groups", NULL, err)) &&
        !(rc = import_list(st, doc, "roles", "put_role", err)) &&
        !(rc = import_list(st, doc, "grants", "grant", err)))
        rc = rb_import(st, json_object_get(doc, "rebac"), err);
    json_decref(doc);
    if (rc) {
        az_state_free(st);
        return rc;
    }
    *out = st;
    return CDN_OK;
}

/* Installs st (a private state) as the model's, in one revision. A tracked model records
 * what changed: the entities `touched` names (a batch's), or with whole every entity of the
 * state before and after (an import). Returns 0, or CDN_ERR_NOMEM and nothing changes. */
static int install(authz_model_t *m, az_state_t *st, az_names_t *touched, bool whole)
{
    pthread_rwlock_wrlock(&m->lock);
    if (m->track) {
        az_names_t t = {0};
        int rc = whole ? az_touch_all(&t, m->st) : az_names_move(&t, touched);
        if (rc == CDN_OK && whole)
            rc = az_touch_all(&t, st);
        if (rc == CDN_OK)
            rc = az_names_move(&m->touched, &t);
        az_names_free(&t);
        if (rc) {
            pthread_rwlock_unlock(&m->lock);
            az_state_free(st);
            return rc;
        }
    }
    az_model_swap(m, st);
    /* the per-subject view table must cover the new subjects */
    cdn_free(m->views);
    m->views = NULL;
    m->nviews = 0;
    if (st->nsubjects) {
        m->views = cdn_calloc(st->nsubjects, sizeof(*m->views));
        m->nviews = m->views ? st->nsubjects : 0;
    }
    atomic_fetch_add(&m->revision, 1);
    if (m->changes)
        atomic_fetch_add(m->changes, 1);
    pthread_rwlock_unlock(&m->lock);
    return CDN_OK;
}

int authz_import(authz_model_t *m, const char *doc_json, cdn_err_t *err)
{
    az_state_t *st;
    if (!m || !doc_json)
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_import: NULL argument");
    int rc = state_from_doc(doc_json, &st, err);
    if (rc)
        return rc;
    if (install(m, st, NULL, true))
        return cdn_err_set(err, CDN_ERR_NOMEM, "import: out of memory recording the change");
    return CDN_OK;
}

int authz_apply_batch(authz_model_t *m, const json_t *ops, cdn_err_t *err)
{
    az_state_t *st = NULL;
    az_names_t touched = {0};
    size_t i;
    const json_t *op;
    if (!m || !json_is_array(ops))
        return cdn_err_set(err, CDN_ERR_INVALID, "authz_apply_batch: give an array of operations");
    /* The model as it is, as a private state (a copy: an export and import cost a whole
     * model's JSON): the operations run there, in order, and the state replaces the model's
     * only when every one of them succeeded. */
    pthread_rwlock_rdlock(&m->lock);
    int rc = m->broken ? CDN_ERR_INTERNAL : az_state_clone(m->st, &st);
    pthread_rwlock_unlock(&m->lock);
    if (rc)
        cdn_err_set(err, rc,
                    rc == CDN_ERR_INTERNAL
                        ? "authz_apply_batch: the model is broken; import or reopen it"
                        : "authz_apply_batch: out of memory copying the model");
    json_array_foreach(ops, i, op)
    {
        if (rc)
            break;
        cdn_err_t e = {0, ""};
        if (m->track && az_touch_op(&touched, st, op))
            rc = cdn_err_set(&e, CDN_ERR_NOMEM, "out of memory recording the change");
        else
            rc = az_state_apply(st, op, &e);
        if (rc)
            cdn_err_set(err, rc, "ops[%zu]: %s (none of the %zu operations was applied)", i, e.msg,
                        json_array_size(ops));
    }
    if (rc) {
        az_names_free(&touched);
        az_state_free(st);
        return rc;
    }
    rc = install(m, st, &touched, false);
    az_names_free(&touched);
    return rc ? cdn_err_set(err, rc, "authz_apply_batch: out of memory recording the change")
              : CDN_OK;
}
