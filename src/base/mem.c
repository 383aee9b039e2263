/* mem.c: allocation wrappers with a test hook that makes the n-th allocation fail.
 * Relies on libc; the hook is the only process-wide state, and only tests set it. */
#include "base/mem.h"
#include "base/err.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static atomic_long fail_countdown = -1;

static int should_fail(void)
{
    long v = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
    if (v < 0)
        return 0;
    return atomic_fetch_sub(&fail_countdown, 1) == 0;
}

void cdn_mem_fail_after(long n)
{
    atomic_store(&fail_countdown, n);
}

void *cdn_malloc(size_t n)
{
    return should_fail() ? NULL : malloc(n ? n : 1);
}

void *cdn_calloc(size_t count, size_t size)
{
    return should_fail() ? NULL : calloc(count ? count : 1, size ? size : 1);
}

void *cdn_realloc(void *p, size_t n)
{
    return should_fail() ? NULL : realloc(p, n ? n : 1);
}

void cdn_free(void *p)
{
    free(p);
}

char *cdn_strndup(const char *s, size_t n)
{
    char *d = cdn_malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

char *cdn_strdup(const char *s)
{
    return cdn_strndup(s, strlen(s));
}

void *cdn_aligned_alloc(size_t align, size_t n)
{
    void *p = NULL;
    if (should_fail())
        return NULL;
    if (posix_memalign(&p, align, n ? n : align) != 0)
        return NULL;
    return p;
}

void cdn_advise_huge(void *p, size_t n)
{
    uintptr_t lo = ((uintptr_t)p + CDN_HUGE_PAGE - 1) & ~(uintptr_t)(CDN_HUGE_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(uintptr_t)(CDN_HUGE_PAGE - 1);
    if (p && hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

/* A mapping's length: n rounded up to whole pages, at least one. */
static size_t map_len(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return n <= pg ? pg : (n + pg - 1) / pg * pg;
}

/* len bytes of fresh zero pages; from CDN_HUGE_PAGE up, at an address aligned to it (a
 * mapping moved to an address of another alignment loses its huge pages: the kernel splits
 * them). NULL when the kernel refuses. */
static void *map_fresh(size_t len)
{
    size_t align = len >= CDN_HUGE_PAGE ? CDN_HUGE_PAGE : 0;
    void *p = mmap(NULL, len + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (align) { /* trim to the aligned len bytes inside */
        uintptr_t lo = (uintptr_t)p, at = (lo + align - 1) & ~(uintptr_t)(align - 1);
        if (at > lo)
            (void)munmap(p, at - lo);
        if (lo + align > at)
            (void)munmap((void *)(at + len), lo + align - at);
        p = (void *)at;
        (void)madvise(p, len, MADV_HUGEPAGE); /* the whole mapping: advice must not split it */
    }
    return p;
}

void *cdn_map_alloc(size_t n)
{
    return should_fail() ? NULL : map_fresh(map_len(n));
}

int cdn_map_resize(void **p, size_t old_n, size_t new_n)
{
    if (!*p) {
        *p = cdn_map_alloc(new_n);
        return *p ? CDN_OK : CDN_ERR_NOMEM;
    }
    size_t old_len = map_len(old_n), new_len = map_len(new_n);
    if (new_len == old_len)
        return CDN_OK;       /* the last page already holds it */
    if (new_len < old_len) { /* shrinks in place: the pages past new_len are returned */
        (void)munmap((char *)*p + new_len, old_len - new_len);
        return CDN_OK;
    }
    if (should_fail())
        return CDN_ERR_NOMEM;
    /* In place if the addresses after it are free, unless it would then pass 2 MiB from an
     * unaligned start (it moves to aligned space instead, where huge pages can back it). */
    int aligned = ((uintptr_t)*p & (CDN_HUGE_PAGE - 1)) == 0 || new_len < CDN_HUGE_PAGE;
    void *np = aligned ? mremap(*p, old_len, new_len, 0) : MAP_FAILED;
    if (np == MAP_FAILED) {
        /* Elsewhere: onto fresh aligned space, which the move replaces (page tables move, and
         * huge pages stay whole at the same alignment). */
        void *dst = map_fresh(new_len);
        if (!dst)
            return CDN_ERR_NOMEM;
        np = mremap(*p, old_len, new_len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
        if (np == MAP_FAILED) {
            (void)munmap(dst, new_len);
            return CDN_ERR_NOMEM;
        }
    }
    if (new_len >= CDN_HUGE_PAGE)
        (void)madvise(np, new_len, MADV_HUGEPAGE);
    *p = np;
    return CDN_OK;
}

void cdn_map_free(void *p, size_t n)
{
    if (p)
        (void)munmap(p, map_len(n));
}

int cdn_grow(void **p, size_t *cap, size_t need, size_t size)
{
    size_t c = *cap ? *cap : 8;
    void *np;
    if (need <= *cap)
        return CDN_OK;
    while (c < need) {
        if (c > SIZE_MAX / 2 / size)
            return CDN_ERR_NOMEM;
        c *= 2;
    }
    np = cdn_realloc(*p, c * size);
    if (!np)
        return CDN_ERR_NOMEM;
    *p = np;
    *cap = c;
    return CDN_OK;
}
