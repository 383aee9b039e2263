/* encode.c: a permission and a list of grants as JSON, the form export (json.c) and the
 * history's fragments (track.c) both write. Relies on jansson and model.c's time text. */
#include "authz/internal.h"

json_t *az_perm_json(const az_perm_t *p)
{
    json_t *o = json_pack("{s:s, s:s}", "resource", p->resource, "action", p->action);
    if (o &&
        ((p->cond_src && json_object_set(o, "condition", p->cond_src)) ||
         (p->deny && json_object_set_new(o, "effect", json_string("deny"))) ||
         (p->authorizer && json_object_set_new(o, "authorizer", json_string(p->authorizer))))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int az_grants_json(const az_state_t *st, const az_grants_t *gs, const char *to, const char *to_kind,
                   json_t *arr)
{
    for (uint32_t i = 0; i < gs->n; i++) {
        const az_grant_t *g = gs->v[i];
        json_t *o = json_pack("{s:s, s:s}", "to", to, "to_kind", to_kind);
        if (!o)
            return CDN_ERR_NOMEM;
        int bad = g->role >= 0 ? json_object_set_new(o, "role", json_string(st->roles[g->role].id))
                               : json_object_set_new(o, "permission", az_perm_json(g->perm));
        if (!bad && g->scope_type)
            bad = json_object_set_new(
                o, "scope", json_pack("{s:s, s:s}", "type", g->scope_type, "id", g->scope_id));
        if (!bad && g->windowed) {
            char t[40];
            json_t *w = json_object();
            bad = !w;
            if (!bad && g->from_us != INT64_MIN) {
                az_time_text(g->from_us, t, sizeof t);
                bad = json_object_set_new(w, "from", json_string(t));
            }
            if (!bad && g->until_us != INT64_MAX) {
                az_time_text(g->until_us, t, sizeof t);
                bad = json_object_set_new(w, "until", json_string(t));
            }
            bad = bad || json_object_set_new(o, "valid", w);
        }
        if (bad || json_array_append_new(arr, o))
            return CDN_ERR_NOMEM;
    }
    return CDN_OK;
}
