/* textidx.c: a collection's text layer: field mapping, add/delete, permission-filtered search
 * entry point (persistence lives in textidx_io.c). Relies on invidx, fieldidx, analyzer and
 * textq_eval.c. */
#include "text/textidx.h"

#include <math.h>
#include <string.h>

#include "base/mem.h"

textidx_config_t textidx_config_default(void)
{
    return (textidx_config_t){1.2f, 0.75f};
}

int textidx_create(const textidx_config_t *cfg, textidx_t **out, cdn_err_t *err)
{
    textidx_config_t c = cfg ? *cfg : textidx_config_default();
    if (!(c.k1 >= 0 && c.k1 < 1000) || !(c.b >= 0 && c.b <= 1))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "bm25 k1=%g b=%g out of range; k1 must be >= 0 and b within 0..1",
                           (double)c.k1, (double)c.b);
    textidx_t *ti = cdn_calloc(1, sizeof *ti);
    if (!ti || !(ti->live = roaring_bitmap_create())) {
        cdn_free(ti);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory creating a text index");
    }
    ti->cfg = c;
    fieldidx_init(&ti->fi);
    *out = ti;
    return CDN_OK;
}

void textidx_free(textidx_t *ti)
{
    if (!ti)
        return;
    for (size_t i = 0; i < ti->ntf; i++) {
        cdn_free(ti->tf[i].name);
        analyzer_destroy(&ti->tf[i].an);
        invidx_destroy(&ti->tf[i].ix);
        fscache_free(ti->tf[i].stats);
    }
    cdn_free(ti->tf);
    fieldidx_destroy(&ti->fi);
    if (ti->live)
        roaring_bitmap_free(ti->live);
    analyzer_tokens_free(&ti->scratch);
    cdn_free(ti);
}

static int add_text_field(textidx_t *ti, const char *name, const analyzer_spec_t *spec,
                          cdn_err_t *err)
{
    if (cdn_grow((void **)&ti->tf, &ti->tf_cap, ti->ntf + 1, sizeof *ti->tf))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory mapping field '%s'", name);
    textidx_tfield_t *f = &ti->tf[ti->ntf];
    memset(f, 0, sizeof *f);
    if (!(f->name = cdn_strdup(name)))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory mapping field '%s'", name);
    int rc = analyzer_init(&f->an, spec, err);
    if (!rc && (rc = invidx_init(&f->ix)))
        analyzer_destroy(&f->an);
    if (!rc && (rc = fscache_create(&f->stats))) {
        invidx_destroy(&f->ix);
        analyzer_destroy(&f->an);
    }
    if (rc) {
        cdn_free(f->name);
        return rc == CDN_ERR_NOMEM ? cdn_err_set(err, rc, "out of memory mapping '%s'", name) : rc;
    }
    ti->ntf++;
    return CDN_OK;
}

int textidx_add_field(textidx_t *ti, const char *name, textidx_kind_t kind, const char *analyzer,
                      cdn_err_t *err)
{
    size_t fno;
    if (!name || !*name)
        return cdn_err_set(err, CDN_ERR_INVALID, "field name is empty; give the field a name");
    int is_text = textidx_text_field(ti, name) != NULL;
    int is_meta = fieldidx_find(&ti->fi, name, &fno) == CDN_OK;
    if ((is_text && kind != TEXTIDX_TEXT) || (is_meta && kind == TEXTIDX_TEXT))
        return cdn_err_set(err, CDN_ERR_EXISTS, "field '%s' is already mapped with another type",
                           name);
    if (kind == TEXTIDX_TEXT) {
        analyzer_spec_t spec;
        int rc = analyzer_spec_parse(analyzer, &spec, err);
        if (rc || is_text)
            return rc;
        return add_text_field(ti, name, &spec, err);
    }
    if (kind < TEXTIDX_KEYWORD || kind > TEXTIDX_BOOL)
        return cdn_err_set(err, CDN_ERR_INVALID, "field '%s': unknown kind %d", name, (int)kind);
    return fieldidx_add_field(&ti->fi, name, (fieldidx_kind_t)kind, err);
}

uint64_t textidx_doc_count(const textidx_t *ti)
{
    return roaring_bitmap_get_cardinality(ti->live);
}

