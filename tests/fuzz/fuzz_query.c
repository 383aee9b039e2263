/* fuzz_query.c: any bytes as an Elasticsearch query object, parsed and run against a small
 * text index as a subject: never a crash or a leak, and every hit readable, finite and within k.
 * Relies on libFuzzer (clang -fsanitize=fuzzer), jansson and the text layer. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "text/textidx.h"

#define DOCS 64

static textidx_t *ix;
static roaring_bitmap_t *allowed;

static void build(void)
{
    static const char *words[] = {
        "alpha",         "beta",          "gamma",     "delta report", "quarterly salary",
        "travel policy", "flight design", "the of and"};
    cdn_err_t err;
    if (textidx_create(NULL, &ix, &err) ||
        textidx_add_field(ix, "title", TEXTIDX_TEXT, NULL, &err) ||
        textidx_add_field(ix, "body", TEXTIDX_TEXT, "english", &err) ||
        textidx_add_field(ix, "dept", TEXTIDX_KEYWORD, NULL, &err) ||
        textidx_add_field(ix, "year", TEXTIDX_NUMBER, NULL, &err) ||
        textidx_add_field(ix, "when", TEXTIDX_DATE, NULL, &err) ||
        textidx_add_field(ix, "public", TEXTIDX_BOOL, NULL, &err))
        abort();
    allowed = roaring_bitmap_create();
    for (uint32_t d = 0; d < DOCS; d++) {
        char when[32];
        snprintf(when, sizeof when, "20%02u-0%u-1%u", d % 30, 1 + d % 9, d % 10);
        const char *t = words[d % 8], *b = words[(d * 3 + 1) % 8];
        textidx_value_t v[] = {{"title", t, strlen(t), 0},
                               {"body", b, strlen(b), 0},
                               {"dept", d % 2 ? "hr" : "eng", 2 + !(d % 2), 0},
                               {"year", NULL, 0, 2000 + d % 25},
                               {"when", when, strlen(when), 0},
                               {"public", NULL, 0, d % 3 == 0}};
        if (textidx_add_doc(ix, d, v, 6, &err))
            abort();
        if (d % 3 != 1)
            roaring_bitmap_add(allowed, d);
    }
    textidx_delete_doc(ix, 5); /* a dead posting for the evaluator to skip */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *q;
    textq_t *t = NULL;
    cdn_err_t err;
    if (!ix)
        build();
    if (!(q = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL)))
        return 0;
    if (textq_parse_es(q, &t, &err) == CDN_OK) {
        for (int exhaustive = 0; exhaustive < 2; exhaustive++) {
            textidx_search_opts_t o = {.allowed = allowed,
                                       .k = 7,
                                       .exhaustive = exhaustive,
                                       .stats_over = exhaustive ? NULL : allowed};
            textidx_result_t r;
            if (textidx_search(ix, t, &o, &r, &err) != CDN_OK)
                continue;
            if (r.n > o.k)
                abort();
            for (size_t i = 0; i < r.n; i++)
                if (!roaring_bitmap_contains(allowed, r.hits[i].id) || r.hits[i].id == 5 ||
                    !isfinite(r.hits[i].score))
                    abort(); /* unreadable, deleted or unrankable */
            textidx_result_free(&r);
        }
        textq_free(t);
    }
    json_decref(q);
    return 0;
}
