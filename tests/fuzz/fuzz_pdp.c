/* fuzz_pdp.c: any bytes as an outside authorizer's answer (a Cerbos PlanResources plan, an
 * OPA-shaped result): never a crash; a filter the translation gives is a query cordon parses
 * and runs; and wherever the plan uses only comparisons of the index's keyword (in byte order),
 * number and bool attributes, not, and, or and constants, the filter admits exactly the docs where
 * the plan is true under three-valued logic (a comparison of a missing attribute is unknown, and
 * unknown is never admitted), computed here apart from the translation. A filter the index
 * refuses for its values (a range on a boolean) fails the search closed and is not judged.
 * Relies on libFuzzer, jansson, authz/pdp.h and the text layer. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "authz/pdp.h"
#include "base/mem.h"
#include "fuzz_index.h"
#include "text/textq.h"

static textidx_t *ix;
static roaring_bitmap_t *allowed;

/* Where a node is true and where false, a bit per doc; judged 0 when the node is outside what
 * this reference follows. */
typedef struct tv {
    uint64_t t, f;
    int judged;
} tv_t;

#define ALL_DOCS (~0ull) /* FUZZ_DOCS is 64 */

static const char *attr_of(const json_t *operand)
{
    const char *v = json_string_value(json_object_get(operand, "variable"));
    if (v && !strncmp(v, "request.resource.attr.", 22))
        return v + 22;
    if (v && !strncmp(v, "R.attr.", 7))
        return v + 7;
    return NULL;
}

/* attr op value for every doc, the variable on the left (swapped says it was on the right). */
static tv_t compare(const char *op, const char *attr, const json_t *val, int swapped)
{
    tv_t r = {0, 0, 1};
    int kind = !strcmp(attr, "dept")     ? 1
               : !strcmp(attr, "year")   ? 2
               : !strcmp(attr, "public") ? 3
                                         : 0;
    int eqne = !strcmp(op, "eq") || !strcmp(op, "ne");
    int order = !strcmp(op, "lt") || !strcmp(op, "le") || !strcmp(op, "gt") || !strcmp(op, "ge");
    int str = json_is_string(val) && json_string_length(val) == strlen(json_string_value(val));
    if ((kind == 1 && !(str && (eqne || order))) ||
        (kind == 2 && !(json_is_integer(val) && (eqne || order))) ||
        (kind == 3 && !(json_is_boolean(val) && eqne)) || !kind)
        return (tv_t){0, 0, 0};
    for (uint32_t d = 0; d < FUZZ_DOCS; d++) {
        int has = kind == 1 ? fuzz_has_dept(d) : kind == 2 ? fuzz_has_year(d) : fuzz_has_public(d);
        if (!has)
            continue;  /* unknown: neither */
        long long c;   /* attr compared with the value: <0, 0, >0 */
        if (kind == 1) /* byte order, as keyword ranges compare */
            c = strcmp(fuzz_dept(d), json_string_value(val));
        else if (kind == 2)
            c = (long long)fuzz_year(d) - (long long)json_integer_value(val);
        else
            c = fuzz_public(d) != json_is_true(val);
        if (swapped)
            c = -c;
        int yes = !strcmp(op, "eq")   ? c == 0
                  : !strcmp(op, "ne") ? c != 0
                  : !strcmp(op, "lt") ? c < 0
                  : !strcmp(op, "le") ? c <= 0
                  : !strcmp(op, "gt") ? c > 0
                                      : c >= 0;
        if (yes)
            r.t |= 1ull << d;
        else
            r.f |= 1ull << d;
    }
    return r;
}

