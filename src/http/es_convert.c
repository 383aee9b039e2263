/* es_convert.c: documents to chunks, with Elasticsearch's dynamic mapping for fields the index
 * does not map yet, and stored chunks back to _source. Relies on http/es_paths and the public
 * API's chunk types. */
#include "base/mem.h"
#include "http/es.h"
#include "http/es_mapping.h"
#include "http/es_paths.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Strings longer than this get no keyword copy, as Elasticsearch's default ignore_above. */
#define ES_IGNORE_ABOVE 256
/* The metadata key keeping a cosine index's vector length: cordon stores vectors normalised,
 * and Elasticsearch returns _source as it was sent. */
#define ES_NORM_KEY "_cordon_vector_norm"

/* ---- Dynamic mapping. ---- */

static int looks_like_date(const char *s)
{
    /* yyyy-MM-dd, optionally followed by T or space and a time: Elasticsearch's default
     * dynamic_date_formats (strict_date_optional_time). */
    for (int i = 0; i < 10; i++) {
        if (i == 4 || i == 7) {
            if (s[i] != '-')
                return 0;
        } else if (!isdigit((unsigned char)s[i])) {
            return 0;
        }
    }
    return s[10] == '\0' || s[10] == 'T' || (s[10] == ' ' && isdigit((unsigned char)s[11]));
}

static const char *mapping_type(json_t *v)
{
    if (json_is_array(v))
        v = json_array_get(v, 0);
    if (json_is_string(v))
        return looks_like_date(json_string_value(v)) ? "date" : "string";
    if (json_is_integer(v))
        return "long";
    if (json_is_real(v))
        return "double";
    if (json_is_boolean(v))
        return "boolean";
    if (json_is_object(v))
        return "object";
    return NULL;
}

/* The mapping Elasticsearch would give a new field: a matching dynamic template's, or the
 * default for the value's JSON type. NULL: nothing to map (null, empty array). */
static json_t *dynamic_mapping(const es_index_t *ix, const char *path, const char *leaf, json_t *v)
{
    const char *mt = mapping_type(v);
    json_t *tpls = json_object_get(ix->mappings, "dynamic_templates"), *t;
    size_t i;
    if (!mt)
        return NULL;
    if (!strcmp(path, ix->acl_field) || !strcmp(path, ix->denied_field) ||
        (ix->tenant_field && !strcmp(path, ix->tenant_field)) ||
        (ix->labels_field && !strcmp(path, ix->labels_field)) ||
        (ix->object_field && !strcmp(path, ix->object_field)))
        return json_pack("{s:s}", "type", "keyword");
    json_array_foreach(tpls, i, t)
    {
        const char *tname;
        json_t *def;
        json_object_foreach(t, tname, def)
        {
            const char *match = json_string_value(json_object_get(def, "match"));
            const char *unmatch = json_string_value(json_object_get(def, "unmatch"));
            const char *pm = json_string_value(json_object_get(def, "path_match"));
            const char *pu = json_string_value(json_object_get(def, "path_unmatch"));
            const char *mmt = json_string_value(json_object_get(def, "match_mapping_type"));
            json_t *m = json_object_get(def, "mapping");
            if ((match && !es_glob(match, leaf)) || (unmatch && es_glob(unmatch, leaf)) ||
                (pm && !es_glob(pm, path)) || (pu && es_glob(pu, path)) ||
                (mmt && strcmp(mmt, "*") && strcmp(mmt, mt)) || !json_is_object(m))
                continue;
            json_t *copy = json_deep_copy(m);
            const char *type = json_string_value(json_object_get(copy, "type"));
            if (copy && (!type || !strcmp(type, "{dynamic_type}")))
                json_object_set_new(copy, "type",
                                    json_string(!strcmp(mt, "string")   ? "text"
                                                : !strcmp(mt, "double") ? "float"
                                                                        : mt));
            return copy;
        }
    }
    if (!strcmp(mt, "string"))
        return json_pack("{s:s, s:{s:{s:s, s:i}}}", "type", "text", "fields", "keyword", "type",
                         "keyword", "ignore_above", ES_IGNORE_ABOVE);
    if (!strcmp(mt, "double"))
        return json_pack("{s:s}", "type", "float");
    if (!strcmp(mt, "object"))
        return json_pack("{s:{}}", "properties");
    return json_pack("{s:s}", "type", mt);
}

