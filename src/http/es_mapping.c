/* es_mapping.c: Elasticsearch mappings over a cordon collection: creating the collection from a
 * mapping, documents to chunks with dynamic mapping, chunks back to _source. Relies on
 * http/es_paths, http/es and the public API (cordon_collection_*). */
#include "http/es_mapping.h"
#include "base/mem.h"
#include "http/es.h"
#include "http/es_paths.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Strings longer than this get no keyword copy, as Elasticsearch's default ignore_above. */
#define ES_IGNORE_ABOVE 256

typedef enum es_kind {
    ES_K_OTHER = 0,
    ES_K_TEXT,
    ES_K_KEYWORD,
    ES_K_NUMBER,
    ES_K_DATE,
    ES_K_BOOL,
    ES_K_VECTOR,
    ES_K_OBJECT,
} es_kind_t;

static es_kind_t kind_of(json_t *m)
{
    const char *t = json_string_value(json_object_get(m, "type"));
    static const char *const nums[] = {"long",       "integer",      "short",
                                       "byte",       "float",        "double",
                                       "half_float", "scaled_float", "unsigned_long"};
    if (!t)
        return json_object_get(m, "properties") || json_is_object(m) ? ES_K_OBJECT : ES_K_OTHER;
    if (!strcmp(t, "text") || !strcmp(t, "match_only_text"))
        return ES_K_TEXT;
    if (!strcmp(t, "keyword") || !strcmp(t, "constant_keyword") || !strcmp(t, "wildcard"))
        return ES_K_KEYWORD;
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
        if (!strcmp(t, nums[i]))
            return ES_K_NUMBER;
    if (!strcmp(t, "date") || !strcmp(t, "date_nanos"))
        return ES_K_DATE;
    if (!strcmp(t, "boolean"))
        return ES_K_BOOL;
    if (!strcmp(t, "dense_vector"))
        return ES_K_VECTOR;
    if (!strcmp(t, "object") || !strcmp(t, "nested") || !strcmp(t, "flattened"))
        return ES_K_OBJECT;
    return ES_K_OTHER;
}

static int has_keyword_sub(json_t *m)
{
    json_t *kw = json_object_get(json_object_get(m, "fields"), "keyword");
    return kind_of(kw) == ES_K_KEYWORD;
}

static int indexed(json_t *m)
{
    return !json_is_false(json_object_get(m, "index"));
}

/* ---- Loading an index. ---- */

int es_index_load(http_ctx_t *ctx, const char *name, es_index_t *out)
{
    char *attrs = NULL;
    int rc;
    memset(out, 0, sizeof *out);
    if (strlen(name) > CORDON_NAME_MAX)
        return CORDON_ERR_NOT_FOUND;
    if ((rc = cordon_collection_info_get(ctx->db, name, &out->info, NULL)) != 0 ||
        (rc = cordon_collection_attrs(ctx->db, name, &attrs, NULL)) != 0)
        return rc;
    memcpy(out->name, name, strlen(name) + 1);
    out->attrs = json_loads(attrs, 0, NULL);
    cordon_free(attrs);
    if (!json_is_object(out->attrs)) {
        json_decref(out->attrs);
        out->attrs = json_object();
    }
    out->mappings = json_object_get(out->attrs, "mappings");
    if (!json_is_object(out->mappings)) { /* a collection made outside the server */
        out->mappings = json_object();
        json_object_set_new(out->attrs, "mappings", out->mappings);
    }
    out->vector_field = json_string_value(json_object_get(out->attrs, "vector_field"));
    out->acl_field = json_string_value(json_object_get(out->attrs, "acl_field"));
    out->denied_field = json_string_value(json_object_get(out->attrs, "denied_field"));
    if (!out->acl_field)
        out->acl_field = out->info.acl_field;
    if (!out->denied_field)
        out->denied_field = "denied_groups";
    if (!out->vector_field && out->info.dim)
        out->vector_field = "vector";
    return out->attrs ? CORDON_OK : CORDON_ERR_NOMEM;
}

void es_index_release(es_index_t *ix)
{
    json_decref(ix->attrs);
    memset(ix, 0, sizeof *ix);
}

/* ---- Creating an index from mappings. ---- */