static tv_t judge(const json_t *node, int depth)
{
    const json_t *value = json_object_get(node, "value");
    if (json_is_boolean(value))
        return json_is_true(value) ? (tv_t){ALL_DOCS, 0, 1} : (tv_t){0, ALL_DOCS, 1};
    const json_t *x = json_object_get(node, "expression");
    const char *op = json_string_value(json_object_get(x, "operator"));
    const json_t *args = json_object_get(x, "operands");
    size_t n = json_array_size(args);
    if (!op || !json_is_array(args) || depth > 32)
        return (tv_t){0, 0, 0};
    if (!strcmp(op, "not")) {
        if (n != 1)
            return (tv_t){0, 0, 0};
        tv_t a = judge(json_array_get(args, 0), depth + 1);
        return (tv_t){a.f, a.t, a.judged};
    }
    if (!strcmp(op, "and") || !strcmp(op, "or")) {
        int and = !strcmp(op, "and");
        tv_t r = and? (tv_t){ALL_DOCS, 0, 1} : (tv_t){0, ALL_DOCS, 1};
        if (!n)
            return (tv_t){0, 0, 0};
        for (size_t i = 0; i < n && r.judged; i++) {
            tv_t a = judge(json_array_get(args, i), depth + 1);
            r.judged = a.judged;
            r.t = and? r.t & a.t : r.t | a.t;
            r.f = and? r.f | a.f : r.f & a.f;
        }
        return r;
    }
    if (n != 2)
        return (tv_t){0, 0, 0};
    const json_t *a = json_array_get(args, 0), *b = json_array_get(args, 1);
    const char *attr;
    if ((attr = attr_of(a)) && json_object_get(b, "value") && !json_object_get(b, "variable"))
        return compare(op, attr, json_object_get(b, "value"), 0);
    if ((attr = attr_of(b)) && json_object_get(a, "value") && !json_object_get(a, "variable"))
        return compare(op, attr, json_object_get(a, "value"), 1);
    return (tv_t){0, 0, 0};
}

/* The docs the filter admits among the readable ones, as bits; 0 when it does not parse (the
 * engine then fails closed), which aborts when mine says cordon wrote it (a plan's translation:
 * ids aside, which name chunks the engine maps). */
static int run_filter(const char *filter, int mine, uint64_t *bits)
{
    json_t *q = json_loads(filter, 0, NULL);
    textq_t *t = NULL;
    cdn_err_t err;
    if (!q) {
        if (mine)
            abort(); /* the translation wrote something that is not JSON */
        return 0;
    }
    int rc = textq_parse_es(q, &t, &err);
    json_decref(q);
    if (rc) {
        if (!mine || strstr(filter, "\"ids\""))
            return 0;
        abort();
    }
    roaring_bitmap_t *a = roaring_bitmap_copy(allowed);
    if (!a)
        abort();
    rc = textidx_filter(ix, t, a, &err);
    if (rc == CDN_ERR_INVALID) { /* a value the field's type cannot compare (a range on a
                                    boolean): the search fails closed, nothing is read */
        roaring_bitmap_free(a);
        textq_free(t);
        return 0;
    }
    if (rc)
        abort();
    *bits = 0;
    for (uint32_t d = 0; d < FUZZ_DOCS; d++)
        if (roaring_bitmap_contains(a, d)) {
            if (!roaring_bitmap_contains(allowed, d))
                abort(); /* widened what could be read */
            *bits |= 1ull << d;
        }
    if (roaring_bitmap_get_cardinality(a) != (uint64_t)__builtin_popcountll(*bits))
        abort(); /* a doc that does not exist */
    roaring_bitmap_free(a);
    textq_free(t);
    return 1;
}

static uint64_t readable_bits(void)
{
    uint64_t b = 0;
    for (uint32_t d = 0; d < FUZZ_DOCS; d++)
        if (d != 5 && roaring_bitmap_contains(allowed, d))
            b |= 1ull << d;
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pdp_kind_t kind;
    char *filter = NULL;
    cdn_err_t err;
    uint64_t got;
    if (!ix)
        fuzz_index_build(&ix, &allowed);
    int rc = pdp_plan_filter((const char *)data, size, &kind, &filter, &err);
    if (rc == CDN_OK) {
        if ((kind == PDP_FILTER) != (filter != NULL))
            abort();
        json_t *doc = json_loadb((const char *)data, size, 0, NULL);
        const json_t *f = json_object_get(doc, "filter");
        const char *k = json_string_value(json_object_get(f, "kind"));
        tv_t want = {0, 0, 0};
        if (k && !strcmp(k, "KIND_CONDITIONAL"))
            want = judge(json_object_get(f, "condition"), 0);
        uint64_t readable = readable_bits();
        if (kind == PDP_FILTER && run_filter(filter, 1, &got) && want.judged &&
            got != (want.t & readable))
            abort(); /* admits other docs than those where the plan is true */
        if (kind != PDP_FILTER && want.judged &&
            (kind == PDP_ALL ? want.t != ALL_DOCS : want.t != 0))
            abort(); /* folded to a constant the plan is not */
        json_decref(doc);
    } else if (filter) {
        abort();
    }
    cdn_free(filter);
    filter = NULL;
    if (pdp_opa_answer((const char *)data, size, &kind, &filter, &err) == CDN_OK &&
        kind == PDP_FILTER && filter)
        run_filter(filter, 0, &got);
    else if (filter && kind != PDP_FILTER)
        abort();
    cdn_free(filter);
    return 0;
}
