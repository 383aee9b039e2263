/* coll_text.c: keeping a collection's text index in step with its rows: creation from the
 * configuration, indexing a row's text fields and metadata, checkpoint load and catch-up at
 * open, checkpoint save at close. Relies on text/textidx; like the graph, the checkpoint's
 * revision slot records the row count it reflects. */
#include "base/mem.h"
#include "query/chunkrec.h"
#include "query/coll.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Values one row may give the text index: text fields twice (own field and "_all") plus
 * metadata values (arrays count each element). */
#define TEXT_VALUES_MAX (2 * COLL_TEXT_FIELDS_MAX + 256)

int coll_text_create(const coll_config_t *cfg, textidx_t **out, cdn_err_t *err)
{
    textidx_config_t tc = textidx_config_default();
    const char *an = cfg->analyzer[0] ? cfg->analyzer : "standard";
    textidx_t *t;
    int rc;
    if (cfg->k1 > 0)
        tc.k1 = cfg->k1;
    if (cfg->b > 0)
        tc.b = cfg->b < 1e-6f ? 0 : cfg->b;
    if ((rc = textidx_create(&tc, &t, err)) != 0)
        return rc;
    for (size_t i = 0; i < cfg->n_text && rc == CDN_OK; i++)
        rc = textidx_add_field(t, cfg->text_fields[i], TEXTIDX_TEXT, an, err);
    if (rc == CDN_OK)
        rc = textidx_add_field(t, "_all", TEXTIDX_TEXT, an, err);
    for (size_t i = 0; i < cfg->n_meta && rc == CDN_OK; i++)
        rc = textidx_add_field(t, cfg->meta_fields[i], (textidx_kind_t)cfg->meta_kinds[i], NULL,
                               err);
    if (rc) {
        textidx_free(t);
        return rc;
    }
    *out = t;
    return CDN_OK;
}

/* Adds one JSON metadata value (or each element of an array) as values of field f. */
static size_t meta_values(const char *f, int kind, json_t *v, textidx_value_t *out, size_t room)
{
    size_t n = 0, i;
    json_t *x;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x) n += meta_values(f, kind, x, out + n, room - n);
        return n;
    }
    if (room == 0)
        return 0;
    out[0] = (textidx_value_t){.field = f};
    if (json_is_string(v)) {
        out[0].text = json_string_value(v);
        out[0].len = json_string_length(v);
    } else if (json_is_boolean(v)) {
        out[0].text = json_is_true(v) ? "true" : "false";
        out[0].len = strlen(out[0].text);
    } else if (json_is_number(v)) {
        out[0].num = json_number_value(v);
    } else {
        return 0; /* null or object: nothing to index */
    }
    (void)kind;
    return 1;
}

/* The value of metadata field name: the key itself, or else a dotted path into nested objects
 * ("metadata.source" finds {"metadata": {"source": ...}}), as Elasticsearch flattens objects. */
static json_t *meta_lookup(json_t *meta, const char *name)
{
    json_t *x = json_object_get(meta, name);
    const char *dot;
    if (x || !(dot = strchr(name, '.')))
        return x;
    for (; dot; dot = strchr(dot + 1, '.')) {
        json_t *head = json_object_getn(meta, name, (size_t)(dot - name));
        if (json_is_object(head) && (x = meta_lookup(head, dot + 1)) != NULL)
            return x;
    }
    return NULL;
}

int coll_text_add(coll_t *c, uint32_t row, const char *const *names, const char *const *values,
                  size_t n, const char *metadata_json, cdn_err_t *err)
{
    textidx_value_t v[TEXT_VALUES_MAX];
    size_t nv = 0;
    json_t *meta = metadata_json ? json_loads(metadata_json, 0, NULL) : NULL;
    int rc;
    for (size_t i = 0; i < n; i++) {
        v[nv++] = (textidx_value_t){.field = names[i], .text = values[i], .len = strlen(values[i])};
        v[nv++] = (textidx_value_t){.field = "_all", .text = values[i], .len = strlen(values[i])};
    }
    size_t ntext = nv;
    for (size_t i = 0; meta && i < c->cfg.n_meta; i++) {
        json_t *x = meta_lookup(meta, c->cfg.meta_fields[i]);
        if (x)
            nv += meta_values(c->cfg.meta_fields[i], c->cfg.meta_kinds[i], x, v + nv,
                              TEXT_VALUES_MAX - nv);
    }
    rc = textidx_add_doc(c->text, row, v, nv, err);
    if (rc == CDN_ERR_INVALID && nv > ntext) /* a metadata value of the wrong kind: keep text */
        rc = textidx_add_doc(c->text, row, v, ntext, err);
    json_decref(meta);
    c->text_dirty = 1;
    return rc;
}

struct catch_ctx {
    coll_t *c;
    store_txn_t *t;
    uint32_t from;
    int rc;
    cdn_err_t *err;
};