typedef struct spec_build {
    const char *text[CORDON_TEXT_FIELDS_MAX];
    size_t n_text;
    cordon_meta_field meta[CORDON_META_FIELDS_MAX];
    char meta_names[CORDON_META_FIELDS_MAX][CORDON_NAME_MAX + 1];
    size_t n_meta;
    char text_names[CORDON_TEXT_FIELDS_MAX][CORDON_NAME_MAX + 1];
    const char *vector;
    char vector_path[CORDON_NAME_MAX + 1];
    json_t *vector_m;
    char why[300];
} spec_build_t;

static int add_meta(spec_build_t *b, const char *name, cordon_meta_kind k)
{
    for (size_t i = 0; i < b->n_meta; i++)
        if (!strcmp(b->meta_names[i], name))
            return 0;
    if (b->n_meta == CORDON_META_FIELDS_MAX || strlen(name) > CORDON_NAME_MAX)
        return 0; /* stored, not filterable: the mapping says index false below */
    memcpy(b->meta_names[b->n_meta], name, strlen(name) + 1);
    b->meta[b->n_meta] = (cordon_meta_field){b->meta_names[b->n_meta], k};
    b->n_meta++;
    return 1;
}

static int add_text(spec_build_t *b, const char *name)
{
    for (size_t i = 0; i < b->n_text; i++)
        if (!strcmp(b->text_names[i], name))
            return 1;
    if (b->n_text == CORDON_TEXT_FIELDS_MAX || strlen(name) > CORDON_NAME_MAX)
        return 0;
    memcpy(b->text_names[b->n_text], name, strlen(name) + 1);
    b->text[b->n_text] = b->text_names[b->n_text];
    b->n_text++;
    return 1;
}

/* Walks properties under prefix, collecting what the collection must index. -1: bad mapping
 * (b->why). */
static int walk_props(spec_build_t *b, json_t *props, const char *prefix)
{
    const char *k;
    json_t *m;
    json_object_foreach(props, k, m)
    {
        char path[512];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", k);
        if (!json_is_object(m)) {
            snprintf(b->why, sizeof b->why, "Expected map for property [fields] on field [%.200s]",
                     path);
            return -1;
        }
        es_kind_t kind = kind_of(m);
        if (json_object_get(m, "type") && kind == ES_K_OTHER) {
            snprintf(b->why, sizeof b->why,
                     "No handler for type [%.40s] declared on field [%.200s]",
                     json_string_value(json_object_get(m, "type")), path);
            return -1;
        }
        if (!indexed(m) && kind != ES_K_VECTOR)
            continue;
        switch (kind) {
        case ES_K_TEXT:
            if (!add_text(b, path))
                json_object_set_new(m, "index", json_false());
            if (has_keyword_sub(m)) {
                char kw[600];
                snprintf(kw, sizeof kw, "%s.keyword", path);
                add_meta(b, kw, CORDON_META_KEYWORD);
            }
            break;
        case ES_K_KEYWORD:
            if (!add_meta(b, path, CORDON_META_KEYWORD))
                json_object_set_new(m, "index", json_false());
            break;
        case ES_K_NUMBER:
            if (!add_meta(b, path, CORDON_META_NUMBER))
                json_object_set_new(m, "index", json_false());
            break;
        case ES_K_DATE:
            if (!add_meta(b, path, CORDON_META_DATE))
                json_object_set_new(m, "index", json_false());
            break;
        case ES_K_BOOL:
            if (!add_meta(b, path, CORDON_META_BOOL))
                json_object_set_new(m, "index", json_false());
            break;
        case ES_K_VECTOR:
            if (b->vector) {
                snprintf(b->why, sizeof b->why,
                         "index maps two dense_vector fields ([%.100s] and [%.100s]); cordon keeps "
                         "one vector per document",
                         b->vector, path);
                return -1;
            }
            if (strlen(path) >= sizeof b->vector_path) {
                snprintf(b->why, sizeof b->why,
                         "dense_vector field [%.200s]: its path is longer than %d bytes", path,
                         CORDON_NAME_MAX);
                return -1;
            }
            memcpy(b->vector_path, path, strlen(path) + 1);
            b->vector = b->vector_path;
            b->vector_m = m;
            break;
        case ES_K_OBJECT:
            if (walk_props(b, json_object_get(m, "properties"), path))
                return -1;
            break;
        default: break;
        }
    }
    return 0;
}

