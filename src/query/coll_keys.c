/* coll_keys.c: where a collection's parts live: its files under the data directory and its
 * rows' and chunks' keys in the store, below coll.c, coll_graph.c and coll_text.c alike.
 * Relies on store/ for the big-endian key encoding. */
#include "query/coll.h"

#include <stdio.h>
#include <string.h>

int coll_file_path(const char *dir, uint32_t id, uint32_t gen, const char *ext, char *buf,
                   size_t size)
{
    int n = gen ? snprintf(buf, size, "%s/coll-%u-g%u.%s", dir, id, gen, ext)
                : snprintf(buf, size, "%s/coll-%u.%s", dir, id, ext);
    return (n < 0 || (size_t)n >= size) ? CDN_ERR_LIMIT : CDN_OK;
}

int coll_file_gen(const char *name, uint32_t id, uint32_t *gen)
{
    char pre[32];
    unsigned g = 0;
    int n = snprintf(pre, sizeof pre, "coll-%u", id), used = 0;
    if (strncmp(name, pre, (size_t)n) != 0)
        return -1;
    name += n;
    if (*name == '.') {
        *gen = 0;
        return name[1] ? 0 : -1;
    }
    /* "-gN." with N written as coll_file_path writes it (no sign, no leading zero) */
    if (name[0] != '-' || name[1] != 'g' || name[2] < '1' || name[2] > '9' ||
        sscanf(name + 2, "%u%n", &g, &used) != 1 || name[2 + used] != '.' || !name[3 + used])
        return -1;
    *gen = g;
    return 0;
}

void coll_row_key(uint32_t coll_id, uint32_t row, unsigned char key[8])
{
    store_be32(key, coll_id);
    store_be32(key + 4, row);
}

size_t coll_chunk_key(uint32_t coll_id, const char *id, unsigned char *key, size_t size)
{
    size_t n = strlen(id);
    if (n + 4 > size)
        return 0;
    store_be32(key, coll_id);
    memcpy(key + 4, id, n);
    return n + 4;
}
