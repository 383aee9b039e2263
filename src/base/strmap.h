/* strmap.h: an open-addressing hash map from strings to uint32 values.
 * Relies on xxhash. The map owns copies of its keys; not thread-safe (callers lock). */
#ifndef CDN_STRMAP_H
#define CDN_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct cdn_strmap {
    char **keys; /* NULL = empty slot; keys are owned */
    uint32_t *vals;
    size_t cap; /* power of two */
    size_t len;
} cdn_strmap_t;

void cdn_strmap_init(cdn_strmap_t *m);
void cdn_strmap_free(cdn_strmap_t *m);
/* 0 with *val set, or CDN_ERR_NOT_FOUND. */
int cdn_strmap_get(const cdn_strmap_t *m, const char *key, size_t klen, uint32_t *val);
/* Inserts or overwrites; 0 or CDN_ERR_NOMEM (map unchanged). */
int cdn_strmap_put(cdn_strmap_t *m, const char *key, size_t klen, uint32_t val);
/* Removes key if present; 0 or CDN_ERR_NOT_FOUND. */
int cdn_strmap_del(cdn_strmap_t *m, const char *key, size_t klen);

#endif