static int vector_spec(spec_build_t *b, cordon_collection_spec *s)
{
    json_t *m = b->vector_m, *io = json_object_get(m, "index_options");
    json_t *dims = json_object_get(m, "dims");
    const char *sim = json_string_value(json_object_get(m, "similarity"));
    const char *type = json_string_value(json_object_get(io, "type"));
    if (!json_is_integer(dims) || json_integer_value(dims) < 1 ||
        json_integer_value(dims) > CORDON_DIM_MAX) {
        snprintf(b->why, sizeof b->why,
                 "dense_vector field [%s] needs dims between 1 and %d (cordon does not infer "
                 "them from the first document of an index created with a mapping)",
                 b->vector, CORDON_DIM_MAX);
        return -1;
    }
    s->dim = (uint32_t)json_integer_value(dims);
    if (!sim || !strcmp(sim, "cosine"))
        s->metric = CORDON_METRIC_COSINE;
    else if (!strcmp(sim, "dot_product") || !strcmp(sim, "max_inner_product"))
        s->metric = CORDON_METRIC_DOT;
    else if (!strcmp(sim, "l2_norm"))
        s->metric = CORDON_METRIC_L2;
    else {
        snprintf(b->why, sizeof b->why,
                 "unknown similarity [%s] for dense_vector [%s]: cosine, dot_product, "
                 "max_inner_product or l2_norm",
                 sim, b->vector);
        return -1;
    }
    if (!sim)
        json_object_set_new(m, "similarity", json_string("cosine"));
    json_object_set_new(m, "index", json_true());
    if (json_integer_value(json_object_get(io, "m")) > 0)
        s->hnsw_m = (uint32_t)json_integer_value(json_object_get(io, "m"));
    if (json_integer_value(json_object_get(io, "ef_construction")) > 0)
        s->hnsw_ef_construction =
            (uint32_t)json_integer_value(json_object_get(io, "ef_construction"));
    s->int8_scan = type && (strstr(type, "int8") || strstr(type, "int4") || strstr(type, "bbq"));
    return 0;
}

/* "index.cordon.acl_field" in settings (nested or flat), else the server's rule for name. */
static const char *setting(json_t *settings, const char *key)
{
    char flat[80];
    json_t *x = json_object_get(json_object_get(json_object_get(settings, "index"), "cordon"), key);
    if (!x) {
        snprintf(flat, sizeof flat, "index.cordon.%s", key);
        x = json_object_get(settings, flat);
    }
    if (!x)
        x = json_object_get(json_object_get(settings, "cordon"), key);
    return json_string_value(x);
}

static void ensure_keyword(json_t *mappings, const char *path)
{
    if (!es_mapping_get(mappings, path))
        es_mapping_set(mappings, path, json_pack("{s:s}", "type", "keyword"));
}