/* The collection's text fields as they are and as dyn will add them. */
static int is_text_field(const es_index_t *ix, const char *path)
{
    for (size_t i = 0; i < ix->info.n_text_fields; i++)
        if (!strcmp(ix->info.text_fields[i], path))
            return 1;
    return 0;
}

static size_t count_kind(json_t *mappings, es_kind_t want, size_t *text_total)
{
    const char *k;
    json_t *m;
    size_t n = 0;
    json_object_foreach(json_object_get(mappings, "properties"), k, m)
    {
        es_kind_t kind = es_kind_of(m);
        if (kind == ES_K_OBJECT)
            n += count_kind(m, want, text_total);
        else if (kind == want && es_indexed(m))
            n++;
    }
    (void)text_total;
    return n;
}

/* ---- Documents to chunks. ---- */

typedef struct conv {
    const es_index_t *ix;
    es_dynamic_t *dyn;
    es_doc_t *doc;
    json_t *meta; /* the metadata being built: a copy of the source */
    size_t n_fields;
    const char **type;
    char *why;
    size_t whysz;
} conv_t;

static int fail(conv_t *c, const char *type, const char *fmt, const char *a, const char *b)
{
    *c->type = type;
    snprintf(c->why, c->whysz, fmt, a, b);
    return -1;
}

static char *text_of(json_t *v)
{
    char num[64];
    if (json_is_string(v))
        return cdn_strdup(json_string_value(v));
    if (json_is_number(v)) {
        snprintf(num, sizeof num, "%.17g", json_number_value(v));
        return cdn_strdup(num);
    }
    if (json_is_boolean(v))
        return cdn_strdup(json_is_true(v) ? "true" : "false");
    if (json_is_array(v)) { /* values of an array field, one per line */
        cdn_buf_t b;
        size_t i;
        json_t *x;
        cdn_buf_init(&b, CORDON_TEXT_MAX);
        json_array_foreach(v, i, x)
        {
            char *s = text_of(x);
            if (s && (i == 0 || cdn_buf_puts(&b, "\n") == 0))
                cdn_buf_puts(&b, s);
            cdn_free(s);
        }
        if (!b.data)
            return cdn_strdup("");
        char *out = cdn_strdup(b.data);
        cdn_buf_free(&b);
        return out;
    }
    return NULL;
}

static int conv_text(conv_t *c, const char *path, json_t *m, json_t *v)
{
    char *s = text_of(v);
    if (!s)
        return fail(c, "mapper_parsing_exception", "failed to parse field [%s] of type [text]%s",
                    path, "");
    if (c->n_fields == CORDON_TEXT_FIELDS_MAX) {
        cdn_free(s);
        return 0;
    }
    es_doc_t *d = c->doc;
    d->field_values[c->n_fields] = s;
    d->fields[c->n_fields] = (cordon_field){NULL, s};
    /* The field name must outlive the chunk: keep it in the metadata copy's key space. */
    d->fields[c->n_fields].name = cdn_strdup(path);
    if (!d->fields[c->n_fields].name)
        return fail(c, "exception", "out of memory%s%s", "", "");
    c->n_fields++;
    es_path_del(c->meta, path);
    if (es_has_keyword_sub(m) && json_is_string(v) && json_string_length(v) <= ES_IGNORE_ABOVE) {
        char kw[600];
        snprintf(kw, sizeof kw, "%s.keyword", path);
        json_object_set_new(c->meta, kw, json_copy(v));
    }
    return 0;
}

static int conv_vector(conv_t *c, const char *path, json_t *m, json_t *v)
{
    uint32_t dim = c->ix->info.dim;
    size_t i;
    json_t *x;
    double norm = 0;
    if (!c->ix->vector_field || strcmp(path, c->ix->vector_field) || !dim)
        return 0; /* a second vector field: kept in _source only */
    (void)m;
    if (c->doc->vector_scanned && json_is_null(v)) {
        norm = c->doc->vector_sumsq;
    } else if (!json_is_array(v) || json_array_size(v) != dim) {
        char n[32];
        snprintf(n, sizeof n, "%u", dim);
        return fail(c, "mapper_parsing_exception",
                    "The [dense_vector] field [%s] in doc must have %s dimensions", path, n);
    } else {
        if (!c->doc->vector && !(c->doc->vector = cdn_malloc(dim * sizeof(float))))
            return fail(c, "exception", "out of memory%s%s", "", "");
        json_array_foreach(v, i, x)
        {
            double d = json_number_value(x);
            if (!json_is_number(x) || !isfinite(d) || fabs(d) > 3.4e38)
                return fail(c, "mapper_parsing_exception",
                            "failed to parse field [%s] of type [dense_vector]: element %s is not "
                            "a finite number",
                            path, "");
            c->doc->vector[i] = (float)d;
            norm += d * d;
        }
    }
    es_path_del(c->meta, path);
    norm = sqrt(norm);
    if (c->ix->info.metric != CORDON_METRIC_COSINE)
        return 0;
    json_object_del(c->meta, ES_NORM_KEY);
    if (norm > 0 && norm != 1 && json_object_set_new(c->meta, ES_NORM_KEY, json_real(norm)))
        return fail(c, "exception", "out of memory%s%s", "", "");
    return 0;
}

