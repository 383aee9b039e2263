/* mem.h: the one allocator every module calls, with a failure-injection hook for tests.
 * Relies on libc malloc; memory from these functions is released with cdn_free. */
#ifndef CDN_MEM_H
#define CDN_MEM_H

#include <stddef.h>

/* Like malloc/calloc/realloc/strdup but they may be made to fail by cdn_mem_fail_after.
 * Each returns NULL on failure; callers turn that into CDN_ERR_NOMEM. */
void *cdn_malloc(size_t n);
void *cdn_calloc(size_t count, size_t size);
void *cdn_realloc(void *p, size_t n);
char *cdn_strdup(const char *s);
char *cdn_strndup(const char *s, size_t n);
void cdn_free(void *p);

/* Allocates n bytes aligned to `align` (a power of two, >= sizeof(void*)); free with cdn_free. */
void *cdn_aligned_alloc(size_t align, size_t n);

/* Asks the kernel to back the 2 MiB-aligned pages inside [p, p + n) with huge pages (transparent
 * huge pages in "madvise" mode). Best effort, for large arrays read at random (graph lists,
 * 8-bit codes, visited marks): one TLB entry then covers 2 MiB instead of 4 KiB, and a random
 * read no longer walks the page tables. Pages already touched keep their size. */
void cdn_advise_huge(void *p, size_t n);

/* Large arrays that grow (a graph's per-node lists, visited marks): anonymous mappings, zero
 * when allocated and where they grow, advised for huge pages as a whole, and grown with mremap,
 * which moves page tables instead of copying bytes and touches no new page. realloc copies
 * instead once part of a block is advised apart (the advice splits the mapping, and mremap
 * cannot move a split one): growing a million-node graph by a batch of 500 copied its 138 MB
 * of lists and faulted every page of the copy. Sizes are the caller's; the same n that
 * allocated or last grew a mapping frees it. Each may be made to fail like cdn_malloc. */
void *cdn_map_alloc(size_t n);
/* Resizes *p from old_n to new_n bytes; *p may move when it grows; a NULL *p is allocated.
 * Bytes past old_n read zero if nothing was written past old_n. Returns 0 or CDN_ERR_NOMEM
 * (growing only; then *p is unchanged and still holds old_n bytes). */
int cdn_map_resize(void **p, size_t old_n, size_t new_n);
void cdn_map_free(void *p, size_t n);

/* The alignment that lets a whole allocation take huge pages (see cdn_advise_huge). */
#define CDN_HUGE_PAGE ((size_t)2 << 20)

/* Declares a helper whose only effect is __builtin_prefetch. GCC 12 judges such a helper free of
 * side effects (ipa-pure-const) and deletes its calls, prefetches and all: until this was found
 * the exact and 8-bit scans had no prefetch in their object code. Always inlined, the prefetches
 * stay in the caller. */
#define CDN_PREFETCH_HELPER static inline __attribute__((always_inline))

/* Grows *p (holding *cap elements of `size` bytes) to hold at least `need`; doubles.
 * Returns 0 or CDN_ERR_NOMEM (then *p and *cap are unchanged). */
int cdn_grow(void **p, size_t *cap, size_t need, size_t size);

/* Test hook: the n-th allocation from now fails (0 = the next one); -1 disables. Process-wide;
 * tests only. */
void cdn_mem_fail_after(long n);

#endif
