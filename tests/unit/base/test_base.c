/* test_base.c: the bounded buffer, arena, error records and allocation failure hook.
 * Relies on cmocka. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_refuses_to_pass_its_maximum),
        cmocka_unit_test(test_buf_json_str_escapes_quotes_and_controls),
        cmocka_unit_test(test_arena_aligns_and_enforces_max),
        cmocka_unit_test(test_err_set_keeps_code_and_message),
        cmocka_unit_test(test_mem_fail_after_fails_exactly_the_nth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
