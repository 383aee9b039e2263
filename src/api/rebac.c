/* rebac.c: the public API's relationship questions (check, lookups, expand), over the engine's
 * model. Relies on api/api.h. */
#include "api/api.h"

int cordon_rebac_check(cordon_t *db, const char *subject, const char *permission,
                       const char *object, int *allowed, uint64_t *revision, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    bool ok = false;
    if (!db || !allowed)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_rebac_check needs an out value"),
                       &e, err);
    int rc = engine_rebac_check(db->e, subject, permission, object, &ok, revision, &e);
    *allowed = ok;
    return api_ret(rc, &e, err);
}

int cordon_rebac_lookup_resources(cordon_t *db, const char *subject, const char *type,
                                  const char *permission, cordon_name_fn fn, void *ctx,
                                  uint64_t *revision, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    if (!db || !fn)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "lookup-resources needs a callback"), &e,
                       err);
    return api_ret(engine_rebac_lookup(db->e, 1, subject, type, permission, fn, ctx, revision, &e),
                   &e, err);
}

int cordon_rebac_lookup_subjects(cordon_t *db, const char *object, const char *permission,
                                 const char *subject_type, cordon_name_fn fn, void *ctx,
                                 uint64_t *revision, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    if (!db || !fn)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "lookup-subjects needs a callback"), &e,
                       err);
    return api_ret(
        engine_rebac_lookup(db->e, 0, object, permission, subject_type, fn, ctx, revision, &e), &e,
        err);
}

int cordon_rebac_expand(cordon_t *db, const char *object, const char *permission, char **json,
                        cordon_error *err)
{
    cdn_err_t e = {0, ""};
    if (!db || !json)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_rebac_expand needs an out value"),
                       &e, err);
    return api_ret(engine_rebac_expand(db->e, object, permission, json, &e), &e, err);
}
