/* arena.c: bump allocation over a list of blocks.
 * Relies on mem.h. */
#include "base/arena.h"
#include "base/mem.h"

#include <string.h>

struct cdn_arena_block {
    cdn_arena_block_t *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void cdn_arena_init(cdn_arena_t *a, size_t block_size, size_t max)
{
    a->head = NULL;
    a->block_size = block_size ? block_size : 64 * 1024;
    a->total = 0;
    a->max = max;
}

void *cdn_arena_alloc(cdn_arena_t *a, size_t n)
{
    cdn_arena_block_t *b = a->head;
    void *p;
    n = (n + 15) & ~(size_t)15;
    if (a->max && (n > a->max || a->total > a->max - n))
        return NULL;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > a->block_size ? n : a->block_size;
        b = cdn_malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    p = b->data + b->used;
    b->used += n;
    a->total += n;
    return p;
}

char *cdn_arena_strdup(cdn_arena_t *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = cdn_arena_alloc(a, n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void cdn_arena_free(cdn_arena_t *a)
{
    while (a->head) {
        cdn_arena_block_t *next = a->head->next;
        cdn_free(a->head);
        a->head = next;
    }
    a->total = 0;
}
