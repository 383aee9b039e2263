/* textq.c: construction and destruction of query trees, minimum_should_match arithmetic.
 * Relies on mem.h; every string in a tree is a private copy. */
#include "text/textq.h"

#include <string.h>

#include "base/mem.h"

int textq_new(textq_type_t type, textq_t **out)
{
    textq_t *q = cdn_calloc(1, sizeof *q);
    if (!q)
        return CDN_ERR_NOMEM;
    q->type = type;
    q->boost = 1.0f;
    q->fuzziness = -1;
    q->max_expansions = 50;
    q->lo_incl = q->hi_incl = 1;
    *out = q;
    return CDN_OK;
}

static void list_free(textq_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        textq_free(l->q[i]);
    cdn_free(l->q);
}

void textq_free(textq_t *q)
{
    if (!q)
        return;
    cdn_free(q->field);
    cdn_free(q->text);
    for (size_t i = 0; i < q->nfields; i++)
        cdn_free(q->fields[i].name);
    cdn_free(q->fields);
    for (size_t i = 0; i < q->nvalues; i++)
        cdn_free(q->values[i]);
    cdn_free(q->values);
    cdn_free(q->ids);
    cdn_free(q->lo);
    cdn_free(q->hi);
    list_free(&q->must);
    list_free(&q->should);
    list_free(&q->filter);
    list_free(&q->must_not);
    cdn_free(q);
}

/* A leaf with a field and a text; the common shape of most constructors. */
static int leaf(textq_type_t type, const char *field, const char *text, textq_t **out)
{
    textq_t *q;
    if (textq_new(type, &q))
        return CDN_ERR_NOMEM;
    q->field = field ? cdn_strdup(field) : NULL;
    q->text = text ? cdn_strdup(text) : NULL;
    if ((field && !q->field) || (text && !q->text)) {
        textq_free(q);
        return CDN_ERR_NOMEM;
    }
    *out = q;
    return CDN_OK;
}

int textq_match(const char *field, const char *text, textq_t **out)
{
    return leaf(TEXTQ_MATCH, field, text, out);
}

int textq_phrase(const char *field, const char *text, uint32_t slop, textq_t **out)
{
    int rc = leaf(TEXTQ_PHRASE, field, text, out);
    if (!rc)
        (*out)->slop = slop;
    return rc;
}

int textq_prefix(const char *field, const char *prefix, textq_t **out)
{
    return leaf(TEXTQ_PREFIX, field, prefix, out);
}

int textq_fuzzy(const char *field, const char *value, int fuzziness, textq_t **out)
{
    int rc = leaf(TEXTQ_FUZZY, field, value, out);
    if (!rc)
        (*out)->fuzziness = fuzziness;
    return rc;
}

int textq_term(const char *field, const char *value, textq_t **out)
{
    return leaf(TEXTQ_TERM, field, value, out);
}

int textq_exists(const char *field, textq_t **out)
{
    return leaf(TEXTQ_EXISTS, field, NULL, out);
}

int textq_multi_match(const char *text, const char *const *fields, const float *boosts, size_t n,
                      textq_mm_t type, textq_t **out)
{
    textq_t *q;
    if (leaf(TEXTQ_MULTI_MATCH, NULL, text, &q))
        return CDN_ERR_NOMEM;
    q->mm_type = type;
    q->fields = cdn_calloc(n ? n : 1, sizeof *q->fields);
    if (!q->fields) {
        textq_free(q);
        return CDN_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        q->fields[i].name = cdn_strdup(fields[i]);
        q->fields[i].boost = boosts ? boosts[i] : 1.0f;
        q->nfields++;
        if (!q->fields[i].name) {
            textq_free(q);
            return CDN_ERR_NOMEM;
        }
    }
    *out = q;
    return CDN_OK;
}

int textq_terms(const char *field, const char *const *values, size_t n, textq_t **out)
{
    textq_t *q;
    if (leaf(TEXTQ_TERMS, field, NULL, &q))
        return CDN_ERR_NOMEM;
    q->values = cdn_calloc(n ? n : 1, sizeof *q->values);
    if (!q->values) {
        textq_free(q);
        return CDN_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        q->values[i] = cdn_strdup(values[i]);
        q->nvalues++;
        if (!q->values[i]) {
            textq_free(q);
            return CDN_ERR_NOMEM;
        }
    }
    *out = q;
    return CDN_OK;
}

int textq_range(const char *field, const char *lo, int lo_incl, const char *hi, int hi_incl,
                textq_t **out)
{
    textq_t *q;
    if (leaf(TEXTQ_RANGE, field, NULL, &q))
        return CDN_ERR_NOMEM;
    q->lo = lo ? cdn_strdup(lo) : NULL;
    q->hi = hi ? cdn_strdup(hi) : NULL;
    q->lo_incl = lo_incl;
    q->hi_incl = hi_incl;
    if ((lo && !q->lo) || (hi && !q->hi)) {
        textq_free(q);
        return CDN_ERR_NOMEM;
    }
    *out = q;
    return CDN_OK;
}

int textq_ids(const uint32_t *ids, size_t n, textq_t **out)
{
    textq_t *q;
    if (textq_new(TEXTQ_IDS, &q))
        return CDN_ERR_NOMEM;
    q->ids = cdn_malloc((n ? n : 1) * sizeof *ids);
    if (!q->ids) {
        textq_free(q);
        return CDN_ERR_NOMEM;
    }
    if (n)
        memcpy(q->ids, ids, n * sizeof *ids);
    q->nids = n;
    *out = q;
    return CDN_OK;
}

int textq_bool(textq_t **out)
{
    return textq_new(TEXTQ_BOOL, out);
}

int textq_bool_add(textq_t *b, textq_occur_t occur, textq_t *child)
{
    if (!b || b->type != TEXTQ_BOOL || !child) {
        textq_free(child);
        return CDN_ERR_INVALID;
    }
    textq_list_t *l = occur == TEXTQ_MUST     ? &b->must
                      : occur == TEXTQ_SHOULD ? &b->should
                      : occur == TEXTQ_FILTER ? &b->filter
                                              : &b->must_not;
    if (cdn_grow((void **)&l->q, &l->cap, l->n + 1, sizeof *l->q)) {
        textq_free(child);
        return CDN_ERR_NOMEM;
    }
    l->q[l->n++] = child;
    return CDN_OK;
}

size_t textq_msm_required(const textq_msm_t *m, size_t n)
{
    if (!m->set)
        return n ? 1 : 0;
    long v = m->value;
    if (m->percent)
        v = v >= 0 ? (long)n * v / 100 : (long)n - (long)n * (-v) / 100;
    else if (v < 0)
        v = (long)n + v;
    if (v < 0)
        v = 0;
    return (size_t)v > n ? n : (size_t)v;
}
