/* arena.h: a per-request memory pool; everything allocated from it is freed in one call.
 * Relies on mem.h. The arena owns its blocks; cdn_arena_free releases all of them. */
#ifndef CDN_ARENA_H
#define CDN_ARENA_H

#include <stddef.h>

typedef struct cdn_arena_block cdn_arena_block_t;
typedef struct cdn_arena {
    cdn_arena_block_t *head;
    size_t block_size;
    size_t total; /* bytes handed out so far */
    size_t max;   /* allocations past this total fail (0 = no limit) */
} cdn_arena_t;

void cdn_arena_init(cdn_arena_t *a, size_t block_size, size_t max);
/* 16-byte aligned memory, or NULL when out of memory or past the arena's max. */
void *cdn_arena_alloc(cdn_arena_t *a, size_t n);
char *cdn_arena_strdup(cdn_arena_t *a, const char *s);
void cdn_arena_free(cdn_arena_t *a);

#endif