static int conv_value(conv_t *c, const char *path, es_kind_t kind, json_t *v)
{
    json_t *x;
    size_t i;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x) if (conv_value(c, path, kind, x)) return -1;
        return 0;
    }
    if (json_is_null(v))
        return 0;
    if (kind == ES_K_NUMBER && !json_is_number(v)) {
        char *end = NULL;
        const char *s = json_string_value(v);
        if (!s || (strtod(s, &end), end == s || *end))
            return fail(c, "mapper_parsing_exception",
                        "failed to parse field [%s] of type [number]: not a number%s", path, "");
    }
    if (kind == ES_K_BOOL && !json_is_boolean(v) &&
        !(json_is_string(v) &&
          (!strcmp(json_string_value(v), "true") || !strcmp(json_string_value(v), "false"))))
        return fail(c, "mapper_parsing_exception", "failed to parse field [%s] of type [boolean]%s",
                    path, "");
    if (kind == ES_K_DATE && !json_is_integer(v) &&
        !(json_is_string(v) && looks_like_date(json_string_value(v))))
        return fail(c, "mapper_parsing_exception",
                    "failed to parse field [%s] of type [date]: expected yyyy-MM-dd[THH:mm:ss] or "
                    "epoch milliseconds%s",
                    path, "");
    if (kind == ES_K_OBJECT && !json_is_object(v))
        return fail(c, "mapper_parsing_exception",
                    "object mapping for [%s] tried to parse field [%s] as object, but found a "
                    "concrete value",
                    path, path);
    return 0;
}

/* A new field under a path mapped as something other than an object ("v.x" where "v" is a
 * dense_vector) cannot be mapped, as in Elasticsearch. */
static int prefix_conflict(conv_t *c, const char *path)
{
    char head[512];
    for (const char *dot = strchr(path, '.'); dot; dot = strchr(dot + 1, '.')) {
        size_t n = (size_t)(dot - path);
        if (n >= sizeof head)
            break;
        memcpy(head, path, n);
        head[n] = '\0';
        json_t *m = es_mapping_get(c->ix->mappings, head);
        if (!m)
            m = es_mapping_get(c->dyn->props, head);
        if (m && es_kind_of(m) != ES_K_OBJECT) {
            const char *t = json_string_value(json_object_get(m, "type"));
            *c->type = "mapper_parsing_exception";
            snprintf(c->why, c->whysz,
                     "Could not dynamically add mapping for field [%.150s]. Existing mapping for "
                     "[%.150s] must be of type object but found [%.40s].",
                     path, head, t ? t : "?");
            return -1;
        }
    }
    return 0;
}

