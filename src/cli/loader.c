/* loader.c: JSON-lines loading in two passes: check every line by the engine's own rules
 * (cordon_chunk_check), then write in batches. Relies on jansson for parsing and base/fvecs for
 * vector files.
 *
 * A line is {"id" or "_id", text fields by name (top level or under "fields"), "vector" (or a
 * row of the fvecs file), "metadata" (object) and the collection's metadata fields by name at
 * the top level, "allowed" or the collection's ACL field, "denied", "tenant", "labels"}. Any
 * other key is an error:
 * a misspelt "denied" read as nothing would deny nothing. */
#include "cli/loader.h"
#include "base/err.h"
#include "base/fvecs.h"
#include "base/mem.h"
#include "cli/load_survey.h"
#include "cli/progress.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LINE_MAX_BYTES (8u << 20)

typedef struct line {
    json_t *obj;
    const char *id;
    cordon_field fields[CORDON_TEXT_FIELDS_MAX];
    size_t nfields;
    float *vec; /* owned when inline */
    int vec_owned;
    char *meta; /* jansson-allocated */
    const char **allowed, **denied, **labels;
    size_t na, nd, nl;
    const char *tenant, *object;
    size_t lineno; /* the file's line it came from */
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
    cdn_free(l->labels);
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

/* ---- Keys: what a line may hold, and a near miss for the ones it may not. ---- */

static const char *const fixed_keys[] = {"id",      "_id",    "vector", "metadata", "fields",
                                         "allowed", "denied", "tenant", "labels",   "object"};
#define N_FIXED (sizeof fixed_keys / sizeof fixed_keys[0])

static int is_text_field(const cordon_collection_info *ci, const char *k)
{
    for (size_t f = 0; f < ci->n_text_fields; f++)
        if (!strcmp(ci->text_fields[f], k))
            return 1;
    return 0;
}

static int is_meta_field(const cordon_collection_info *ci, const char *k)
{
    for (size_t f = 0; f < ci->n_meta_fields; f++)
        if (!strcmp(ci->meta_fields[f].name, k))
            return 1;
    return 0;
}

static int is_known_key(const cordon_collection_info *ci, const char *k)
{
    for (size_t i = 0; i < N_FIXED; i++)
        if (!strcmp(fixed_keys[i], k))
            return 1;
    return !strcmp(ci->acl_field, k) || is_text_field(ci, k) || is_meta_field(ci, k);
}

/* Edit distance ignoring case, capped: enough to tell "deny" or "Denied" from "denied". */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[65];
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], cost = strncasecmp(a + i - 1, b + j - 1, 1) != 0;
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static void consider(const char *key, const char *cand, const char **best, size_t *bestd)
{
    size_t d = distance(key, cand),
           longer = strlen(key) > strlen(cand) ? strlen(key) : strlen(cand);
    if (d <= longer / 2 && d < *bestd) {
        *best = cand;
        *bestd = d;
    }
}

static void unknown_key(const cordon_collection_info *ci, const char *key, char *why, size_t wn)
{
    const char *best = NULL;
    size_t bestd = SIZE_MAX, n;
    for (size_t i = 0; i < N_FIXED; i++)
        consider(key, fixed_keys[i], &best, &bestd);
    consider(key, ci->acl_field, &best, &bestd);
    for (size_t f = 0; f < ci->n_text_fields; f++)
        consider(key, ci->text_fields[f], &best, &bestd);
    for (size_t f = 0; f < ci->n_meta_fields; f++)
        consider(key, ci->meta_fields[f].name, &best, &bestd);
    n = (size_t)snprintf(why, wn,
                         "unknown key \"%.60s\"%s%s%s; a line holds id (or _id), "
                         "vector, metadata, fields, allowed (or %s), denied, tenant, labels, "
                         "object",
                         key, best ? " (did you mean \"" : "", best ? best : "", best ? "\"?)" : "",
                         ci->acl_field);
    for (size_t f = 0; f < ci->n_text_fields && n < wn; f++)
        n += (size_t)snprintf(why + n, wn - n, ", %s", ci->text_fields[f]);
    for (size_t f = 0; f < ci->n_meta_fields && n < wn; f++)
        n += (size_t)snprintf(why + n, wn - n, ", %s", ci->meta_fields[f].name);
}

/* Checks every key of the line and of its "fields" object. */
static int check_keys(const cordon_collection_info *ci, json_t *obj, json_t *fields, char *why,
                      size_t wn)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        if (!is_known_key(ci, k)) {
            unknown_key(ci, k, why, wn);
            return CDN_ERR_INVALID;
        }
    }
    if (json_object_get(obj, "allowed") && strcmp(ci->acl_field, "allowed") &&
        json_object_get(obj, ci->acl_field)) {
        snprintf(why, wn, "both \"allowed\" and \"%s\"; give the allowed principals once",
                 ci->acl_field);
        return CDN_ERR_INVALID;
    }
    if (!fields)
        return CDN_OK;
    if (!json_is_object(fields)) {
        snprintf(why, wn, "\"fields\" must be an object of text fields");
        return CDN_ERR_INVALID;
    }
    json_object_foreach(fields, k, v)
    {
        if (!is_text_field(ci, k)) {
            snprintf(why, wn,
                     "\"fields\" holds \"%.60s\", not a text field of collection "
                     "\"%s\"",
                     k, ci->name);
            return CDN_ERR_INVALID;
        }
        if (json_object_get(obj, k)) {
            snprintf(why, wn,
                     "text field \"%.60s\" is both under \"fields\" and at the top "
                     "level",
                     k);
            return CDN_ERR_INVALID;
        }
    }
    return CDN_OK;
}

