/* textq_es.c: Elasticsearch query DSL (the subset cordon serves) to a textq tree, with errors
 * that name the JSON path of the bad field and what is expected there.
 * Relies on jansson and textq.c constructors. */
#include <stdio.h>
#include <string.h>

#include "base/mem.h"
#include "text/textq.h"

typedef struct path {
    char s[256];
} path_t;

static int parse(const json_t *j, const char *at, textq_t **out, cdn_err_t *err);

static int bad(cdn_err_t *err, const char *at, const char *what)
{
    return cdn_err_set(err, CDN_ERR_INVALID, "%s: %s", at, what);
}

/* Appends ".key" to a path; deep paths are cut (the message stays readable). */
static void sub(path_t *p, const char *at, const char *key)
{
    size_t a = strnlen(at, sizeof p->s - 1), k = strnlen(key, sizeof p->s - 1);
    if (a + 1 + k >= sizeof p->s)
        k = a + 1 < sizeof p->s ? sizeof p->s - 2 - a : 0;
    memmove(p->s, at, a); /* at may be p->s itself */
    p->s[a] = '.';
    memcpy(p->s + a + 1, key, k);
    p->s[a + 1 + k] = 0;
}

/* A scalar as query text: strings as is, numbers and booleans spelled out. */
static int scalar(const json_t *v, char *buf, size_t n)
{
    if (json_is_string(v))
        snprintf(buf, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, n, "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
    else
        return -1;
    return 0;
}

/* {"field": value} or {"field": {key: value, ...}}: the one field name and its body. */
static int one_field(const json_t *j, const char *at, const char **field, const json_t **body,
                     cdn_err_t *err)
{
    if (!json_is_object(j) || json_object_size(j) != 1)
        return bad(err, at, "expected an object with exactly one field name");
    void *it = json_object_iter((json_t *)j);
    *field = json_object_iter_key(it);
    *body = json_object_iter_value(it);
    return CDN_OK;
}

static int boost_ok(double b)
{
    return b >= 0 && b <= TEXTQ_BOOST_MAX;
}

static int get_boost(const json_t *o, const char *at, float *boost, cdn_err_t *err)
{
    const json_t *b = json_is_object(o) ? json_object_get(o, "boost") : NULL;
    if (!b)
        return CDN_OK;
    if (!json_is_number(b) || !boost_ok(json_number_value(b)))
        return bad(err, at, "boost must be a number from 0 to 1e6");
    *boost = (float)json_number_value(b);
    return CDN_OK;
}

static int get_msm(const json_t *v, const char *at, textq_msm_t *m, cdn_err_t *err)
{
    if (!v)
        return CDN_OK;
    if (json_is_integer(v)) {
        *m = (textq_msm_t){1, (int)json_integer_value(v), 0};
        return CDN_OK;
    }
    const char *s = json_string_value(v);
    char *end;
    long n = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || (*end && strcmp(end, "%")) || n < -100000 || n > 100000)
        return bad(err, at, "minimum_should_match must be an integer or a percentage like \"75%\"");
    *m = (textq_msm_t){1, (int)n, *end == '%'};
    return CDN_OK;
}

