/* get.c: the public API's read of one chunk as a subject (cordon_get).
 * Relies on query/search for the permission check and jansson to unpack the stored record. */
#include "api/api.h"
#include "base/mem.h"
#include "query/search.h"
#include "query/write.h"

#include <stdlib.h>
#include <string.h>

static int copy_strings(json_t *arr, char ***out, size_t *n)
{
    size_t m = json_array_size(arr);
    *n = 0;
    if (!(*out = cdn_calloc(m ? m : 1, sizeof **out)))
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < m; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s)
            return CDN_ERR_CORRUPT;
        if (!((*out)[i] = cdn_strdup(s)))
            return CDN_ERR_NOMEM;
        (*n)++;
    }
    return CDN_OK;
}

int api_fill_record(json_t *obj, cordon_record *r)
{
    json_t *fields = json_object_get(obj, "fields"), *meta = json_object_get(obj, "metadata");
    const char *k;
    json_t *v;
    char *m;
    int rc;
    if ((rc = copy_strings(json_object_get(obj, "allowed"), &r->allowed, &r->n_allowed)) ||
        (rc = copy_strings(json_object_get(obj, "denied"), &r->denied, &r->n_denied)))
        return rc;
    if (!(r->fields = cdn_calloc(json_object_size(fields) + 1, sizeof *r->fields)))
        return CDN_ERR_NOMEM;
    json_object_foreach(fields, k, v)
    {
        cordon_field *f = &r->fields[r->n_fields];
        if (!json_is_string(v))
            return CDN_ERR_CORRUPT;
        f->name = cdn_strdup(k);
        f->value = cdn_strdup(json_string_value(v));
        r->n_fields++;
        if (!f->name || !f->value)
            return CDN_ERR_NOMEM;
    }
    m = json_dumps(meta ? meta : json_object(), JSON_COMPACT);
    if (!m)
        return CDN_ERR_NOMEM;
    r->metadata_json = cdn_strdup(m);
    free(m);
    return r->metadata_json ? CDN_OK : CDN_ERR_NOMEM;
}

int cordon_get(cordon_t *db, const char *coll, const cordon_subject *subject, const char *id,
               cordon_record **out, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    cordon_record *r;
    json_t *obj = NULL;
    int rc;
    if (!db || !coll || !out)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_get needs a collection"), &e, err);
    if ((rc = api_check_subject(subject, &e)) != 0 ||
        (rc = write_id_check(id, WRITE_NO_INDEX, &e)) != 0)
        return api_ret(rc, &e, err);
    engine_asker_t who = {subject->subject_id, subject->principals, subject->n_principals};
    if (!(r = cdn_calloc(1, sizeof *r)) || !(r->id = cdn_strdup(id))) {
        cdn_free(r);
        return api_ret(cdn_err_set(&e, CDN_ERR_NOMEM, "out of memory"), &e, err);
    }
    rc = search_get(db->e, coll, &who, id, &obj, &r->vector, &r->dim, &r->revision, &e);
    if (rc == CDN_OK && (rc = api_fill_record(obj, r)) != 0)
        cdn_err_set(&e, rc, "chunk \"%s\" cannot be read: %s", id, cdn_strerror(rc));
    if (!r->vector)
        r->dim = 0;
    json_decref(obj);
    if (rc) {
        cordon_record_free(r);
        return api_ret(rc, &e, err);
    }
    *out = r;
    return api_ret(CDN_OK, &e, err);
}

int cordon_read_stored(cordon_t *db, const char *coll, const char *id, cordon_record **out,
                       cordon_error *err)
{
    cdn_err_t e = {0, ""};
    cordon_record *r;
    json_t *obj = NULL;
    int rc;
    if (!db || !coll || !out)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_read_stored needs a collection"),
                       &e, err);
    if ((rc = write_id_check(id, WRITE_NO_INDEX, &e)) != 0)
        return api_ret(rc, &e, err);
    if (!(r = cdn_calloc(1, sizeof *r)) || !(r->id = cdn_strdup(id))) {
        cdn_free(r);
        return api_ret(cdn_err_set(&e, CDN_ERR_NOMEM, "out of memory"), &e, err);
    }
    r->revision = cordon_revision(db);
    rc = search_record(db->e, coll, id, &obj, &r->vector, &r->dim, &e);
    if (rc == CDN_OK && (rc = api_fill_record(obj, r)) != 0)
        cdn_err_set(&e, rc, "chunk \"%s\" cannot be read: %s", id, cdn_strerror(rc));
    if (!r->vector)
        r->dim = 0;
    json_decref(obj);
    if (rc) {
        cordon_record_free(r);
        return api_ret(rc, &e, err);
    }
    *out = r;
    return api_ret(CDN_OK, &e, err);
}

void cordon_record_free(cordon_record *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_fields; i++) {
        cdn_free((char *)r->fields[i].name);
        cdn_free((char *)r->fields[i].value);
    }
    for (size_t i = 0; i < r->n_allowed; i++)
        cdn_free(r->allowed[i]);
    for (size_t i = 0; i < r->n_denied; i++)
        cdn_free(r->denied[i]);
    cdn_free(r->fields);
    cdn_free(r->allowed);
    cdn_free(r->denied);
    cdn_free(r->metadata_json);
    cdn_free(r->vector);
    cdn_free(r->id);
    cdn_free(r);
}