int es_index_create(http_ctx_t *ctx, const char *name, json_t *body, http_resp_t *resp)
{
    spec_build_t b;
    cordon_collection_spec s = {0};
    cordon_error err = {0};
    json_t *mappings = json_deep_copy(json_object_get(body, "mappings"));
    json_t *settings = json_deep_copy(json_object_get(body, "settings"));
    const char *acl, *denied;
    char *attrs = NULL;
    int rc = -1;
    memset(&b, 0, sizeof b);
    if (!mappings)
        mappings = json_object();
    if (!settings)
        settings = json_object();
    http_config_acl_fields(&ctx->cfg, name, &acl, &denied);
    if (setting(settings, "acl_field"))
        acl = setting(settings, "acl_field");
    if (setting(settings, "denied_field"))
        denied = setting(settings, "denied_field");
    if (!json_is_object(mappings) || !json_is_object(settings)) {
        es_error(resp, 400, "mapper_parsing_exception", "mappings and settings must be objects");
        goto done;
    }
    ensure_keyword(mappings, acl);
    ensure_keyword(mappings, denied);
    if (walk_props(&b, json_object_get(mappings, "properties"), "") ||
        (b.vector && vector_spec(&b, &s))) {
        es_error(resp, 400, "mapper_parsing_exception", "%s", b.why);
        goto done;
    }
    json_t *a = json_pack("{s:O, s:O, s:s?, s:s, s:s}", "mappings", mappings, "settings", settings,
                          "vector_field", b.vector, "acl_field", acl, "denied_field", denied);
    attrs = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    if (!attrs) {
        es_error(resp, 500, "exception", "out of memory");
        goto done;
    }
    s.name = name;
    s.text_fields = b.text;
    s.n_text_fields = b.n_text;
    s.meta_fields = b.meta;
    s.n_meta_fields = b.n_meta;
    s.acl_field = acl;
    s.attrs_json = attrs;
    if ((rc = cordon_collection_create(ctx->db, &s, &err)) != 0) {
        if (rc == CORDON_ERR_EXISTS)
            es_error(resp, 400, "resource_already_exists_exception",
                     "index [%s/_na_] already exists", name);
        else
            es_error_cordon(resp, rc, &err, "invalid_index_name_exception");
        rc = -1;
    }
done:
    free(attrs);
    json_decref(mappings);
    json_decref(settings);
    return rc;
}

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
    if (!strcmp(path, ix->acl_field) || !strcmp(path, ix->denied_field))
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
        es_kind_t kind = kind_of(m);
        if (kind == ES_K_OBJECT)
            n += count_kind(m, want, text_total);
        else if (kind == want && indexed(m))
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
    if (has_keyword_sub(m) && json_is_string(v) && json_string_length(v) <= ES_IGNORE_ABOVE) {
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
    if (!c->ix->vector_field || strcmp(path, c->ix->vector_field) || !dim)
        return 0; /* a second vector field: kept in _source only */
    (void)m;
    if (!json_is_array(v) || json_array_size(v) != dim) {
        char n[32];
        snprintf(n, sizeof n, "%u", dim);
        return fail(c, "mapper_parsing_exception",
                    "The [dense_vector] field [%s] in doc must have %s dimensions", path, n);
    }
    if (!(c->doc->vector = cdn_malloc(dim * sizeof(float))))
        return fail(c, "exception", "out of memory%s%s", "", "");
    json_array_foreach(v, i, x)
    {
        double d = json_number_value(x);
        if (!json_is_number(x) || !isfinite(d) || fabs(d) > 3.4e38)
            return fail(c, "mapper_parsing_exception",
                        "failed to parse field [%s] of type [dense_vector]: element %s is not a "
                        "finite number",
                        path, "");
        c->doc->vector[i] = (float)d;
    }
    es_path_del(c->meta, path);
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
            if (!(m = dynamic_mapping(c->ix, path, k, v)))
                continue;
            /* Limits: text fields beyond the collection's become keywords, metadata fields
             * beyond its limit are stored only. */
            es_kind_t nk = kind_of(m);
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
            if (m && kind_of(m) != ES_K_OBJECT && metas + 1 >= CORDON_META_FIELDS_MAX)
                json_object_set_new(m, "index", json_false());
            if (!m || es_mapping_set(c->dyn->props, path, m))
                return fail(c, "exception", "out of memory%s%s", "", "");
            c->dyn->changed = 1;
            m = es_mapping_get(c->dyn->props, path);
        }
        es_kind_t kind = kind_of(m);
        int rc = 0;
        if (kind == ES_K_OBJECT && json_is_object(v))
            rc = conv_walk(c, v, path);
        else if (kind == ES_K_OBJECT && json_is_array(v)) {
            size_t i;
            json_t *x;
            json_array_foreach(v, i, x) if (!rc && json_is_object(x)) rc = conv_walk(c, x, path);
        } else if (kind == ES_K_VECTOR)
            rc = conv_vector(c, path, m, v);
        else if (kind == ES_K_TEXT && indexed(m) &&
                 (is_text_field(c->ix, path) || es_mapping_get(c->dyn->props, path)))
            rc = conv_text(c, path, m, v);
        else
            rc = conv_value(c, path, kind, v);
        if (rc)
            return rc;
    }
    return 0;
}

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
                        "field [%s] holds the principals that may read the document: give "
                        "strings such as \"eng\" or \"user:alice\"%s",
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
    size_t na = 0, nd = 0;
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
    if (rc == 0 && !(doc->metadata = json_dumps(c.meta, JSON_COMPACT)))
        rc = fail(&c, "exception", "out of memory%s%s", "", "");
    if (rc == 0 && strlen(doc->metadata) > CORDON_METADATA_MAX)
        rc = fail(&c, "mapper_parsing_exception",
                  "the document's fields other than text and vector take more than 64 KiB%s%s", "",
                  "");
    json_decref(c.meta);
    doc->chunk = (cordon_chunk){doc->id,      doc->vector, doc->fields, c.n_fields, doc->metadata,
                                doc->allowed, na,          doc->denied, nd};
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
    cdn_free(d->vector);
    free(d->metadata); /* from jansson */
    memset(d, 0, sizeof *d);
}

