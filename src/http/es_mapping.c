/* es_mapping.c: Elasticsearch mappings over a cordon collection: loading an index (collection
 * info and attrs), creating the collection from a mapping, adding the fields that new mappings
 * or dynamic mapping bring (es_convert.c maps documents). Relies on http/es_paths, http/es and
 * the public API (cordon_collection_*). */
#include "http/es_mapping.h"
#include "base/mem.h"
#include "http/embed.h"
#include "http/es.h"
#include "http/es_paths.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Settings. ---- */

static json_t *setting_value(json_t *settings, const char *key)
{
    char flat[80];
    json_t *x = json_object_get(json_object_get(json_object_get(settings, "index"), "cordon"), key);
    if (!x) {
        snprintf(flat, sizeof flat, "index.cordon.%s", key);
        x = json_object_get(settings, flat);
    }
    if (!x)
        x = json_object_get(json_object_get(settings, "cordon"), key);
    return x;
}

static const char *setting(json_t *settings, const char *key)
{
    return json_string_value(setting_value(settings, key));
}

/* A boolean setting: true, or the string "true" as Elasticsearch's settings allow. */
static int setting_true(json_t *settings, const char *key)
{
    json_t *x = setting_value(settings, key);
    return json_is_true(x) || (json_is_string(x) && !strcmp(json_string_value(x), "true"));
}

/* ---- Loading an index. ---- */

/* An index's attrs as a tree, with a "mappings" object (a collection made outside the server
 * has none); NULL only when out of memory. */
static json_t *attrs_tree(const char *text)
{
    json_t *t = json_loads(text, 0, NULL);
    if (!json_is_object(t)) {
        json_decref(t);
        t = json_object();
    }
    if (t && !json_is_object(json_object_get(t, "mappings")) &&
        json_object_set_new(t, "mappings", json_object()) != 0) {
        json_decref(t);
        t = NULL;
    }
    return t;
}

/* The attrs trees last parsed, by index name and the attrs' exact text: a tree is reused only
 * for the very text it was parsed from, so a mapping change, or an index dropped and created
 * again with other attrs, is seen by the next request without any invalidation. Trees here are
 * shared between requests and never changed. Sharing counts in an entry of its own, not in
 * jansson's reference count: json_incref reads the count without an atomic load, which races
 * with another thread's json_decref. */
#define ATTRS_SLOTS 32

struct es_attrs_entry {
    atomic_size_t refs; /* one for the slot holding it, one for each index loaded with it */
    json_t *tree;
    char *text; /* the attrs it was parsed from (cdn_malloc'd) */
};

typedef struct attrs_slot {
    char name[CORDON_NAME_MAX + 1];
    es_attrs_entry_t *e; /* NULL = a free slot */
} attrs_slot_t;

struct es_attrs_cache {
    pthread_mutex_t lock;
    attrs_slot_t slot[ATTRS_SLOTS];
    unsigned next; /* the slot a new name takes */
};

static void entry_unref(es_attrs_entry_t *e)
{
    if (e && atomic_fetch_sub(&e->refs, 1) == 1) { /* the last holder: no one else sees it */
        json_decref(e->tree);
        cdn_free(e->text);
        cdn_free(e);
    }
}

int es_attrs_cache_new(es_attrs_cache_t **out)
{
    es_attrs_cache_t *c = cdn_calloc(1, sizeof *c);
    if (!c)
        return CORDON_ERR_NOMEM;
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return CORDON_OK;
}

void es_attrs_cache_free(es_attrs_cache_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < ATTRS_SLOTS; i++)
        entry_unref(c->slot[i].e);
    pthread_mutex_destroy(&c->lock);
    cdn_free(c);
}

static attrs_slot_t *slot_of(es_attrs_cache_t *c, const char *name)
{
    for (size_t i = 0; i < ATTRS_SLOTS; i++)
        if (c->slot[i].e && !strcmp(c->slot[i].name, name))
            return &c->slot[i];
    return NULL;
}

/* The entry for text of index name, held for the caller (entry_unref): the cache's when it
 * holds that text, else a new one put in the cache. NULL when out of memory. */