/* match and match_phrase share their shape: {"f": "text"} or {"f": {"query": ..., opts}} */
static int parse_match(const json_t *j, const char *at, int phrase, textq_t **out, cdn_err_t *err)
{
    const char *field;
    const json_t *body, *qv;
    char text[8192];
    int rc = one_field(j, at, &field, &body, err);
    if (rc)
        return rc;
    path_t p;
    sub(&p, at, field);
    qv = json_is_object(body) ? json_object_get(body, "query") : body;
    if (!qv || scalar(qv, text, sizeof text))
        return bad(err, p.s, "expected the query text (a string) or an object with \"query\"");
    rc = phrase ? textq_phrase(field, text, 0, out) : textq_match(field, text, out);
    if (rc || !json_is_object(body))
        return rc;
    textq_t *q = *out;
    const json_t *op = json_object_get(body, "operator"), *slop = json_object_get(body, "slop");
    if (op && (!json_is_string(op) || (strcasecmp(json_string_value(op), "and") &&
                                       strcasecmp(json_string_value(op), "or"))))
        rc = bad(err, p.s, "operator must be \"and\" or \"or\"");
    else if (op)
        q->op_and = !strcasecmp(json_string_value(op), "and");
    if (!rc && slop && (!json_is_integer(slop) || json_integer_value(slop) < 0))
        rc = bad(err, p.s, "slop must be a non-negative integer");
    else if (!rc && slop)
        q->slop = (uint32_t)json_integer_value(slop);
    if (!rc)
        rc = get_msm(json_object_get(body, "minimum_should_match"), p.s, &q->msm, err);
    if (!rc)
        rc = get_boost(body, p.s, &q->boost, err);
    if (rc) {
        textq_free(q);
        *out = NULL;
    }
    return rc;
}

static int parse_multi_match(const json_t *j, const char *at, textq_t **out, cdn_err_t *err)
{
    const json_t *qv = json_object_get(j, "query"), *fs = json_object_get(j, "fields");
    const json_t *ty = json_object_get(j, "type"), *tb = json_object_get(j, "tie_breaker");
    char text[8192];
    if (!json_is_object(j) || !qv || scalar(qv, text, sizeof text))
        return bad(err, at, "expected an object with \"query\" (a string) and \"fields\"");
    if (!json_is_array(fs) || json_array_size(fs) == 0 || json_array_size(fs) > 64)
        return bad(err, at, "fields must be a non-empty array of field names (\"title^2\")");
    textq_mm_t mt = TEXTQ_MM_BEST_FIELDS;
    if (ty && json_is_string(ty) && !strcmp(json_string_value(ty), "most_fields"))
        mt = TEXTQ_MM_MOST_FIELDS;
    else if (ty && !(json_is_string(ty) && !strcmp(json_string_value(ty), "best_fields")))
        return bad(err, at, "type must be \"best_fields\" or \"most_fields\"");
    char names[64][256];
    const char *np[64];
    float boosts[64];
    size_t n = json_array_size(fs);
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(fs, i));
        if (!s || !*s || strlen(s) >= 256)
            return bad(err, at, "fields entries must be field names like \"title\" or \"title^2\"");
        snprintf(names[i], sizeof names[i], "%s", s);
        char *caret = strchr(names[i], '^');
        boosts[i] = 1.0f;
        if (caret) {
            char *end;
            *caret = 0;
            boosts[i] = strtof(caret + 1, &end);
            if (end == caret + 1 || *end || !boost_ok(boosts[i]))
                return bad(err, at,
                           "a field boost must be a number from 0 to 1e6 after ^, as "
                           "in \"title^2\"");
        }
        np[i] = names[i];
    }
    int rc = textq_multi_match(text, np, boosts, n, mt, out);
    if (rc)
        return rc;
    const json_t *op = json_object_get(j, "operator");
    (*out)->op_and = op && json_is_string(op) && !strcasecmp(json_string_value(op), "and");
    if (tb && !json_is_number(tb))
        rc = bad(err, at, "tie_breaker must be a number between 0 and 1");
    else if (tb)
        (*out)->tie_breaker = (float)json_number_value(tb);
    if (!rc)
        rc = get_msm(json_object_get(j, "minimum_should_match"), at, &(*out)->msm, err);
    if (!rc)
        rc = get_boost(j, at, &(*out)->boost, err);
    if (rc) {
        textq_free(*out);
        *out = NULL;
    }
    return rc;
}

