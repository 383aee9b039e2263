/* fuzz_query.c: any bytes as an Elasticsearch query object, parsed and run against a small
 * text index as a subject: never a crash or a leak, and every hit readable, finite and within k.
 * Relies on libFuzzer (clang -fsanitize=fuzzer), jansson and the text layer. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_index.h"

static textidx_t *ix;
static roaring_bitmap_t *allowed;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *q;
    textq_t *t = NULL;
    cdn_err_t err;
    if (!ix)
        fuzz_index_build(&ix, &allowed);
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
