/* chunkrec.c: encoding and decoding of stored chunk records.
 * Relies on jansson; its output is copied into cdn_malloc memory so callers free uniformly. */
#include "query/chunkrec.h"
#include "base/mem.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

static json_t *string_array(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_string(v[i]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

int chunkrec_reencode(uint32_t row, json_t *obj, char **rec, size_t *len)
{
    char *js = json_dumps(obj, JSON_COMPACT);
    size_t n;
    if (!js)
        return CDN_ERR_NOMEM;
    n = strlen(js);
    *rec = cdn_malloc(4 + n);
    if (*rec) {
        store_be32((unsigned char *)*rec, row);
        memcpy(*rec + 4, js, n);
        *len = 4 + n;
    }
    free(js);
    return *rec ? CDN_OK : CDN_ERR_NOMEM;
}

int chunkrec_set_access(json_t *obj, const chunkrec_access_t *acc)
{
    json_object_del(obj, "tenant");
    json_object_del(obj, "labels");
    json_object_del(obj, "object");
    if (json_object_set_new(obj, "allowed", string_array(acc->allowed, acc->na)) ||
        json_object_set_new(obj, "denied", string_array(acc->denied, acc->nd)) ||
        (acc->tenant && json_object_set_new(obj, "tenant", json_string(acc->tenant))) ||
        (acc->nl && json_object_set_new(obj, "labels", string_array(acc->labels, acc->nl))) ||
        (acc->object && json_object_set_new(obj, "object", json_string(acc->object))))
        return CDN_ERR_NOMEM;
    return CDN_OK;
}

int chunkrec_encode(uint32_t row, const char *const *names, const char *const *values,
                    size_t nfields, const char *metadata_json, const chunkrec_access_t *acc,
                    char **rec, size_t *len)
{
    json_t *o = json_object(), *fields = json_object(), *meta;
    int rc = CDN_ERR_NOMEM;
    meta = metadata_json ? json_loads(metadata_json, 0, NULL) : json_object();
    if (!o || !fields || !meta)
        goto done;
    for (size_t i = 0; i < nfields; i++)
        if (json_object_set_new(fields, names[i], json_string(values[i])))
            goto done;
    if (json_object_set(o, "fields", fields) || json_object_set(o, "metadata", meta) ||
        chunkrec_set_access(o, acc))
        goto done;
    rc = chunkrec_reencode(row, o, rec, len);
done:
    json_decref(fields);
    json_decref(meta);
    json_decref(o);
    return rc;
}

int chunkrec_row(const void *rec, size_t len, uint32_t *row)
{
    if (len < 4)
        return CDN_ERR_CORRUPT;
    *row = store_rd32(rec);
    return CDN_OK;
}

int chunkrec_decode(const void *rec, size_t len, uint32_t *row, json_t **obj)
{
    json_t *o;
    if (len < 4)
        return CDN_ERR_CORRUPT;
    *row = store_rd32(rec);
    o = json_loadb((const char *)rec + 4, len - 4, 0, NULL);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        return CDN_ERR_CORRUPT;
    }
    *obj = o;
    return CDN_OK;
}

int chunkrec_check_metadata(const char *id, const char *metadata_json, size_t max, cdn_err_t *err)
{
    json_error_t je;
    json_t *o;
    int ok;
    if (!metadata_json)
        return CDN_OK;
    if (strlen(metadata_json) > max)
        return cdn_err_set(err, CDN_ERR_LIMIT, "chunk \"%s\": metadata passes %zu bytes", id, max);
    o = json_loads(metadata_json, 0, &je);
    if (!o)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "chunk \"%s\": metadata is not valid JSON (line %d, column %d: %s)", id,
                           je.line, je.column, je.text);
    ok = json_is_object(o);
    json_decref(o);
    if (!ok)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "chunk \"%s\": metadata must be a JSON object like {\"k\": \"v\"}", id);
    return CDN_OK;
}
