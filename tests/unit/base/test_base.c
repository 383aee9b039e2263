/* test_base.c: the bounded buffer, arena, error records, allocation failure hook and growing
 * mappings.
 * Relies on cmocka. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "testutil.h"

static void test_buf_refuses_to_pass_its_maximum(void **state)
{
    (void)state;
    cdn_buf_t b;
    cdn_buf_init(&b, 8);
    assert_int_equal(cdn_buf_puts(&b, "12345"), 0);
    assert_int_equal(cdn_buf_puts(&b, "6789"), CDN_ERR_LIMIT);
    assert_string_equal(b.data, "12345");
    assert_int_equal(cdn_buf_puts(&b, "678"), 0);
    assert_int_equal(b.len, 8);
    cdn_buf_free(&b);
}

static void test_buf_json_str_escapes_quotes_and_controls(void **state)
{
    (void)state;
    cdn_buf_t b;
    cdn_buf_init(&b, 1024);
    assert_int_equal(cdn_buf_json_str(&b, "a\"b\\c\n"), 0);
    assert_string_equal(b.data, "\"a\\\"b\\\\c\\u000a\"");
    cdn_buf_free(&b);
}

static void test_arena_aligns_and_enforces_max(void **state)
{
    (void)state;
    cdn_arena_t a;
    cdn_arena_init(&a, 128, 1000);
    char *p = cdn_arena_alloc(&a, 3);
    char *q = cdn_arena_alloc(&a, 300);
    assert_non_null(p);
    assert_non_null(q);
    assert_int_equal((uintptr_t)q % 16, 0);
    assert_null(cdn_arena_alloc(&a, 900));
    cdn_arena_free(&a);
}

static void test_err_set_keeps_code_and_message(void **state)
{
    (void)state;
    cdn_err_t e;
    assert_int_equal(cdn_err_set(&e, CDN_ERR_INVALID, "field %s", "x"), CDN_ERR_INVALID);
    assert_string_equal(e.msg, "field x");
    assert_string_equal(cdn_strerror(CDN_ERR_NOT_FOUND), "not found");
    assert_int_equal(cdn_err_set(NULL, CDN_ERR_IO, "ignored"), CDN_ERR_IO);
}

static void test_mem_fail_after_fails_exactly_the_nth(void **state)
{
    (void)state;
    cdn_mem_fail_after(1);
    void *a = cdn_malloc(4);
    void *b = cdn_malloc(4);
    void *c = cdn_malloc(4);
    assert_non_null(a);
    assert_null(b);
    assert_non_null(c);
    cdn_mem_fail_after(-1);
    cdn_free(a);
    cdn_free(c);
}

/* Advice keeps the data, tolerates any range, and where the kernel grants transparent huge
 * pages on request ("madvise" or "always" mode) the advised block gets them. */
static void test_advise_huge_keeps_data_and_gets_huge_pages(void **state)
{
    (void)state;
    size_t n = 4 * CDN_HUGE_PAGE;
    unsigned char *p = cdn_aligned_alloc(CDN_HUGE_PAGE, n);
    assert_non_null(p);
    cdn_advise_huge(p, n);
    cdn_advise_huge(p + 1, 100); /* nothing aligned inside: a no-op */
    cdn_advise_huge(NULL, n);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 7);
    for (size_t i = 0; i < n; i += 4093)
        assert_int_equal(p[i], (unsigned char)(i * 7));
    char mode[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f && fgets(mode, sizeof mode, f) && !strstr(mode, "[never]")) {
        mode[strcspn(mode, "\n")] = '\0';
        long kb = tu_smaps_kb("AnonHugePages:", (uintptr_t)p, (uintptr_t)p + n, NULL);
        print_message("transparent huge pages %s: %ld kB of the block are huge\n", mode, kb);
        assert_true(kb >= 2048);
    } else {
        print_message("transparent huge pages are off here: only the data is checked\n");
    }
    if (f)
        fclose(f);
    cdn_free(p);
}

/* The mappings of /proc/self/maps that overlap [lo, hi). */
static int maps_overlapping(uintptr_t lo, uintptr_t hi)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a < hi && b > lo)
            n++;
    }
    if (f)
        fclose(f);
    return n;
}

