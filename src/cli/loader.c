/* loader.c: JSON-lines loading in two passes: validate every line, then write in batches.
 * Relies on jansson for parsing and base/fvecs for vector files.
 *
 * A line is {"id" or "_id", text fields by name (top level or under "fields"), "vector" (or a
 * row of the fvecs file), "metadata" (object), "allowed" or the collection's ACL field,
 * "denied"}. */
#include "cli/loader.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/fvecs.h"
#include "base/mem.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES (8u << 20)

typedef struct line {
    json_t *obj;
    const char *id;
    const char *names[CORDON_TEXT_FIELDS_MAX];
    const char *values[CORDON_TEXT_FIELDS_MAX];
    cordon_field fields[CORDON_TEXT_FIELDS_MAX];
    size_t nfields;
    float *vec;                 /* owned when inline */
    int vec_owned;
    char *meta;                 /* jansson-allocated */
    const char **allowed, **denied;
    size_t na, nd;
} line_t;

static int fail(cordon_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(cordon_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

static void line_clear(line_t *l)
{
    json_decref(l->obj);
    if (l->vec_owned)
        cdn_free(l->vec);
    free(l->meta);
    cdn_free(l->allowed);
    cdn_free(l->denied);
    memset(l, 0, sizeof *l);
}

static int string_list(json_t *a, const char ***out, size_t *n)
{
    *n = 0;
    *out = NULL;
    if (!a)
        return CDN_OK;
    if (!json_is_array(a))
        return CDN_ERR_INVALID;
    if (!(*out = cdn_calloc(json_array_size(a) + 1, sizeof **out)))
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < json_array_size(a); i++)
        if (!((*out)[(*n)++] = json_string_value(json_array_get(a, i))))
            return CDN_ERR_INVALID;
    return CDN_OK;
}

static int parse_vector(json_t *v, const cordon_collection_info *ci, line_t *l, char *why,
                        size_t wn)
{
    if (json_array_size(v) != ci->dim) {
        snprintf(why, wn, "\"vector\" has %zu values; collection \"%s\" expects %u",
                 json_array_size(v), ci->name, ci->dim);
        return CDN_ERR_INVALID;
    }
    if (!(l->vec = cdn_malloc(ci->dim * sizeof(float))))
        return CDN_ERR_NOMEM;
    l->vec_owned = 1;
    for (uint32_t i = 0; i < ci->dim; i++) {
        json_t *x = json_array_get(v, i);
        if (!json_is_number(x) || !isfinite(json_number_value(x))) {
            snprintf(why, wn, "\"vector\" value %u is not a finite number", i);
            return CDN_ERR_INVALID;
        }
        l->vec[i] = (float)json_number_value(x);
    }
    return CDN_OK;
}

/* Parses one line into l. On error, why says what is wrong. */
static int parse_line(const char *text, size_t len, const cordon_collection_info *ci,
                      const float *row, const loader_opts_t *o, line_t *l, char *why, size_t wn)
{
    json_error_t je;
    json_t *fields, *v;
    int rc;
    memset(l, 0, sizeof *l);
    if (!(l->obj = json_loadb(text, len, 0, &je)) || !json_is_object(l->obj)) {
        snprintf(why, wn, "not a JSON object (column %d: %s)", je.column,
                 l->obj ? "not an object" : je.text);
        return CDN_ERR_INVALID;
    }
    l->id = json_string_value(json_object_get(l->obj, "id"));
    if (!l->id)
        l->id = json_string_value(json_object_get(l->obj, "_id"));
    if (!l->id) {
        snprintf(why, wn, "no \"id\" (or \"_id\") string");
        return CDN_ERR_INVALID;
    }
    fields = json_object_get(l->obj, "fields");
    for (size_t f = 0; f < ci->n_text_fields; f++) {
        const char *name = ci->text_fields[f];
        const char *val = json_string_value(json_object_get(fields ? fields : l->obj, name));
        if (!val)
            continue;
        l->fields[l->nfields] = (cordon_field){name, val};
        l->nfields++;
    }
    if ((v = json_object_get(l->obj, "vector")) != NULL) {
        if ((rc = parse_vector(v, ci, l, why, wn)) != 0)
            return rc;
    } else {
        l->vec = (float *)row;
    }
    if ((v = json_object_get(l->obj, "metadata")) != NULL &&
        !(l->meta = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)))
        return CDN_ERR_NOMEM;
    v = json_object_get(l->obj, "allowed");
    if (!v)
        v = json_object_get(l->obj, ci->acl_field);
    if (string_list(v, &l->allowed, &l->na) || string_list(json_object_get(l->obj, "denied"),
                                                           &l->denied, &l->nd)) {
        snprintf(why, wn, "\"allowed\" and \"denied\" must be arrays of principal strings");
        return CDN_ERR_INVALID;
    }
    if (!v) {
        l->allowed = NULL;
        l->na = o->n_allow;
    }
    return CDN_OK;
}

static cordon_chunk to_chunk(line_t *l, const loader_opts_t *o)
{
    return (cordon_chunk){.id = l->id, .vector = l->vec, .fields = l->fields,
                          .n_fields = l->nfields, .metadata_json = l->meta,
                          .allowed = l->allowed ? l->allowed : o->allow, .n_allowed = l->na,
                          .denied = l->denied, .n_denied = l->nd};
}