/* One STORE_ROWS record at or past the checkpoint: index the chunk it names. */
static int index_row(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct catch_ctx *k = ctx;
    unsigned char ck[COLL_KEY_MAX];
    const char *names[COLL_TEXT_FIELDS_MAX], *values[COLL_TEXT_FIELDS_MAX];
    uint32_t row = store_rd32((const unsigned char *)key + 4), rrow;
    const void *rec;
    size_t rlen, n = 0;
    json_t *obj, *fields, *x;
    const char *fname;
    char *meta;
    if (klen != 8 || row < k->from || vlen > COLL_ID_MAX)
        return CDN_OK;
    memcpy(ck, key, 4);
    memcpy(ck + 4, val, vlen);
    if (store_get(k->t, STORE_CHUNKS, ck, 4 + vlen, &rec, &rlen) != CDN_OK ||
        chunkrec_decode(rec, rlen, &rrow, &obj) != CDN_OK)
        return k->rc = CDN_ERR_CORRUPT;
    fields = json_object_get(obj, "fields");
    json_object_foreach(fields, fname, x)
    {
        if (json_is_string(x) && n < COLL_TEXT_FIELDS_MAX) {
            names[n] = fname;
            values[n++] = json_string_value(x);
        }
    }
    meta = json_dumps(json_object_get(obj, "metadata"), JSON_COMPACT);
    k->rc = coll_text_add(k->c, row, names, values, n, meta, k->err);
    free(meta);
    json_decref(obj);
    return k->rc;
}

static bool text_delete_one(uint32_t row, void *t)
{
    textidx_delete_doc(t, row);
    return true;
}

/* 1 when index t maps the fields cfg declares, each with its kind. A checkpoint saved before
 * cordon_collection_alter added a metadata field does not (a process killed between the
 * alter's commit and its removal of the checkpoint leaves one): its rows lack the field. */
static int text_fields_match(const textidx_t *t, const coll_config_t *cfg)
{
    size_t fno;
    if (t->ntf != cfg->n_text + 1 || t->fi.n != cfg->n_meta || !textidx_text_field(t, "_all"))
        return 0;
    for (size_t i = 0; i < cfg->n_text; i++)
        if (!textidx_text_field(t, cfg->text_fields[i]))
            return 0;
    for (size_t i = 0; i < cfg->n_meta; i++)
        if (fieldidx_find(&t->fi, cfg->meta_fields[i], &fno) != CDN_OK ||
            (int)t->fi.f[fno].kind != cfg->meta_kinds[i])
            return 0;
    return 1;
}

int coll_text_open(const char *dir, store_txn_t *t, coll_t *c, cdn_err_t *err)
{
    char path[4096];
    unsigned char start[8];
    textidx_t *loaded = NULL;
    uint64_t rows = 0;
    struct catch_ctx k = {c, t, 0, CDN_OK, err};
    int rc;
    if ((rc = coll_file_path(dir, c->cfg.id, c->cfg.gen, "text", path, sizeof path)) != 0)
        return cdn_err_set(err, rc, "data directory path too long");
    if (access(path, F_OK) == 0) {
        rc = textidx_load(path, &loaded, &rows, NULL);
        if (rc == CDN_OK && rows <= c->next_row && text_fields_match(loaded, &c->cfg)) {
            textidx_free(c->text);
            c->text = loaded;
        } else {
            fprintf(stderr, "cordon: text checkpoint %s is unusable (%s); rebuilding\n", path,
                    rc                   ? cdn_strerror(rc)
                    : rows > c->next_row ? "ahead of the store"
                                         : "its fields are not the collection's");
            textidx_free(loaded);
            rows = 0;
        }
    }
    k.from = (uint32_t)rows;
    coll_row_key(c->cfg.id, k.from, start);
    /* Rows sort by (collection, row): scan the collection's prefix, skip those below. */
    rc = store_scan_prefix(t, STORE_ROWS, start, 4, index_row, &k);
    if (rc)
        return cdn_err_set(err, rc, "cannot rebuild the text index of \"%s\": %s", c->cfg.name,
                           cdn_strerror(rc));
    if (rows) {
        roaring_bitmap_t *dead = roaring_bitmap_from_range(0, rows, 1);
        if (!dead)
            return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
        roaring_bitmap_andnot_inplace(dead, acl_index_live(c->acl));
        roaring_iterate(dead, text_delete_one, c->text);
        roaring_bitmap_free(dead);
    }
    c->text_dirty = rows != c->next_row;
    return CDN_OK;
}

int coll_text_save(const char *dir, coll_t *c, cdn_err_t *err)
{
    char path[4096];
    int rc;
    if (!c->text_dirty)
        return CDN_OK;
    if ((rc = coll_file_path(dir, c->cfg.id, c->cfg.gen, "text", path, sizeof path)) != 0 ||
        (rc = textidx_save(c->text, path, c->next_row, err)) != 0)
        return cdn_err_set(err, rc, "cannot save the text index of \"%s\"", c->cfg.name);
    c->text_dirty = 0;
    return CDN_OK;
}