static int parse_text(const cordon_collection_info *ci, json_t *obj, json_t *fields, line_t *l,
                      char *why, size_t wn)
{
    for (size_t f = 0; f < ci->n_text_fields; f++) {
        const char *name = ci->text_fields[f];
        json_t *v = json_object_get(obj, name);
        if (!v && fields)
            v = json_object_get(fields, name);
        if (!v || json_is_null(v))
            continue;
        if (!json_is_string(v)) {
            snprintf(why, wn, "text field \"%s\" must be a string", name);
            return CDN_ERR_INVALID;
        }
        l->fields[l->nfields++] = (cordon_field){name, json_string_value(v)};
    }
    return CDN_OK;
}

/* "metadata" with the top-level metadata fields merged in, as one JSON text. */
static int parse_meta(const cordon_collection_info *ci, json_t *obj, line_t *l, char *why,
                      size_t wn)
{
    json_t *meta = json_object_get(obj, "metadata"), *merged = NULL;
    for (size_t f = 0; f < ci->n_meta_fields; f++) {
        const char *name = ci->meta_fields[f].name;
        json_t *v = json_object_get(obj, name);
        if (!v)
            continue;
        if (meta && !json_is_object(meta))
            break; /* the engine's check names the problem */
        if (meta && json_object_get(meta, name)) {
            json_decref(merged);
            snprintf(why, wn,
                     "metadata field \"%s\" is both under \"metadata\" and at the "
                     "top level",
                     name);
            return CDN_ERR_INVALID;
        }
        if (!merged && !(merged = meta ? json_copy(meta) : json_object()))
            return CDN_ERR_NOMEM;
        if (json_object_set(merged, name, v)) {
            json_decref(merged);
            return CDN_ERR_NOMEM;
        }
    }
    if (merged || meta) {
        l->meta = json_dumps(merged ? merged : meta, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(merged);
        if (!l->meta)
            return CDN_ERR_NOMEM;
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
    if (!(l->obj = json_loadb(text, len, 0, &je)) || !json_is_object(l->obj)) {
        snprintf(why, wn, "not a JSON object (column %d: %s)", je.column,
                 l->obj ? "not an object" : je.text);
        return CDN_ERR_INVALID;
    }
    fields = json_object_get(l->obj, "fields");
    if ((rc = check_keys(ci, l->obj, fields, why, wn)) != 0)
        return rc;
    l->id = json_string_value(json_object_get(l->obj, "id"));
    if (!l->id)
        l->id = json_string_value(json_object_get(l->obj, "_id"));
    if (!l->id) {
        snprintf(why, wn, "no \"id\" (or \"_id\") string");
        return CDN_ERR_INVALID;
    }
    if ((rc = parse_text(ci, l->obj, fields, l, why, wn)) != 0)
        return rc;
    if ((v = json_object_get(l->obj, "vector")) != NULL) {
        if ((rc = parse_vector(v, ci, l, why, wn)) != 0)
            return rc;
    } else {
        l->vec = (float *)row;
    }
    if ((rc = parse_meta(ci, l->obj, l, why, wn)) != 0)
        return rc;
    v = json_object_get(l->obj, "tenant");
    if (v && !json_is_string(v)) {
        snprintf(why, wn, "\"tenant\" must be a string (the tenant that owns the chunk)");
        return CDN_ERR_INVALID;
    }
    l->tenant = json_string_value(v);
    v = json_object_get(l->obj, "object");
    if (v && !json_is_string(v)) {
        snprintf(why, wn, "\"object\" must be a string, TYPE:ID or TYPE:ID#PERMISSION");
        return CDN_ERR_INVALID;
    }
    l->object = json_string_value(v);
    v = json_object_get(l->obj, "allowed");
    if (!v)
        v = json_object_get(l->obj, ci->acl_field);
    if (string_list(v, &l->allowed, &l->na) ||
        string_list(json_object_get(l->obj, "denied"), &l->denied, &l->nd) ||
        string_list(json_object_get(l->obj, "labels"), &l->labels, &l->nl)) {
        snprintf(why, wn, "\"allowed\", \"denied\" and \"labels\" must be arrays of strings");
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
    return (cordon_chunk){.id = l->id,
                          .vector = l->vec,
                          .fields = l->fields,
                          .n_fields = l->nfields,
                          .metadata_json = l->meta,
                          .allowed = l->allowed ? l->allowed : o->allow,
                          .n_allowed = l->na,
                          .denied = l->denied,
                          .n_denied = l->nd,
                          .tenant = l->tenant,
                          .labels = l->labels,
                          .n_labels = l->nl,
                          .object = l->object};
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
    size_t seen, no_acl; /* non-blank lines; of them, lines that name no principal */
    cli_progress_t prog;
} pass_t;

/* Prefixes err's message with the file and line it is about. */
static int at_line(const pass_t *p, size_t lineno, int rc, cordon_error *err)
{
    char inner[CORDON_ERROR_MAX];
    snprintf(inner, sizeof inner, "%s", err ? err->message : "");
    return fail(err, rc, "%s line %zu: %s", p->o->jsonl, lineno, inner);
}

/* A batch the first pass passed was refused: name the line whose chunk the engine now refuses
 * (the collection changed in between), or else the batch's lines (the disk or memory). */
static int batch_failed(pass_t *p, int rc, cordon_error *err)
{
    char inner[CORDON_ERROR_MAX];
    snprintf(inner, sizeof inner, "%s", err ? err->message : "");
    for (size_t i = 0; i < p->pending; i++) {
        int crc = cordon_chunk_check(p->db, p->o->collection, &p->chunks[i], err);
        if (crc)
            return at_line(p, p->lines[i].lineno, crc, err);
    }
    return fail(err, rc, "%s lines %zu to %zu (a batch of %zu, none of it written): %s",
                p->o->jsonl, p->lines[0].lineno, p->lines[p->pending - 1].lineno, p->pending,
                inner);
}

static int flush(pass_t *p, cordon_error *err)
{
    int rc = CDN_OK;
    if (p->pending &&
        (rc = cordon_put(p->db, p->o->collection, p->chunks, p->pending, NULL, err)) != 0)
        rc = batch_failed(p, rc, err);
    for (size_t i = 0; i < p->pending; i++)
        line_clear(&p->lines[i]);
    if (rc == CDN_OK)
        p->loaded += p->pending;
    p->pending = 0;
    return rc;
}

static int one_line(pass_t *p, const char *buf, size_t len, cordon_error *err)
{
    char why[400]; /* longer than a message: each part is bounded, not the whole */
    const float *row = NULL;
    line_t *l = &p->lines[p->pending];
    int rc;
    if (p->vecs) {
        if (p->lineno - 1 >= p->nvecs)
            return fail(err, CDN_ERR_INVALID, "%s line %zu: %s has only %zu vectors", p->o->jsonl,
                        p->lineno, p->o->fvecs, p->nvecs);
        row = p->vecs + (p->lineno - 1) * p->ci.dim;
    }
    memset(l, 0, sizeof *l);
    l->lineno = p->lineno;
    if ((rc = parse_line(buf, len, &p->ci, row, p->o, l, why, sizeof why)) != 0) {
        line_clear(l);
        return fail(err, rc, "%s line %zu: %s", p->o->jsonl, p->lineno, why);
    }
    if (p->ci.dim && !l->vec) {
        line_clear(l);
        return fail(err, CDN_ERR_INVALID, "%s line %zu: no \"vector\" and no --vectors file",
                    p->o->jsonl, p->lineno);
    }
    p->seen++;
    if (!p->write) {
        /* The engine's own rules, so that the writes cannot refuse a chunk halfway through. */
        cordon_chunk c = to_chunk(l, p->o);
        p->no_acl += c.n_allowed == 0;
        rc = cordon_chunk_check(p->db, p->o->collection, &c, err);
        line_clear(l);
        return rc ? at_line(p, p->lineno, rc, err) : CDN_OK;
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
    p->lineno = p->seen = 0;
    while (rc == CDN_OK && (len = getline(&buf, &cap, f)) >= 0) {
        p->lineno++;
        cli_progress_update(&p->prog, p->seen);
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
    *loaded = 0;
    if (rc)
        return rc;
    if (batch > CORDON_BATCH_MAX)
        return fail(err, CDN_ERR_LIMIT, "a batch of %zu chunks; the limit is %d", batch,
                    CORDON_BATCH_MAX);
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
    size_t total = 0;
    if (rc == CDN_OK && o->progress)
        rc = load_count_lines(o->jsonl, &total, err);
    cli_progress_start(&p.prog, "checking", "lines", total, o->progress);
    if (rc == CDN_OK)
        rc = run_pass(&p, err); /* check only */
    cli_progress_update(&p.prog, p.seen);
    cli_progress_end(&p.prog);
    if (rc == CDN_OK && p.no_acl && o->progress)
        fprintf(stderr,
                "cordon load: note: %zu of %zu lines name no principal in \"allowed\" "
                "(or \"%s\"): nobody will be able to read them (--allow P1,P2 gives "
                "them principals)\n",
                p.no_acl, p.seen, p.ci.acl_field);
    p.write = 1;
    cli_progress_start(&p.prog, "loading", "lines", p.seen, o->progress);
    if (rc == CDN_OK)
        rc = run_pass(&p, err);
    cli_progress_update(&p.prog, p.loaded);
    cli_progress_end(&p.prog);
    for (size_t i = 0; i < p.pending; i++)
        line_clear(&p.lines[i]);
    cdn_free(p.lines);
    cdn_free(p.chunks);
    cdn_free(p.vecs);
    *loaded = p.loaded;
    return rc;
}