static int conv_walk(conv_t *c, json_t *obj, const char *prefix)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        char path[512];
        if (!*k)
            return fail(c, "mapper_parsing_exception", "field name cannot be an empty string%s%s",
                        "", "");
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", k);
        json_t *m = es_mapping_get(c->ix->mappings, path);
        if (!m)
            m = es_mapping_get(c->dyn->props, path);
        if (!m) {
            json_t *dm = json_object_get(c->ix->mappings, "dynamic");
            const char *dyn = json_is_string(dm) ? json_string_value(dm) : NULL;
            if (json_is_false(dm) || (dyn && !strcmp(dyn, "false")))
                continue; /* kept in _source, not indexed */
            if (dyn && !strcmp(dyn, "strict"))
                return fail(c, "strict_dynamic_mapping_exception",
                            "mapping set to strict, dynamic introduction of [%s] within [%s] "
                            "is not allowed",
                            k, *prefix ? prefix : "_doc");
            if (prefix_conflict(c, path))
                return -1;
            if (!(m = dynamic_mapping(c->ix, path, k, v)))
                continue;
            /* Limits: text fields beyond the collection's become keywords, metadata fields
             * beyond its limit are stored only. */
            es_kind_t nk = es_kind_of(m);
            if (nk == ES_K_TEXT &&
                c->ix->info.n_text_fields + count_kind(c->dyn->props, ES_K_TEXT, NULL) >=
                    CORDON_TEXT_FIELDS_MAX) {
                json_decref(m);
                m = json_pack("{s:s}", "type", "keyword");
            }
            size_t metas = c->ix->info.n_meta_fields +
                           count_kind(c->dyn->props, ES_K_KEYWORD, NULL) +
                           count_kind(c->dyn->props, ES_K_NUMBER, NULL) +
                           count_kind(c->dyn->props, ES_K_DATE, NULL) +
                           count_kind(c->dyn->props, ES_K_BOOL, NULL) +
                           count_kind(c->dyn->props, ES_K_TEXT, NULL);
            if (m && es_kind_of(m) != ES_K_OBJECT && metas + 1 >= CORDON_META_FIELDS_MAX)
                json_object_set_new(m, "index", json_false());
            if (!m || es_mapping_set(c->dyn->props, path, m))
                return fail(c, "exception", "out of memory%s%s", "", "");
            c->dyn->changed = 1;
            m = es_mapping_get(c->dyn->props, path);
        }
        es_kind_t kind = es_kind_of(m);
        int rc = 0;
        if (kind == ES_K_OBJECT && json_is_object(v))
            rc = conv_walk(c, v, path);
        else if (kind == ES_K_OBJECT && json_is_array(v)) {
            size_t i;
            json_t *x;
            json_array_foreach(v, i, x) if (!rc && json_is_object(x)) rc = conv_walk(c, x, path);
        } else if (kind == ES_K_VECTOR)
            rc = conv_vector(c, path, m, v);
        else if (kind == ES_K_TEXT && es_indexed(m) &&
                 (is_text_field(c->ix, path) || es_mapping_get(c->dyn->props, path)))
            rc = conv_text(c, path, m, v);
        else
            rc = conv_value(c, path, kind, v);
        if (rc)
            return rc;
    }
    return 0;
}

/* The strings of field (one, or an array of them) into *out, owned by the document. */
static int take_acl(conv_t *c, const char *field, const char ***out, size_t *n)
{
    json_t *v = es_path_get(c->meta, field), *x;
    size_t i, m;
    es_doc_t *d = c->doc;
    *n = 0;
    if (!v || json_is_null(v))
        return 0;
    m = json_is_array(v) ? json_array_size(v) : 1;
    if (!(*out = cdn_calloc(m ? m : 1, sizeof **out)))
        return fail(c, "exception", "out of memory%s%s", "", "");
    char **grown = cdn_realloc(d->acl_strings, (d->n_acl_strings + m + 1) * sizeof *grown);
    if (!grown)
        return fail(c, "exception", "out of memory%s%s", "", "");
    d->acl_strings = grown;
    for (i = 0; i < m; i++) {
        x = json_is_array(v) ? json_array_get(v, i) : v;
        if (!json_is_string(x) || !json_string_length(x))
            return fail(c, "mapper_parsing_exception",
                        "field [%s] holds the principals, tenant or labels of the document: "
                        "give strings such as \"eng\" or \"user:alice\"%s",
                        field, "");
        char *s = cdn_strdup(json_string_value(x));
        if (!s)
            return fail(c, "exception", "out of memory%s%s", "", "");
        d->acl_strings[d->n_acl_strings++] = s;
        (*out)[(*n)++] = s;
    }
    return 0;
}

