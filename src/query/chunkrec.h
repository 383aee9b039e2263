/* chunkrec.h: the stored form of a chunk in STORE_CHUNKS: its row (4 bytes, big-endian) then a
 * JSON object {"fields":{...},"metadata":{...},"allowed":[...],"denied":[...]}, with
 * "tenant":"..." and "labels":[...] when the chunk has them.
 * Relies on jansson. */
#ifndef CDN_CHUNKREC_H
#define CDN_CHUNKREC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Who may read a chunk, as its record keeps it: principals as given (canonical), unqualified
 * by the tenant. */
typedef struct chunkrec_access {
    const char *const *allowed;
    size_t na;
    const char *const *denied;
    size_t nd;
    const char *tenant; /* NULL: none */
    const char *const *labels;
    size_t nl;
    const char *object; /* NULL: none */
} chunkrec_access_t;

/* Builds a record; *rec is freed by the caller with cdn_free. 0 or CDN_ERR_NOMEM. */
int chunkrec_encode(uint32_t row, const char *const *names, const char *const *values,
                    size_t nfields, const char *metadata_json, const chunkrec_access_t *acc,
                    char **rec, size_t *len);
/* Sets a decoded record's allowed, denied, tenant and labels (the last two left out when
 * empty). 0 or CDN_ERR_NOMEM. */
int chunkrec_set_access(json_t *obj, const chunkrec_access_t *acc);

/* The row of a stored record; CDN_ERR_CORRUPT if too short. */
int chunkrec_row(const void *rec, size_t len, uint32_t *row);

/* Decodes a record's JSON; *obj is released with json_decref. */
int chunkrec_decode(const void *rec, size_t len, uint32_t *row, json_t **obj);

/* Re-encodes a decoded record with a new row and/or ACL (allowed/denied may be NULL to keep). */
int chunkrec_reencode(uint32_t row, json_t *obj, char **rec, size_t *len);

/* Checks that metadata_json is NULL or a JSON object of at most max bytes. */
int chunkrec_check_metadata(const char *id, const char *metadata_json, size_t max, cdn_err_t *err);

#endif