typedef struct pass {
    cordon_t *db;
    const loader_opts_t *o;
    cordon_collection_info ci;
    float *vecs;
    size_t nvecs;
    int write;
    line_t *lines;
    cordon_chunk *chunks;
    size_t pending, loaded, lineno;
    uint64_t t0, last;
} pass_t;

static int flush(pass_t *p, cordon_error *err)
{
    int rc = CDN_OK;
    if (p->pending)
        rc = cordon_put(p->db, p->o->collection, p->chunks, p->pending, NULL, err);
    for (size_t i = 0; i < p->pending; i++)
        line_clear(&p->lines[i]);
    if (rc == CDN_OK)
        p->loaded += p->pending;
    p->pending = 0;
    if (p->o->progress && cdn_clock_ns() - p->last > 1000000000ull) {
        double s = (double)(cdn_clock_ns() - p->t0) / 1e9;
        fprintf(stderr, "\rloaded %zu chunks in %.1f s (%.0f/s)", p->loaded, s, p->loaded / s);
        p->last = cdn_clock_ns();
    }
    return rc;
}

static int one_line(pass_t *p, const char *buf, size_t len, cordon_error *err)
{
    char why[200];
    const float *row = NULL;
    line_t *l = &p->lines[p->pending];
    int rc;
    if (p->vecs) {
        if (p->lineno - 1 >= p->nvecs)
            return fail(err, CDN_ERR_INVALID, "%s line %zu: %s has only %zu vectors", p->o->jsonl,
                        p->lineno, p->o->fvecs, p->nvecs);
        row = p->vecs + (p->lineno - 1) * p->ci.dim;
    }
    if ((rc = parse_line(buf, len, &p->ci, row, p->o, l, why, sizeof why)) != 0) {
        line_clear(l);
        return fail(err, rc, "%s line %zu: %s", p->o->jsonl, p->lineno, why);
    }
    if (p->ci.dim && !l->vec) {
        line_clear(l);
        return fail(err, CDN_ERR_INVALID, "%s line %zu: no \"vector\" and no --vectors file",
                    p->o->jsonl, p->lineno);
    }
    if (!p->write) {
        line_clear(l);
        return CDN_OK;
    }
    p->chunks[p->pending++] = to_chunk(l, p->o);
    return p->pending == (p->o->batch ? p->o->batch : 1000) ? flush(p, err) : CDN_OK;
}

static int run_pass(pass_t *p, cordon_error *err)
{
    FILE *f = fopen(p->o->jsonl, "r");
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = CDN_OK;
    if (!f)
        return fail(err, CDN_ERR_IO, "cannot open %s", p->o->jsonl);
    p->lineno = 0;
    while (rc == CDN_OK && (len = getline(&buf, &cap, f)) >= 0) {
        p->lineno++;
        if ((size_t)len > LINE_MAX_BYTES)
            rc = fail(err, CDN_ERR_LIMIT, "%s line %zu passes %u bytes", p->o->jsonl, p->lineno,
                      LINE_MAX_BYTES);
        else if (strspn(buf, " \t\r\n") != (size_t)len)
            rc = one_line(p, buf, (size_t)len, err);
    }
    if (rc == CDN_OK && p->write)
        rc = flush(p, err);
    free(buf);
    fclose(f);
    return rc;
}

int loader_run(cordon_t *db, const loader_opts_t *o, size_t *loaded, cordon_error *err)
{
    pass_t p = {.db = db, .o = o};
    size_t batch = o->batch ? o->batch : 1000;
    cdn_err_t e = {0, ""};
    uint32_t vdim = 0;
    int rc = cordon_collection_info_get(db, o->collection, &p.ci, err);
    if (rc)
        return rc;
    if (o->fvecs && (rc = cdn_fvecs_read(o->fvecs, &p.vecs, &p.nvecs, &vdim, &e)) != 0)
        return fail(err, rc, "%s", e.msg);
    if (o->fvecs && vdim != p.ci.dim) {
        cdn_free(p.vecs);
        return fail(err, CDN_ERR_INVALID, "%s holds %u-d vectors; collection \"%s\" expects %u",
                    o->fvecs, vdim, o->collection, p.ci.dim);
    }
    p.lines = cdn_calloc(batch, sizeof *p.lines);
    p.chunks = cdn_calloc(batch, sizeof *p.chunks);
    if (!p.lines || !p.chunks)
        rc = fail(err, CDN_ERR_NOMEM, "out of memory");
    if (rc == CDN_OK)
        rc = run_pass(&p, err); /* validate only */
    p.write = 1;
    p.t0 = p.last = cdn_clock_ns();
    if (rc == CDN_OK)
        rc = run_pass(&p, err);
    if (o->progress && p.loaded)
        fprintf(stderr, "\rloaded %zu chunks in %.1f s\n", p.loaded,
                (double)(cdn_clock_ns() - p.t0) / 1e9);
    for (size_t i = 0; i < p.pending; i++)
        line_clear(&p.lines[i]);
    cdn_free(p.lines);
    cdn_free(p.chunks);
    cdn_free(p.vecs);
    *loaded = p.loaded;
    return rc;
}
