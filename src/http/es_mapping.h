/* es_mapping.h: an Elasticsearch index as a cordon collection. The index's mappings (and
 * which fields carry the vector and the ACL) live in the collection's attrs; this module turns
 * mappings into a collection spec, documents into chunks (mapping unmapped fields as
 * Elasticsearch's dynamic mapping does) and stored chunks back into _source.
 * Relies on http/http.h and jansson. */
#ifndef CDN_ES_MAPPING_H
#define CDN_ES_MAPPING_H

#include "http/http.h"

/* An index as the server sees it; es_index_release frees it. */
typedef struct es_attrs_entry es_attrs_entry_t;

typedef struct es_index {
    char name[CORDON_NAME_MAX + 1];
    json_t *attrs;            /* {"mappings": {...}, "settings": {...}, "vector_field", "acl_field",
                                 "denied_field"}: owned, or shared's when that is set */
    es_attrs_entry_t *shared; /* es_index_load_shared's hold on a cached tree, or NULL */
    json_t *mappings;         /* borrowed from attrs */
    const char *vector_field, *acl_field, *denied_field;    /* borrowed; vector_field may be NULL */
    const char *tenant_field, *labels_field, *object_field; /* borrowed; NULL: none */
    /* Settings index.cordon.embedding_url / embedding_model / embedding_timeout_ms: the
     * endpoint that embeds query text for this index (NULL: none; borrowed). */
    const char *embed_url, *embed_model;
    unsigned embed_timeout_ms;
    /* index.cordon.embed_documents: documents that arrive without a vector are embedded from
     * the text of embed_fields (a borrowed list of paths; NULL: every text field). */
    int embed_documents;
    json_t *embed_fields;
    cordon_collection_info info;
} es_index_t;

#define ES_EMBED_TEXT_MAX 8192 /* bytes of a document's text sent to be embedded */

/* Loads index name: CORDON_OK, or the cordon status (NOT_FOUND for a missing index). */
int es_index_load(http_ctx_t *ctx, const char *name, es_index_t *out);
/* es_index_load for a request that only reads the index: its attrs tree may be shared with
 * other requests (ctx->attrs_cache), reused while the collection's attrs text is the same,
 * so the caller must not change ix->attrs or ix->mappings. */
int es_index_load_shared(http_ctx_t *ctx, const char *name, es_index_t *out);
/* The cache es_index_load_shared reads; CORDON_OK or CORDON_ERR_NOMEM. */
int es_attrs_cache_new(es_attrs_cache_t **out);
void es_attrs_cache_free(es_attrs_cache_t *c);
void es_index_release(es_index_t *ix);
/* Embeds text with the index's endpoint into out (info.dim floats). 0, or fills resp: 400 when
 * the index names no endpoint, 502 naming the endpoint when it fails. */
int es_index_embed(const es_index_t *ix, const char *text, float *out, http_resp_t *resp);

/* es_embed_docs.c: when ix embeds documents, fills the vector of each of sources[0..n) that has
 * none (and is not already failed[i]) from its text; a document whose embedding failed gets
 * failed[i] = 1 and the endpoint's reason in why. Returns the number failed. */
size_t es_embed_sources(const es_index_t *ix, json_t *const *sources, size_t n,
                        unsigned char *failed, char *why, size_t whysz);

/* Creates index name from a create-index body ({"settings", "mappings", "aliases"}; NULL or
 * {} for an empty one). 0, or fills resp with the error. */
int es_index_create(http_ctx_t *ctx, const char *name, json_t *body, http_resp_t *resp);
/* Adds the mappings' fields in body (a put-mapping body) to an existing index. */
int es_index_put_mapping(http_ctx_t *ctx, es_index_t *ix, json_t *body, http_resp_t *resp);

/* A document as a chunk: the strings are owned here, released by es_doc_release. */
typedef struct es_doc {
    cordon_chunk chunk;
    char id[CORDON_ID_MAX + 1];
    float *vector;
    /* Set before es_doc_from_source when vector already holds the index's vector, read from
     * the document line (es_vecscan), whose source has null in its place; vector_sumsq is
     * the sum of squares of the values as written. */
    int vector_scanned;
    double vector_sumsq;
    cordon_field fields[CORDON_TEXT_FIELDS_MAX];
    char *field_values[CORDON_TEXT_FIELDS_MAX];
    char *metadata;
    const char **allowed, **denied, **labels;
    char **acl_strings;
    size_t n_acl_strings;
} es_doc_t;

/* Fields a batch of documents brings that the index does not map yet. */
typedef struct es_dynamic {
    json_t *props; /* new mappings, merged into the index's at the end */
    int changed;
} es_dynamic_t;

/* es_convert.c: turns source into doc for index ix (doc->id already set). Unmapped fields are
 * mapped into dyn (dynamic mapping; "dynamic": "strict" refuses them). 0, or -1 with the reason in
 * why (a mapper_parsing_exception: wrong vector length, a string in a number field, ...) and *type
 * naming the Elasticsearch error type. */
int es_doc_from_source(const es_index_t *ix, json_t *source, es_dynamic_t *dyn, es_doc_t *doc,
                       const char **type, char *why, size_t whysz);
void es_doc_release(es_doc_t *doc);

/* Applies the fields dyn gathered to the index (one cordon_collection_alter), and reloads ix.
 * 0, or fills resp. Serialised by the caller's lock. */
int es_dynamic_apply(http_ctx_t *ctx, es_index_t *ix, es_dynamic_t *dyn, http_resp_t *resp);

/* The document's _source rebuilt from a record of index ix (new reference). */
json_t *es_source_of(const es_index_t *ix, const cordon_record *r);

#endif