/* A mapping grows without copying or touching its new pages: it stays one mapping (advice
 * given apart to part of it would split it, and mremap cannot move a split one: realloc then
 * copies everything), keeps its bytes, reads zero past them, and the pages it gained are not
 * resident until written. A failed growth leaves it as it was; shrinking keeps the front. */
static void test_map_grows_without_copying(void **state)
{
    (void)state;
    size_t small = 16u << 20, big = 64u << 20;
    unsigned char *p = cdn_map_alloc(small);
    assert_non_null(p);
    for (size_t i = 0; i < small; i++)
        assert_int_equal(p[i], 0);
    for (size_t i = 0; i < small; i++)
        p[i] = (unsigned char)(i * 13 + 1);
    long before = tu_smaps_kb("Rss:", (uintptr_t)p, (uintptr_t)p + small, NULL);
    long huge_kb_written = tu_smaps_kb("AnonHugePages:", (uintptr_t)p, (uintptr_t)p + small, NULL);
    assert_true(before >= (long)(small >> 10));
    cdn_mem_fail_after(0);
    void *q = p;
    assert_int_equal(cdn_map_resize(&q, small, big), CDN_ERR_NOMEM);
    cdn_mem_fail_after(-1);
    assert_ptr_equal(q, p);
    assert_int_equal(cdn_map_resize(&q, small, small + 100), CDN_OK); /* inside its last page */
    assert_ptr_equal(q, p);
    void *block = mmap((char *)p + small + (4u << 20), 4096, PROT_READ,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    assert_int_equal(cdn_map_resize(&q, small + 100, big), CDN_OK); /* blocked: it moves */
    if (block != MAP_FAILED) {
        assert_ptr_not_equal(q, p);
        munmap(block, 4096);
    }
    p = q;
    assert_int_equal(maps_overlapping((uintptr_t)p, (uintptr_t)p + big), 1);
    long after = tu_smaps_kb("Rss:", (uintptr_t)p, (uintptr_t)p + big, NULL);
    print_message("resident: %ld kB of %zu before growing, %ld kB of %zu after\n", before,
                  small >> 10, after, big >> 10);
    assert_true(after < before + 4096); /* the 48 MiB gained: at most a couple of huge pages */
    /* Moved or grown in place, its huge pages stay whole (a move to an address of another
     * alignment would split them). */
    long huge_before = huge_kb_written,
         huge_after = tu_smaps_kb("AnonHugePages:", (uintptr_t)p, (uintptr_t)p + big, NULL);
    print_message("huge: %ld kB before growing, %ld kB after\n", huge_before, huge_after);
    assert_true(huge_after >= huge_before);
    for (size_t i = 0; i < small; i += 4099)
        assert_int_equal(p[i], (unsigned char)(i * 13 + 1));
    for (size_t i = small; i < big; i += 4099)
        assert_int_equal(p[i], 0);
    q = p;
    assert_int_equal(cdn_map_resize(&q, big, 8u << 20), CDN_OK);
    assert_ptr_equal(q, p);
    for (size_t i = 0; i < (8u << 20); i += 4099)
        assert_int_equal(p[i], (unsigned char)(i * 13 + 1));
    cdn_map_free(p, 8u << 20);
    q = NULL; /* NULL allocates */
    assert_int_equal(cdn_map_resize(&q, 0, 100), CDN_OK);
    assert_non_null(q);
    ((unsigned char *)q)[99] = 7;
    assert_int_equal(cdn_map_resize(&q, 100, 3 * CDN_HUGE_PAGE), CDN_OK); /* past 2 MiB: aligned */
    assert_int_equal((uintptr_t)q & (CDN_HUGE_PAGE - 1), 0);
    assert_int_equal(((unsigned char *)q)[99], 7);
    cdn_map_free(q, 3 * CDN_HUGE_PAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_refuses_to_pass_its_maximum),
        cmocka_unit_test(test_buf_json_str_escapes_quotes_and_controls),
        cmocka_unit_test(test_arena_aligns_and_enforces_max),
        cmocka_unit_test(test_err_set_keeps_code_and_message),
        cmocka_unit_test(test_mem_fail_after_fails_exactly_the_nth),
        cmocka_unit_test(test_advise_huge_keeps_data_and_gets_huge_pages),
        cmocka_unit_test(test_map_grows_without_copying),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