/* term, prefix, fuzzy: {"f": value} or {"f": {"value": v, opts}} */
static int parse_valued(const json_t *j, const char *at, textq_type_t type, textq_t **out,
                        cdn_err_t *err)
{
    const char *field;
    const json_t *body;
    char v[4096];
    int rc = one_field(j, at, &field, &body, err);
    if (rc)
        return rc;
    path_t p;
    sub(&p, at, field);
    const json_t *vv = json_is_object(body) ? json_object_get(body, "value") : body;
    if (!vv || scalar(vv, v, sizeof v))
        return bad(err, p.s, "expected a value (string, number or boolean) or {\"value\": ...}");
    rc = type == TEXTQ_TERM     ? textq_term(field, v, out)
         : type == TEXTQ_PREFIX ? textq_prefix(field, v, out)
                                : textq_fuzzy(field, v, -1, out);
    if (rc || !json_is_object(body))
        return rc;
    textq_t *q = *out;
    rc = get_boost(body, p.s, &q->boost, err);
    const json_t *fz = json_object_get(body, "fuzziness");
    const json_t *pl = json_object_get(body, "prefix_length");
    const json_t *me = json_object_get(body, "max_expansions");
    if (!rc && type == TEXTQ_FUZZY && fz) {
        char s[32];
        if (scalar(fz, s, sizeof s))
            rc = bad(err, p.s, "fuzziness must be \"AUTO\", 0, 1 or 2");
        else if (!strcasecmp(s, "auto"))
            q->fuzziness = -1;
        else if (strlen(s) == 1 && s[0] >= '0' && s[0] <= '2')
            q->fuzziness = s[0] - '0';
        else
            rc = bad(err, p.s, "fuzziness must be \"AUTO\", 0, 1 or 2");
    }
    if (!rc && pl && (!json_is_integer(pl) || json_integer_value(pl) < 0))
        rc = bad(err, p.s, "prefix_length must be a non-negative integer");
    else if (!rc && pl)
        q->prefix_length = (uint32_t)json_integer_value(pl);
    if (!rc && me && (!json_is_integer(me) || json_integer_value(me) < 1))
        rc = bad(err, p.s, "max_expansions must be a positive integer");
    else if (!rc && me)
        q->max_expansions = (uint32_t)json_integer_value(me);
    if (rc) {
        textq_free(q);
        *out = NULL;
    }
    return rc;
}

static int parse_terms(const json_t *j, const char *at, textq_t **out, cdn_err_t *err)
{
    const char *field = NULL, *key;
    const json_t *arr = NULL, *v;
    float boost = 1;
    if (!json_is_object(j))
        return bad(err, at, "expected {\"field\": [values]}");
    json_object_foreach((json_t *)j, key, v)
    {
        if (!strcmp(key, "boost"))
            continue;
        if (field)
            return bad(err, at, "terms takes exactly one field");
        field = key;
        arr = v;
    }
    if (!field || !json_is_array(arr) || json_array_size(arr) > 65536)
        return bad(err, at, "expected {\"field\": [values]} with at most 65536 values");
    if (get_boost(j, at, &boost, err))
        return CDN_ERR_INVALID;
    size_t n = json_array_size(arr);
    char **vals = cdn_calloc(n ? n : 1, sizeof *vals);
    int rc = vals ? CDN_OK : CDN_ERR_NOMEM;
    for (size_t i = 0; i < n && !rc; i++) {
        char buf[4096];
        if (scalar(json_array_get(arr, i), buf, sizeof buf)) {
            path_t p;
            sub(&p, at, field);
            rc = bad(err, p.s, "values must be strings, numbers or booleans");
        } else if (!(vals[i] = cdn_strdup(buf))) {
            rc = CDN_ERR_NOMEM;
        }
    }
    if (!rc && !(rc = textq_terms(field, (const char *const *)vals, n, out)))
        (*out)->boost = boost;
    for (size_t i = 0; vals && i < n; i++)
        cdn_free(vals[i]);
    cdn_free(vals);
    return rc;
}

