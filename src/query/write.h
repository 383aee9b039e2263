/* write.h: the write path: validate a batch, commit it to LMDB in one transaction, then apply
 * it to the in-memory indexes and publish the new revision. Relies on query/engine.
 * Input is read during the call only; nothing is kept. */
#ifndef CDN_WRITE_H
#define CDN_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "query/engine.h"

#define WRITE_ID_MAX COLL_ID_MAX /* query/coll.h: an LMDB key less the collection */
#define WRITE_METADATA_MAX (64 * 1024)
#define WRITE_TEXT_MAX (1024 * 1024)
#define WRITE_BATCH_MAX 100000

typedef struct write_chunk {
    const char *id;
    const float *vector;
    const char *const *field_names;
    const char *const *field_values;
    size_t n_fields;
    const char *metadata_json;
    const char *const *allowed;
    size_t n_allowed;
    const char *const *denied;
    size_t n_denied;
    const char *tenant; /* NULL: none */
    const char *const *labels;
    size_t n_labels;
    const char *object; /* NULL: none */
} write_chunk_t;

typedef struct write_acl {
    const char *id;
    const char *const *allowed;
    size_t n_allowed;
    const char *const *denied;
    size_t n_denied;
    const char *const *labels; /* replace the chunk's labels; its tenant stays */
    size_t n_labels;
} write_acl_t;

/* Each returns 0 and the new revision, or an error (CDN_ERR_INVALID / LIMIT naming the chunk
 * and field, CDN_ERR_NOT_FOUND for an unknown collection or, in write_set_acl, chunk id,
 * CDN_ERR_IO, CDN_ERR_NOMEM) after which nothing has changed. */
int write_put(engine_t *e, const char *coll, const write_chunk_t *chunks, size_t n, uint64_t *rev,
              cdn_err_t *err);
int write_delete(engine_t *e, const char *coll, const char *const *ids, size_t n, size_t *deleted,
                 uint64_t *rev, cdn_err_t *err);
int write_set_acl(engine_t *e, const char *coll, const write_acl_t *changes, size_t n,
                  uint64_t *rev, cdn_err_t *err);

/* Checks one chunk against collection coll by the very rules write_put applies (id, vector,
 * text fields, metadata, ACL), writing nothing: 0, CDN_ERR_INVALID / LIMIT naming the field,
 * CDN_ERR_NOT_FOUND for an unknown collection, CDN_ERR_NOMEM. For loaders that must refuse a
 * whole file before its first batch is written. */
int write_check(engine_t *e, const char *coll, const write_chunk_t *chunk, cdn_err_t *err);

/* Messages of a check of one chunk say "the chunk" rather than "chunk <index>". */
#define WRITE_NO_INDEX ((size_t)-1)

/* Checks a chunk id: 1..WRITE_ID_MAX bytes, no control characters. index is the chunk's place
 * in its batch, named in the message, or WRITE_NO_INDEX. */
int write_id_check(const char *id, size_t index, cdn_err_t *err);

#endif