static es_attrs_entry_t *attrs_shared(es_attrs_cache_t *c, const char *name, const char *text)
{
    es_attrs_entry_t *e = NULL;
    pthread_mutex_lock(&c->lock);
    attrs_slot_t *s = slot_of(c, name);
    if (s && !strcmp(s->e->text, text)) {
        e = s->e;
        atomic_fetch_add(&e->refs, 1);
    }
    pthread_mutex_unlock(&c->lock);
    if (e)
        return e;
    if (!(e = cdn_calloc(1, sizeof *e)) || !(e->text = cdn_strdup(text)) ||
        !(e->tree = attrs_tree(text))) {
        if (e)
            cdn_free(e->text);
        cdn_free(e);
        return NULL;
    }
    atomic_init(&e->refs, 2); /* the caller's and the slot's */
    pthread_mutex_lock(&c->lock);
    if (!(s = slot_of(c, name))) { /* another request may have filled or moved it meanwhile */
        s = &c->slot[c->next];
        c->next = (c->next + 1) % ATTRS_SLOTS;
    }
    es_attrs_entry_t *old = s->e;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->e = e;
    pthread_mutex_unlock(&c->lock);
    entry_unref(old);
    return e;
}

static int index_load(http_ctx_t *ctx, const char *name, int shared, es_index_t *out)
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
    if (shared && ctx->attrs_cache) {
        out->shared = attrs_shared(ctx->attrs_cache, name, attrs);
        out->attrs = out->shared ? out->shared->tree : NULL;
    } else {
        out->attrs = attrs_tree(attrs);
    }
    cordon_free(attrs);
    if (!out->attrs)
        return CORDON_ERR_NOMEM;
    out->mappings = json_object_get(out->attrs, "mappings");
    out->vector_field = json_string_value(json_object_get(out->attrs, "vector_field"));
    out->acl_field = json_string_value(json_object_get(out->attrs, "acl_field"));
    out->denied_field = json_string_value(json_object_get(out->attrs, "denied_field"));
    if (!out->acl_field)
        out->acl_field = out->info.acl_field;
    if (!out->denied_field)
        out->denied_field = "denied_groups";
    out->tenant_field = json_string_value(json_object_get(out->attrs, "tenant_field"));
    out->labels_field = json_string_value(json_object_get(out->attrs, "labels_field"));
    out->object_field = json_string_value(json_object_get(out->attrs, "object_field"));
    if (!out->vector_field && out->info.dim)
        out->vector_field = "vector";
    json_t *settings = json_object_get(out->attrs, "settings");
    out->embed_url = setting(settings, "embedding_url");
    out->embed_model = setting(settings, "embedding_model");
    json_t *to = setting_value(settings, "embedding_timeout_ms");
    out->embed_timeout_ms =
        json_is_integer(to) && json_integer_value(to) > 0 ? (unsigned)json_integer_value(to) : 0;
    out->embed_documents = setting_true(settings, "embed_documents");
    out->embed_fields = setting_value(settings, "embed_fields");
    return CORDON_OK;
}

int es_index_load(http_ctx_t *ctx, const char *name, es_index_t *out)
{
    return index_load(ctx, name, 0, out);
}

int es_index_load_shared(http_ctx_t *ctx, const char *name, es_index_t *out)
{
    return index_load(ctx, name, 1, out);
}

int es_index_embed(const es_index_t *ix, const char *text, float *out, http_resp_t *resp)
{
    char why[512];
    if (!ix->embed_url || !ix->info.dim) {
        es_error(resp, 400, "illegal_argument_exception",
                 "index [%s] names no embedding endpoint: give the query's vector, or create the "
                 "index with settings index.cordon.embedding_url",
                 ix->name);
        return -1;
    }
    embed_endpoint_t ep = {ix->embed_url, ix->embed_model, ix->embed_timeout_ms};
    if (embed_text(&ep, text, ix->info.dim, out, why, sizeof why) != 0) {
        es_error(resp, 502, "embedding_endpoint_exception", "%s", why);
        return -1;
    }
    return 0;
}

