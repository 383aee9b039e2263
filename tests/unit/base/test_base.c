/* test_base.c: the bounded buffer, arena, error records and allocation failure hook.
 * Relies on cmocka. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_refuses_to_pass_its_maximum),
        cmocka_unit_test(test_buf_json_str_escapes_quotes_and_controls),
        cmocka_unit_test(test_arena_aligns_and_enforces_max),
        cmocka_unit_test(test_err_set_keeps_code_and_message),
        cmocka_unit_test(test_mem_fail_after_fails_exactly_the_nth),
        cmocka_unit_test(test_advise_huge_keeps_data_and_gets_huge_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