/* Checks every value before anything is indexed, so a bad document changes nothing. */
static int check_values(const textidx_t *ti, const textidx_value_t *v, size_t n, cdn_err_t *err)
{
    for (size_t i = 0; i < n; i++) {
        size_t fno;
        if (!v[i].field)
            return cdn_err_set(err, CDN_ERR_INVALID, "value %zu has no field name", i);
        if (textidx_text_field(ti, v[i].field)) {
            if (!v[i].text)
                return cdn_err_set(err, CDN_ERR_INVALID, "field '%s': text value is missing",
                                   v[i].field);
            continue;
        }
        if (fieldidx_find(&ti->fi, v[i].field, &fno))
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "field '%s' is not mapped; map it with textidx_add_field first",
                               v[i].field);
        fieldidx_kind_t k = ti->fi.f[fno].kind;
        double d;
        if (k == FIELDIDX_KEYWORD && !v[i].text)
            return cdn_err_set(err, CDN_ERR_INVALID, "field '%s': keyword value is missing",
                               v[i].field);
        if (k == FIELDIDX_DATE && v[i].text && fieldidx_parse_date(v[i].text, v[i].len, &d))
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "field '%s': '%.*s' is not a date; use ISO-8601 or epoch ms",
                               v[i].field, (int)(v[i].len > 64 ? 64 : v[i].len), v[i].text);
        if (k == FIELDIDX_BOOL && v[i].text && !(v[i].len == 4 && !memcmp(v[i].text, "true", 4)) &&
            !(v[i].len == 5 && !memcmp(v[i].text, "false", 5)))
            return cdn_err_set(err, CDN_ERR_INVALID, "field '%s': boolean must be true or false",
                               v[i].field);
        if ((k == FIELDIDX_NUMBER || (k == FIELDIDX_DATE && !v[i].text)) && !isfinite(v[i].num))
            return cdn_err_set(err, CDN_ERR_INVALID, "field '%s': number is not finite",
                               v[i].field);
    }
    return CDN_OK;
}

static int index_meta(textidx_t *ti, uint32_t id, const textidx_value_t *v)
{
    size_t fno;
    if (fieldidx_find(&ti->fi, v->field, &fno))
        return CDN_OK;
    switch (ti->fi.f[fno].kind) {
    case FIELDIDX_KEYWORD: return fieldidx_add_keyword(&ti->fi, fno, id, v->text, v->len);
    case FIELDIDX_BOOL: {
        int t = v->text ? v->len == 4 : v->num != 0;
        return fieldidx_add_keyword(&ti->fi, fno, id, t ? "true" : "false", t ? 4 : 5);
    }
    case FIELDIDX_DATE: {
        double d = v->num;
        if (v->text)
            fieldidx_parse_date(v->text, v->len, &d);
        return fieldidx_add_number(&ti->fi, fno, id, d);
    }
    default: return fieldidx_add_number(&ti->fi, fno, id, v->num);
    }
}

int textidx_add_doc(textidx_t *ti, uint32_t id, const textidx_value_t *vals, size_t n,
                    cdn_err_t *err)
{
    if (id == UINT32_MAX)
        return cdn_err_set(err, CDN_ERR_INVALID, "doc id %u is reserved", id);
    if (roaring_bitmap_contains(ti->live, id))
        return cdn_err_set(err, CDN_ERR_EXISTS,
                           "doc %u is already indexed; delete it first (updates take a new id)",
                           id);
    int rc = check_values(ti, vals, n, err);
    if (rc)
        return rc;
    roaring_bitmap_add(ti->live, id);
    for (size_t f = 0; f < ti->ntf && !rc; f++) {
        analyzer_tokens_reset(&ti->scratch);
        for (size_t i = 0; i < n && !rc; i++)
            if (!strcmp(vals[i].field, ti->tf[f].name))
                rc = analyzer_run(&ti->tf[f].an, vals[i].text, vals[i].len, &ti->scratch);
        if (!rc && ti->scratch.n)
            rc = invidx_add(&ti->tf[f].ix, id, &ti->scratch);
    }
    for (size_t i = 0; i < n && !rc; i++)
        rc = index_meta(ti, id, &vals[i]);
    if (rc) {
        textidx_delete_doc(ti, id);
        return cdn_err_set(err, rc, "indexing doc %u failed: %s", id, cdn_strerror(rc));
    }
    return CDN_OK;
}