void es_index_release(es_index_t *ix)
{
    if (ix->shared)
        entry_unref(ix->shared);
    else
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
        es_kind_t kind = es_kind_of(m);
        if (json_object_get(m, "type") && kind == ES_K_OTHER) {
            snprintf(b->why, sizeof b->why,
                     "No handler for type [%.64s] declared on field [%.150s]",
                     json_string_value(json_object_get(m, "type")), path);
            return -1;
        }
        if (!es_indexed(m) && kind != ES_K_VECTOR)
            continue;
        switch (kind) {
        case ES_K_TEXT:
            if (!add_text(b, path))
                json_object_set_new(m, "index", json_false());
            if (es_has_keyword_sub(m)) {
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
                snprintf(
                    b->why, sizeof b->why,
                    "index maps two dense_vector fields ([%.100s] and [%.100s]); cordon keeps one "
                    "vector per document",
                    b->vector, path);
                return -1;
            }
            if (strlen(path) > CORDON_NAME_MAX) {
                snprintf(b->why, sizeof b->why,
                         "dense_vector field name [%.64s...] is longer than 128 bytes", path);
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
    /* Quantized types ask for codes; "hnsw" and "flat" for float rows only; no type leaves the
     * choice to cordon (codes from CORDON_CODES_MIN_DIM dimensions up), as Elasticsearch
     * quantizes by default. */
    if (type)
        s->int8_scan = strstr(type, "int8") || strstr(type, "int4") || strstr(type, "bbq") ? 1 : -1;
    return 0;
}

/* index.cordon.embed_documents needs an endpoint and a vector field to fill; embed_fields is a
 * list of paths. 0, or a 400 in resp. */
static int embed_settings_check(json_t *settings, const char *vector_field, http_resp_t *resp)
{
    json_t *x = setting_value(settings, "embed_documents"), *f;
    json_t *fields = setting_value(settings, "embed_fields");
    size_t i;
    if (x && !json_is_boolean(x) &&
        !(json_is_string(x) &&
          (!strcmp(json_string_value(x), "true") || !strcmp(json_string_value(x), "false")))) {
        es_error(resp, 400, "illegal_argument_exception",
                 "index.cordon.embed_documents must be true or false");
        return -1;
    }
    if (setting_true(settings, "embed_documents") &&
        (!setting(settings, "embedding_url") || !vector_field)) {
        es_error(resp, 400, "illegal_argument_exception",
                 "index.cordon.embed_documents needs index.cordon.embedding_url and a "
                 "dense_vector field in the mappings");
        return -1;
    }
    if (fields && !json_is_array(fields)) {
        es_error(resp, 400, "illegal_argument_exception",
                 "index.cordon.embed_fields must be a list of field names");
        return -1;
    }
    json_array_foreach(fields, i, f) if (!json_is_string(f))
    {
        es_error(resp, 400, "illegal_argument_exception",
                 "index.cordon.embed_fields must be a list of field names");
        return -1;
    }
    return 0;
}

/* "index.cordon.acl_field" in settings (nested or flat), else the server's rule for name. */
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
    const char *acl, *denied, *tenant, *labels, *object;
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
    /* the tenant and labels fields: the server's, or the index's own settings */
    tenant = setting(settings, "tenant_field") ? setting(settings, "tenant_field")
             : ctx->cfg.tenant_field[0]        ? ctx->cfg.tenant_field
                                               : NULL;
    labels = setting(settings, "labels_field") ? setting(settings, "labels_field")
             : ctx->cfg.labels_field[0]        ? ctx->cfg.labels_field
                                               : NULL;
    object = setting(settings, "object_field") ? setting(settings, "object_field")
             : ctx->cfg.object_field[0]        ? ctx->cfg.object_field
                                               : NULL;
    if (!json_is_object(mappings) || !json_is_object(settings)) {
        es_error(resp, 400, "mapper_parsing_exception", "mappings and settings must be objects");
        goto done;
    }
    ensure_keyword(mappings, acl);
    ensure_keyword(mappings, denied);
    if (tenant)
        ensure_keyword(mappings, tenant);
    if (labels)
        ensure_keyword(mappings, labels);
    if (object)
        ensure_keyword(mappings, object);
    if (walk_props(&b, json_object_get(mappings, "properties"), "") ||
        (b.vector && vector_spec(&b, &s))) {
        es_error(resp, 400, "mapper_parsing_exception", "%s", b.why);
        goto done;
    }
    if (embed_settings_check(settings, b.vector, resp))
        goto done;
    json_t *a =
        json_pack("{s:O, s:O, s:s?, s:s, s:s, s:s?, s:s?, s:s?}", "mappings", mappings, "settings",
                  settings, "vector_field", b.vector, "acl_field", acl, "denied_field", denied,
                  "tenant_field", tenant, "labels_field", labels, "object_field", object);
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
    /* Keys bound to principals (not to subjects) search such an index with their principals. */
    s.asserted_principals = setting_true(settings, "asserted_principals");
    /* index.cordon.authorizer: an authorizer of the server's authorizers_file that every
     * search and read of the index also asks (docs/internals/pdp.md). */
    s.authorizer = setting(settings, "authorizer");
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
        if (have && es_kind_of(have) == ES_K_OBJECT && es_kind_of(m) == ES_K_OBJECT) {
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
        if (have && es_kind_of(have) != es_kind_of(m)) {
            json_decref(dyn.props);
            es_error(resp, 400, "illegal_argument_exception",
                     "mapper [%s] cannot be changed from type [%s] to [%s]", k,
                     json_string_value(json_object_get(have, "type")),
                     json_string_value(json_object_get(m, "type")));
            return -1;
        }
        if (es_kind_of(m) == ES_K_VECTOR && !have) {
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
