/* mem.c: allocation wrappers with a test hook that makes the n-th allocation fail.
 * Relies on libc; the hook is the only process-wide state, and only tests set it. */
#include "base/mem.h"
#include "base/err.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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
