/* strmap.c: linear probing with backward-shift deletion, so no tombstones accumulate.
 * Relies on xxhash (XXH3) for the hash and mem.h for storage. */
#include "base/strmap.h"
#include "base/err.h"
#include "base/mem.h"

#include <string.h>
#include <xxhash.h>

void cdn_strmap_init(cdn_strmap_t *m)
{
    memset(m, 0, sizeof *m);
}

void cdn_strmap_free(cdn_strmap_t *m)
{
    for (size_t i = 0; i < m->cap; i++)
        cdn_free(m->keys[i]);
    cdn_free(m->keys);
    cdn_free(m->vals);
    memset(m, 0, sizeof *m);
}

static size_t slot_of(const cdn_strmap_t *m, const char *key, size_t klen)
{
    return (size_t)XXH3_64bits(key, klen) & (m->cap - 1);
}

static int key_eq(const char *k, const char *key, size_t klen)
{
    return strncmp(k, key, klen) == 0 && k[klen] == '\0';
}

int cdn_strmap_get(const cdn_strmap_t *m, const char *key, size_t klen, uint32_t *val)
{
    if (!m->cap)
        return CDN_ERR_NOT_FOUND;
    for (size_t i = slot_of(m, key, klen);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i])
            return CDN_ERR_NOT_FOUND;
        if (key_eq(m->keys[i], key, klen)) {
            *val = m->vals[i];
            return CDN_OK;
        }
    }
}

static int rehash(cdn_strmap_t *m, size_t cap)
{
    cdn_strmap_t n = {cdn_calloc(cap, sizeof(char *)), cdn_calloc(cap, sizeof(uint32_t)), cap, 0};
    if (!n.keys || !n.vals) {
        cdn_free(n.keys);
        cdn_free(n.vals);
        return CDN_ERR_NOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = slot_of(&n, m->keys[i], strlen(m->keys[i]));
        while (n.keys[j])
            j = (j + 1) & (cap - 1);
        n.keys[j] = m->keys[i];
        n.vals[j] = m->vals[i];
    }
    n.len = m->len;
    cdn_free(m->keys);
    cdn_free(m->vals);
    *m = n;
    return CDN_OK;
}

int cdn_strmap_put(cdn_strmap_t *m, const char *key, size_t klen, uint32_t val)
{
    size_t i;
    if ((m->len + 1) * 4 > m->cap * 3) { /* keep the load under 3/4 */
        int rc = rehash(m, m->cap ? m->cap * 2 : 16);
        if (rc)
            return rc;
    }
    for (i = slot_of(m, key, klen); m->keys[i]; i = (i + 1) & (m->cap - 1)) {
        if (key_eq(m->keys[i], key, klen)) {
            m->vals[i] = val;
            return CDN_OK;
        }
    }
    if (!(m->keys[i] = cdn_strndup(key, klen)))
        return CDN_ERR_NOMEM;
    m->vals[i] = val;
    m->len++;
    return CDN_OK;
}

int cdn_strmap_del(cdn_strmap_t *m, const char *key, size_t klen)
{
    size_t i, j;
    if (!m->cap)
        return CDN_ERR_NOT_FOUND;
    for (i = slot_of(m, key, klen);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i])
            return CDN_ERR_NOT_FOUND;
        if (key_eq(m->keys[i], key, klen))
            break;
    }
    cdn_free(m->keys[i]);
    m->keys[i] = NULL;
    m->len--;
    /* Shift later members of the probe run back so lookups never stop early. */
    for (j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        size_t home = slot_of(m, m->keys[j], strlen(m->keys[j]));
        int between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!between) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            m->keys[j] = NULL;
            i = j;
        }
    }
    return CDN_OK;
}