int textidx_delete_doc(textidx_t *ti, uint32_t id)
{
    if (!roaring_bitmap_contains(ti->live, id))
        return CDN_OK;
    roaring_bitmap_remove(ti->live, id);
    for (size_t f = 0; f < ti->ntf; f++)
        invidx_delete(&ti->tf[f].ix, id);
    fieldidx_delete(&ti->fi, id);
    return CDN_OK;
}

void textidx_compact(textidx_t *ti)
{
    for (size_t f = 0; f < ti->ntf; f++)
        invidx_compact(&ti->tf[f].ix);
}

static int field_known(const textidx_t *ti, const char *name)
{
    size_t fno;
    return textidx_text_field(ti, name) || fieldidx_find(&ti->fi, name, &fno) == CDN_OK;
}

static const char *unknown_in(const textidx_t *ti, const textq_list_t *l)
{
    const char *u = NULL;
    for (size_t i = 0; !u && i < l->n; i++)
        u = textidx_unknown_field(ti, l->q[i]);
    return u;
}

const char *textidx_unknown_field(const textidx_t *ti, const textq_t *q)
{
    const char *u;
    switch (q->type) {
    case TEXTQ_MATCH_ALL:
    case TEXTQ_IDS: return NULL;
    case TEXTQ_MULTI_MATCH:
        for (size_t i = 0; i < q->nfields; i++)
            if (!field_known(ti, q->fields[i].name))
                return q->fields[i].name;
        return NULL;
    case TEXTQ_BOOL:
        if ((u = unknown_in(ti, &q->must)) || (u = unknown_in(ti, &q->should)) ||
            (u = unknown_in(ti, &q->filter)))
            return u;
        return unknown_in(ti, &q->must_not);
    default: return q->field && !field_known(ti, q->field) ? q->field : NULL;
    }
}

int textidx_search(const textidx_t *ti, const textq_t *q, const textidx_search_opts_t *opts,
                   textidx_result_t *res, cdn_err_t *err)
{
    memset(res, 0, sizeof *res);
    if (!q)
        return cdn_err_set(err, CDN_ERR_INVALID, "query is missing");
    /* base: what this subject may read among live docs. Without a permission set, the live set
     * is needed only when deleted postings remain (or a fieldidx entry could be stale). */
    roaring_bitmap_t *own = NULL;
    const roaring_bitmap_t *base = NULL;
    int dead = 0;
    for (size_t f = 0; f < ti->ntf && !dead; f++)
        dead = invidx_dead_postings(&ti->tf[f].ix) > 0;
    if (opts->allowed) {
        if (!(own = roaring_bitmap_and(opts->allowed, ti->live)))
            return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory filtering by permissions");
        base = own;
        /* everything readable: skip the per-candidate membership test */
        uint64_t n_own = roaring_bitmap_get_cardinality(own);
        if (!dead && n_own == roaring_bitmap_get_cardinality(ti->live))
            base = NULL;
    } else if (dead) {
        base = ti->live;
    }
    res->readable = roaring_bitmap_get_cardinality(base ? base : ti->live);
    /* Statistics over the readable set, unless it holds every live doc (then they are the
     * collection's own, computed for free). Each field intersects it with its own live set. */
    const roaring_bitmap_t *over = opts->stats_over;
    if (over &&
        roaring_bitmap_and_cardinality(over, ti->live) == roaring_bitmap_get_cardinality(ti->live))
        over = NULL;
    int rc = textq_exec(ti, q, base, over, opts, res, err);
    if (own)
        roaring_bitmap_free(own);
    if (rc) {
        textidx_result_free(res);
        return rc == CDN_ERR_NOMEM ? cdn_err_set(err, rc, "out of memory during search") : rc;
    }
    return CDN_OK;
}

int textidx_filter(const textidx_t *ti, const textq_t *q, roaring_bitmap_t *allowed, cdn_err_t *err)
{
    if (!q)
        return cdn_err_set(err, CDN_ERR_INVALID, "query is missing");
    return textq_filter(ti, q, allowed, err);
}

void textidx_result_free(textidx_result_t *res)
{
    cdn_free(res->hits);
    res->hits = NULL;
    res->n = 0;
}