int es_doc_from_source(const es_index_t *ix, json_t *source, es_dynamic_t *dyn, es_doc_t *doc,
                       const char **type, char *why, size_t whysz)
{
    conv_t c = {ix, dyn, doc, json_deep_copy(source), 0, type, why, whysz};
    size_t na = 0, nd = 0, nl = 0, nt = 0, no = 0;
    const char **tenant = NULL, **object = NULL;
    int rc;
    if (!dyn->props && !(dyn->props = json_object()))
        rc = fail(&c, "exception", "out of memory%s%s", "", "");
    else if (!c.meta)
        rc = fail(&c, "exception", "out of memory%s%s", "", "");
    else
        rc = conv_walk(&c, source, "");
    if (rc == 0 && ix->info.dim && !doc->vector)
        rc = fail(&c, "mapper_parsing_exception",
                  "the document has no [%s]: every document of a vector index needs its "
                  "vector%s",
                  ix->vector_field ? ix->vector_field : "dense_vector", "");
    if (rc == 0)
        rc = take_acl(&c, ix->acl_field, &doc->allowed, &na);
    if (rc == 0 && strcmp(ix->denied_field, ix->acl_field))
        rc = take_acl(&c, ix->denied_field, &doc->denied, &nd);
    if (rc == 0 && ix->labels_field)
        rc = take_acl(&c, ix->labels_field, &doc->labels, &nl);
    if (rc == 0 && ix->tenant_field && (rc = take_acl(&c, ix->tenant_field, &tenant, &nt)) == 0 &&
        nt > 1)
        rc = fail(&c, "mapper_parsing_exception",
                  "field [%s] holds the document's tenant: give one string, not a list%s",
                  ix->tenant_field, "");
    if (rc == 0 && ix->object_field && (rc = take_acl(&c, ix->object_field, &object, &no)) == 0 &&
        no > 1)
        rc = fail(&c, "mapper_parsing_exception",
                  "field [%s] names the document's object: give one string, TYPE:ID%s",
                  ix->object_field, "");
    if (rc == 0 && !(doc->metadata = json_dumps(c.meta, JSON_COMPACT)))
        rc = fail(&c, "exception", "out of memory%s%s", "", "");
    if (rc == 0 && strlen(doc->metadata) > CORDON_METADATA_MAX)
        rc = fail(&c, "mapper_parsing_exception",
                  "the document's fields other than text and vector take more than 64 KiB%s%s", "",
                  "");
    json_decref(c.meta);
    doc->chunk = (cordon_chunk){.id = doc->id,
                                .vector = doc->vector,
                                .fields = doc->fields,
                                .n_fields = c.n_fields,
                                .metadata_json = doc->metadata,
                                .allowed = doc->allowed,
                                .n_allowed = na,
                                .denied = doc->denied,
                                .n_denied = nd,
                                .tenant = nt == 1 ? tenant[0] : NULL,
                                .labels = doc->labels,
                                .n_labels = nl,
                                .object = no == 1 ? object[0] : NULL};
    cdn_free(tenant); /* the strings stay: the document owns them */
    cdn_free(object);
    return rc;
}

void es_doc_release(es_doc_t *d)
{
    for (size_t i = 0; i < CORDON_TEXT_FIELDS_MAX; i++) {
        cdn_free(d->field_values[i]);
        cdn_free((char *)d->fields[i].name);
    }
    for (size_t i = 0; i < d->n_acl_strings; i++)
        cdn_free(d->acl_strings[i]);
    cdn_free(d->acl_strings);
    cdn_free(d->allowed);
    cdn_free(d->denied);
    cdn_free(d->labels);
    cdn_free(d->vector);
    free(d->metadata); /* from jansson */
    memset(d, 0, sizeof *d);
}

/* ---- Chunks back to _source. ---- */

json_t *es_source_of(const es_index_t *ix, const cordon_record *r)
{
    json_t *src = json_loads(r->metadata_json ? r->metadata_json : "{}", 0, NULL);
    if (!json_is_object(src)) {
        json_decref(src);
        src = json_object();
    }
    for (size_t i = 0; src && i < ix->info.n_text_fields; i++) {
        char kw[CORDON_NAME_MAX + 16];
        snprintf(kw, sizeof kw, "%s.keyword", ix->info.text_fields[i]);
        json_object_del(src, kw);
    }
    for (size_t i = 0; src && i < r->n_fields; i++)
        es_path_set(src, r->fields[i].name, json_string(r->fields[i].value));
    double norm = 0;
    if (ix->info.metric == CORDON_METRIC_COSINE) {
        norm = json_number_value(json_object_get(src, ES_NORM_KEY));
        json_object_del(src, ES_NORM_KEY);
    }
    if (src && r->vector && ix->vector_field) {
        json_t *v = json_array();
        for (uint32_t i = 0; v && i < r->dim; i++)
            json_array_append_new(v, json_real(norm > 0 ? r->vector[i] * norm : r->vector[i]));
        es_path_set(src, ix->vector_field, v);
    }
    return src;
}