static int parse_range(const json_t *j, const char *at, textq_t **out, cdn_err_t *err)
{
    const char *field;
    const json_t *body;
    int rc = one_field(j, at, &field, &body, err);
    if (rc)
        return rc;
    path_t p;
    sub(&p, at, field);
    if (!json_is_object(body))
        return bad(err, p.s, "expected an object with gte, gt, lte or lt");
    char lo[128], hi[128];
    const char *lop = NULL, *hip = NULL;
    int lo_incl = 1, hi_incl = 1;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)body, key, v)
    {
        int is_lo = !strcmp(key, "gte") || !strcmp(key, "gt");
        int is_hi = !strcmp(key, "lte") || !strcmp(key, "lt");
        if (!strcmp(key, "boost") || !strcmp(key, "format") || !strcmp(key, "time_zone"))
            continue;
        if (!is_lo && !is_hi)
            return bad(err, p.s, "unknown range key; use gte, gt, lte or lt");
        if (json_is_null(v))
            continue;
        if (scalar(v, is_lo ? lo : hi, 128))
            return bad(err, p.s, "range bounds must be numbers or date strings");
        if (is_lo) {
            lop = lo;
            lo_incl = key[2] == 'e';
        } else {
            hip = hi;
            hi_incl = key[2] == 'e';
        }
    }
    rc = textq_range(field, lop, lo_incl, hip, hi_incl, out);
    if (!rc && (rc = get_boost(body, p.s, &(*out)->boost, err))) {
        textq_free(*out);
        *out = NULL;
    }
    return rc;
}

static int parse_ids(const json_t *j, const char *at, textq_t **out, cdn_err_t *err)
{
    const json_t *vals = json_is_object(j) ? json_object_get(j, "values") : NULL;
    if (!json_is_array(vals))
        return bad(err, at, "expected {\"values\": [ids]}");
    size_t n = json_array_size(vals);
    uint32_t *ids = cdn_malloc((n ? n : 1) * sizeof *ids);
    if (!ids)
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(vals, i);
        long long x = -1;
        char *end = NULL;
        if (json_is_integer(v))
            x = json_integer_value(v);
        else if (json_is_string(v))
            x = strtoll(json_string_value(v), &end, 10);
        if (x < 0 || x >= UINT32_MAX || (end && (*end || end == json_string_value(v)))) {
            cdn_free(ids);
            return bad(err, at, "ids values must be internal numeric ids (0 .. 4294967294)");
        }
        ids[i] = (uint32_t)x;
    }
    int rc = textq_ids(ids, n, out);
    cdn_free(ids);
    return rc;
}

static int parse_bool(const json_t *j, const char *at, textq_t **out, cdn_err_t *err)
{
    static const char *const occ[] = {"must", "should", "filter", "must_not"};
    if (!json_is_object(j))
        return bad(err, at, "expected an object with must, should, filter or must_not");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)j, key, v)
    {
        int known = !strcmp(key, "minimum_should_match") || !strcmp(key, "boost");
        for (int o = 0; o < 4; o++)
            known |= !strcmp(key, occ[o]);
        if (!known) {
            path_t p;
            sub(&p, at, key);
            return bad(err, p.s, "unknown bool clause; use must, should, filter or must_not");
        }
    }
    textq_t *b = NULL;
    int rc = textq_bool(&b);
    for (int o = 0; o < 4 && !rc; o++) {
        const json_t *c = json_object_get(j, occ[o]);
        size_t n = json_is_array(c) ? json_array_size(c) : c ? 1 : 0;
        for (size_t i = 0; i < n && !rc; i++) {
            path_t p;
            char key2[48];
            if (json_is_array(c))
                snprintf(key2, sizeof key2, "%s[%zu]", occ[o], i);
            else
                snprintf(key2, sizeof key2, "%s", occ[o]);
            sub(&p, at, key2);
            textq_t *child;
            rc = parse(json_is_array(c) ? json_array_get(c, i) : c, p.s, &child, err);
            if (!rc)
                rc = textq_bool_add(b, (textq_occur_t)o, child);
        }
    }
    if (!rc)
        rc = get_msm(json_object_get(j, "minimum_should_match"), at, &b->msm, err);
    if (!rc)
        rc = get_boost(j, at, &b->boost, err);
    if (rc) {
        textq_free(b);
        return rc;
    }
    *out = b;
    return CDN_OK;
}