/* Collects the fields of a mappings fragment the collection must start indexing. */
static void new_fields(spec_build_t *b, json_t *props, const char *prefix)
{
    if (walk_props(b, props, prefix))
        b->why[0] = '\0'; /* dynamic mappings are made well formed above */
}

static int merge_props(json_t *into, json_t *from)
{
    const char *k;
    json_t *m;
    json_object_foreach(json_object_get(from, "properties"), k, m)
    {
        json_t *have = json_object_get(json_object_get(into, "properties"), k);
        if (have && kind_of(have) == ES_K_OBJECT && kind_of(m) == ES_K_OBJECT) {
            if (merge_props(have, m))
                return -1;
        } else if (!have && es_mapping_set(into, k, json_incref(m))) {
            return -1;
        }
    }
    return 0;
}

int es_dynamic_apply(http_ctx_t *ctx, es_index_t *ix, es_dynamic_t *dyn, http_resp_t *resp)
{
    spec_build_t b;
    cordon_collection_change ch = {0};
    cordon_error err = {0};
    char *attrs;
    char name[CORDON_NAME_MAX + 1];
    int rc;
    if (!dyn->changed)
        return 0;
    memset(&b, 0, sizeof b);
    new_fields(&b, json_object_get(dyn->props, "properties"), "");
    if (merge_props(ix->mappings, dyn->props) || !(attrs = json_dumps(ix->attrs, JSON_COMPACT))) {
        es_error(resp, 500, "exception", "out of memory");
        return -1;
    }
    ch.attrs_json = attrs;
    ch.add_meta_fields = b.meta;
    ch.n_add_meta_fields = b.n_meta;
    ch.add_text_fields = b.text;
    ch.n_add_text_fields = b.n_text;
    rc = cordon_collection_alter(ctx->db, ix->name, &ch, &err);
    free(attrs);
    if (rc) {
        es_error_cordon(resp, rc, &err, "mapper_parsing_exception");
        return -1;
    }
    json_decref(dyn->props);
    dyn->props = NULL;
    dyn->changed = 0;
    memcpy(name, ix->name, sizeof name);
    es_index_release(ix);
    if ((rc = es_index_load(ctx, name, ix)) != 0) {
        es_error_index(resp, name);
        return -1;
    }
    return 0;
}

int es_index_put_mapping(http_ctx_t *ctx, es_index_t *ix, json_t *body, http_resp_t *resp)
{
    es_dynamic_t dyn = {json_pack("{s:O?}", "properties", json_object_get(body, "properties")), 1};
    const char *k;
    json_t *m;
    int rc;
    json_object_foreach(json_object_get(body, "properties"), k, m)
    {
        json_t *have = es_mapping_get(ix->mappings, k);
        if (have && kind_of(have) != kind_of(m)) {
            json_decref(dyn.props);
            es_error(resp, 400, "illegal_argument_exception",
                     "mapper [%s] cannot be changed from type [%s] to [%s]", k,
                     json_string_value(json_object_get(have, "type")),
                     json_string_value(json_object_get(m, "type")));
            return -1;
        }
        if (kind_of(m) == ES_K_VECTOR && !have) {
            json_decref(dyn.props);
            es_error(resp, 400, "illegal_argument_exception",
                     "cannot add dense_vector [%s] to index [%s]: cordon fixes an index's vector "
                     "field when it is created",
                     k, ix->name);
            return -1;
        }
    }
    if (json_object_get(body, "dynamic"))
        json_object_set(ix->mappings, "dynamic", json_object_get(body, "dynamic"));
    if (json_object_get(body, "dynamic_templates"))
        json_object_set(ix->mappings, "dynamic_templates",
                        json_object_get(body, "dynamic_templates"));
    rc = es_dynamic_apply(ctx, ix, &dyn, resp);
    json_decref(dyn.props);
    return rc;
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
    if (src && r->vector && ix->vector_field) {
        json_t *v = json_array();
        for (uint32_t i = 0; v && i < r->dim; i++)
            json_array_append_new(v, json_real(r->vector[i]));
        es_path_set(src, ix->vector_field, v);
    }
    return src;
}
