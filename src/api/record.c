/* record.c: a stored chunk record as the public API hands it out (cordon_record: fields,
 * metadata and ACL copied out of the record's JSON), for get.c and chunks.c. Relies on jansson
 * and base/mem. */
#include "api/api.h"
#include "base/mem.h"

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
        (rc = copy_strings(json_object_get(obj, "denied"), &r->denied, &r->n_denied)) ||
        (rc = copy_strings(json_object_get(obj, "labels"), &r->labels, &r->n_labels)))
        return rc;
    const char *tenant = json_string_value(json_object_get(obj, "tenant"));
    const char *object = json_string_value(json_object_get(obj, "object"));
    if ((tenant && !(r->tenant = cdn_strdup(tenant))) ||
        (object && !(r->object = cdn_strdup(object))))
        return CDN_ERR_NOMEM;
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
    m = meta ? json_dumps(meta, JSON_COMPACT) : strdup("{}");
    if (!m)
        return CDN_ERR_NOMEM;
    r->metadata_json = cdn_strdup(m);
    free(m);
    return r->metadata_json ? CDN_OK : CDN_ERR_NOMEM;
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
    for (size_t i = 0; i < r->n_labels; i++)
        cdn_free(r->labels[i]);
    cdn_free(r->labels);
    cdn_free(r->tenant);
    cdn_free(r->object);
    cdn_free(r->metadata_json);
    cdn_free(r->vector);
    cdn_free(r->id);
    cdn_free(r);
}
