/* fuzz_index.h: the small text index the query targets search (fuzz_query, fuzz_pdp): 64 docs
 * over text, keyword, number, date and bool fields, some docs lacking dept, year or public
 * (what a filter must neither admit nor trip over), doc 5 deleted, and every doc but those
 * with id % 3 == 1 readable. Header only; relies on the text layer and CRoaring. */
#ifndef CDN_FUZZ_INDEX_H
#define CDN_FUZZ_INDEX_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/textidx.h"

#define FUZZ_DOCS 64

/* Which of the optional fields doc d has. */
static inline int fuzz_has_dept(uint32_t d)
{
    return d % 7 != 3;
}
static inline int fuzz_has_year(uint32_t d)
{
    return d % 5 != 4;
}
static inline int fuzz_has_public(uint32_t d)
{
    return d % 11 != 6;
}
/* Their values, where present. */
static inline const char *fuzz_dept(uint32_t d)
{
    return d % 2 ? "hr" : "eng";
}
static inline int fuzz_year(uint32_t d)
{
    return 2000 + (int)(d % 25);
}
static inline int fuzz_public(uint32_t d)
{
    return d % 3 == 0;
}

static inline void fuzz_index_build(textidx_t **ix, roaring_bitmap_t **allowed)
{
    static const char *words[] = {
        "alpha",         "beta",          "gamma",     "delta report", "quarterly salary",
        "travel policy", "flight design", "the of and"};
    cdn_err_t err;
    if (textidx_create(NULL, ix, &err) ||
        textidx_add_field(*ix, "title", TEXTIDX_TEXT, NULL, &err) ||
        textidx_add_field(*ix, "body", TEXTIDX_TEXT, "english", &err) ||
        textidx_add_field(*ix, "dept", TEXTIDX_KEYWORD, NULL, &err) ||
        textidx_add_field(*ix, "year", TEXTIDX_NUMBER, NULL, &err) ||
        textidx_add_field(*ix, "when", TEXTIDX_DATE, NULL, &err) ||
        textidx_add_field(*ix, "public", TEXTIDX_BOOL, NULL, &err))
        abort();
    *allowed = roaring_bitmap_create();
    for (uint32_t d = 0; d < FUZZ_DOCS; d++) {
        char when[32];
        snprintf(when, sizeof when, "20%02u-0%u-1%u", d % 30, 1 + d % 9, d % 10);
        const char *t = words[d % 8], *b = words[(d * 3 + 1) % 8], *dept = fuzz_dept(d);
        textidx_value_t v[6] = {
            {"title", t, strlen(t), 0}, {"body", b, strlen(b), 0}, {"when", when, strlen(when), 0}};
        size_t n = 3;
        if (fuzz_has_dept(d))
            v[n++] = (textidx_value_t){"dept", dept, strlen(dept), 0};
        if (fuzz_has_year(d))
            v[n++] = (textidx_value_t){"year", NULL, 0, fuzz_year(d)};
        if (fuzz_has_public(d))
            v[n++] = (textidx_value_t){"public", NULL, 0, fuzz_public(d)};
        if (textidx_add_doc(*ix, d, v, n, &err))
            abort();
        if (d % 3 != 1)
            roaring_bitmap_add(*allowed, d);
    }
    textidx_delete_doc(*ix, 5); /* a dead posting for the evaluator to skip */
}

#endif