static int parse(const json_t *j, const char *at, textq_t **out, cdn_err_t *err)
{
    *out = NULL;
    if (!json_is_object(j) || json_object_size(j) != 1)
        return bad(err, at,
                   "expected an object with exactly one query type, e.g. {\"match\": ...}");
    void *it = json_object_iter((json_t *)j);
    const char *type = json_object_iter_key(it);
    const json_t *body = json_object_iter_value(it);
    path_t p;
    sub(&p, at, type);
    if (!strcmp(type, "match"))
        return parse_match(body, p.s, 0, out, err);
    if (!strcmp(type, "match_phrase"))
        return parse_match(body, p.s, 1, out, err);
    if (!strcmp(type, "multi_match"))
        return parse_multi_match(body, p.s, out, err);
    if (!strcmp(type, "term"))
        return parse_valued(body, p.s, TEXTQ_TERM, out, err);
    if (!strcmp(type, "prefix"))
        return parse_valued(body, p.s, TEXTQ_PREFIX, out, err);
    if (!strcmp(type, "fuzzy"))
        return parse_valued(body, p.s, TEXTQ_FUZZY, out, err);
    if (!strcmp(type, "terms"))
        return parse_terms(body, p.s, out, err);
    if (!strcmp(type, "range"))
        return parse_range(body, p.s, out, err);
    if (!strcmp(type, "ids"))
        return parse_ids(body, p.s, out, err);
    if (!strcmp(type, "bool"))
        return parse_bool(body, p.s, out, err);
    if (!strcmp(type, "exists")) {
        const char *f =
            json_is_object(body) ? json_string_value(json_object_get(body, "field")) : NULL;
        return f ? textq_exists(f, out) : bad(err, p.s, "expected {\"field\": \"name\"}");
    }
    if (!strcmp(type, "match_all")) {
        int rc = textq_new(TEXTQ_MATCH_ALL, out);
        if (!rc && (rc = get_boost(body, p.s, &(*out)->boost, err))) {
            textq_free(*out);
            *out = NULL;
        }
        return rc;
    }
    return cdn_err_set(err, CDN_ERR_UNSUPPORTED,
                       "%s: query type '%s' is not supported; use match, multi_match, "
                       "match_phrase, term, terms, range, exists, ids, prefix, fuzzy, bool or "
                       "match_all",
                       p.s, type);
}

/* The largest product of boosts from the root to any leaf (field boosts included): a score is
 * at most that times the sum of its clauses' BM25 scores. */
static double path_boost(const textq_t *q)
{
    double below = 1;
    const textq_list_t *lists[] = {&q->must, &q->should, &q->filter, &q->must_not};
    for (size_t i = 0; i < q->nfields; i++)
        if (q->fields[i].boost > below)
            below = q->fields[i].boost;
    if (q->type == TEXTQ_BOOL)
        for (size_t l = 0; l < 4; l++)
            for (size_t i = 0; i < lists[l]->n; i++) {
                double b = path_boost(lists[l]->q[i]);
                if (b > below)
                    below = b;
            }
    return q->boost * below;
}

int textq_parse_es(const json_t *query, textq_t **out, cdn_err_t *err)
{
    int rc = parse(query, "query", out, err);
    if (rc == CDN_OK && path_boost(*out) > TEXTQ_BOOST_PATH_MAX) {
        textq_free(*out);
        *out = NULL;
        return bad(err, "query",
                   "the boosts along one path of the query multiply to more than "
                   "1e12, past which scores stop being finite numbers");
    }
    return rc;
}
