/* coll.c: collection configuration, loading from the store, and the row map. Relies on jansson
 * for the configuration record, acl/ for the permission index, coll_graph.c and coll_text.c for
 * the derived indexes and coll_keys.c for file names and store keys. */
#include "query/coll.h"
#include "base/fileio.h"
#include "base/mem.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int coll_name_check(const char *name, cdn_err_t *err)
{
    size_t n = strlen(name);
    if (n == 0 || n > COLL_NAME_MAX)
        return cdn_err_set(err, CDN_ERR_INVALID, "collection name must be 1 to %d bytes; got %zu",
                           COLL_NAME_MAX, n);
    if (name[0] == '_' || name[0] == '-')
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "collection name \"%s\" must not start with '_' or '-'", name);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "collection name \"%s\" may hold only lowercase letters, digits, "
                               "'_' and '-'",
                               name);
    }
    return CDN_OK;
}

int coll_config_encode(const coll_config_t *cfg, char **json)
{
    json_t *fields = json_array(), *meta = json_array(), *o;
    for (size_t i = 0; fields && i < cfg->n_text; i++)
        json_array_append_new(fields, json_string(cfg->text_fields[i]));
    for (size_t i = 0; meta && i < cfg->n_meta; i++)
        json_array_append_new(
            meta, json_pack("{s:s, s:i}", "name", cfg->meta_fields[i], "kind", cfg->meta_kinds[i]));
    o = json_pack("{s:s, s:I, s:I, s:s, s:o, s:s, s:I, s:I, s:I, s:s, s:o, s:f, s:f, s:b, s:b, "
                  "s:b}",
                  "name", cfg->name, "id", (json_int_t)cfg->id, "dim", (json_int_t)cfg->dim,
                  "metric", vec_metric_name(cfg->metric), "text_fields", fields, "acl_field",
                  cfg->acl_field, "hnsw_m", (json_int_t)cfg->hnsw_m, "hnsw_ef_construction",
                  (json_int_t)cfg->hnsw_efc, "hnsw_ef_search", (json_int_t)cfg->hnsw_ef, "analyzer",
                  cfg->analyzer, "meta_fields", meta, "bm25_k1", (double)cfg->k1, "bm25_b",
                  (double)cfg->b, "asserted_principals", cfg->asserted, "int8_scan", cfg->int8_scan,
                  "bm25_global_stats", cfg->bm25_global);
    /* Written only when set, so records of collections without one stay as they were. */
    if (o && cfg->authorizer[0] &&
        json_object_set_new(o, "authorizer", json_string(cfg->authorizer)) != 0) {
        json_decref(o);
        o = NULL;
    }
    if (o && cfg->gen && json_object_set_new(o, "file_gen", json_integer(cfg->gen)) != 0) {
        json_decref(o);
        o = NULL;
    }
    if (!o)
        return CDN_ERR_NOMEM;
    *json = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return *json ? CDN_OK : CDN_ERR_NOMEM;
}

static int copy_name(char *dst, const char *src)
{
    size_t n = strlen(src);
    if (n > COLL_NAME_MAX)
        return CDN_ERR_CORRUPT;
    memcpy(dst, src, n + 1);
    return CDN_OK;
}

int coll_config_decode(const char *json, size_t len, coll_config_t *cfg, cdn_err_t *err)
{
    json_error_t je;
    json_t *o = json_loadb(json, len, 0, &je), *fields = NULL, *meta = NULL, *x;
    const char *name, *metric, *acl, *an;
    json_int_t id, dim, m, efc, ef;
    double k1, b;
    size_t i;
    int rc = CDN_ERR_CORRUPT;
    memset(cfg, 0, sizeof *cfg);
    /* Keys added after the first release are optional, so older data directories open with
     * their defaults (standard analyzer, no metadata fields, BM25 defaults, model subjects
     * only, float scans), except that collections from before asserted principals existed
     * keep accepting them. Collections from before bm25_global_stats score over each
     * subject's readable set: the safe choice, and the same scores where a subject reads
     * everything. */
    an = "standard";
    meta = NULL;
    k1 = b = 0;
    cfg->asserted = -1;
    if (!o || json_unpack(o,
                          "{s:s, s:I, s:I, s:s, s:o, s:s, s:I, s:I, s:I, s?s, s?o, s?F, s?F, s?b, "
                          "s?b, s?b}",
                          "name", &name, "id", &id, "dim", &dim, "metric", &metric, "text_fields",
                          &fields, "acl_field", &acl, "hnsw_m", &m, "hnsw_ef_construction", &efc,
                          "hnsw_ef_search", &ef, "analyzer", &an, "meta_fields", &meta, "bm25_k1",
                          &k1, "bm25_b", &b, "asserted_principals", &cfg->asserted, "int8_scan",
                          &cfg->int8_scan, "bm25_global_stats", &cfg->bm25_global) != 0)
        goto done;
    if (cfg->asserted < 0)
        cfg->asserted = 1;
    x = json_object_get(o, "authorizer");
    if (x && (!json_is_string(x) || json_string_length(x) > COLL_AUTHORIZER_MAX))
        goto done;
    if (x)
        memcpy(cfg->authorizer, json_string_value(x), json_string_length(x) + 1);
    x = json_object_get(o, "file_gen"); /* absent before the first compaction */
    if (x && (!json_is_integer(x) || json_integer_value(x) < 0 ||
              json_integer_value(x) > (json_int_t)UINT32_MAX))
        goto done;
    cfg->gen = x ? (uint32_t)json_integer_value(x) : 0;
    if (strlen(an) >= COLL_ANALYZER_MAX || (meta && !json_is_array(meta)) ||
        json_array_size(meta) > COLL_META_FIELDS_MAX)
        goto done;
    memcpy(cfg->analyzer, an, strlen(an) + 1);
    cfg->k1 = (float)k1;
    cfg->b = (float)b;
    json_array_foreach(meta, i, x)
    {
        const char *mn = json_string_value(json_object_get(x, "name"));
        if (!mn || copy_name(cfg->meta_fields[i], mn))
            goto done;
        cfg->meta_kinds[i] = (int)json_integer_value(json_object_get(x, "kind"));
        cfg->n_meta++;
    }
    if (copy_name(cfg->name, name) || copy_name(cfg->acl_field, acl) ||
        vec_metric_parse(metric, &cfg->metric) || !json_is_array(fields) ||
        json_array_size(fields) > COLL_TEXT_FIELDS_MAX)
        goto done;
    cfg->id = (uint32_t)id;
    cfg->dim = (uint32_t)dim;
    cfg->hnsw_m = (uint32_t)m;
    cfg->hnsw_efc = (uint32_t)efc;
    cfg->hnsw_ef = (uint32_t)ef;
    for (size_t j = 0; j < json_array_size(fields); j++) {
        const char *f = json_string_value(json_array_get(fields, j));
        if (!f || copy_name(cfg->text_fields[j], f))
            goto done;
        cfg->n_text++;
    }
    rc = CDN_OK;
done:
    if (rc)
        cdn_err_set(err, rc, "collection record does not decode");
    json_decref(o);
    return rc;
}

void coll_checkpoints_remove(const char *dir, uint32_t id, uint32_t gen, int with_calibration)
{
    static const char *const ext[] = {"hnsw", "text", "q8", "efauto"};
    char path[4096];
    for (size_t i = 0; i < sizeof ext / sizeof ext[0] - !with_calibration; i++)
        if (coll_file_path(dir, id, gen, ext[i], path, sizeof path) == 0)
            unlink(path);
}

void coll_files_remove(const char *dir, const coll_config_t *cfg)
{
    char path[4096];
    if (coll_vecfile_path(dir, cfg, path, sizeof path) == 0)
        unlink(path);
    coll_checkpoints_remove(dir, cfg->id, cfg->gen, 1);
}

void coll_files_sweep(const char *dir, const coll_config_t *cfg)
{
    char path[4096];
    uint32_t gen;
    DIR *d = opendir(dir);
    struct dirent *de;
    if (!d)
        return;
    while ((de = readdir(d)) != NULL)
        if (coll_file_gen(de->d_name, cfg->id, &gen) == 0 && gen != cfg->gen &&
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name) < (int)sizeof path)
            unlink(path);
    closedir(d);
}

int coll_file_copy(const char *from, const char *to)
{
    char buf[4096];
    size_t n;
    int rc = 0;
    FILE *in = fopen(from, "rb"), *out = NULL;
    int fd = in ? open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, CDN_FILE_MODE) : -1;
    if (fd >= 0 && !(out = fdopen(fd, "wb")))
        close(fd);
    while (out && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            rc = -1;
    if (!in || !out || ferror(in))
        rc = -1;
    if (out && fclose(out) != 0)
        rc = -1;
    if (in)
        fclose(in);
    return rc;
}

int coll_create_state(const char *dir, const coll_config_t *cfg, coll_t **out, cdn_err_t *err)
{
    char path[4096];
    coll_t *c = cdn_calloc(1, sizeof *c);
    int rc;
    if (!c)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    c->cfg = *cfg;
    /* Writer-preferring: a stream of searches must not hold off a revocation. */
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&c->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    atomic_init(&c->refs, 1);
    c->id_max = COLL_ID_BYTES_MAX;
    if ((rc = acl_index_create(&c->acl)) != 0) {
        cdn_err_set(err, rc, "out of memory");
        goto fail;
    }
    if ((rc = coll_text_create(cfg, &c->text, err)) != 0)
        goto fail;
    if (cfg->dim) {
        if ((rc = coll_vecfile_path(dir, cfg, path, sizeof path)) != 0) {
            cdn_err_set(err, rc, "data directory path too long");
            goto fail;
        }
        if ((rc = vecfile_open(path, cfg->dim, &c->vf, err)) != 0)
            goto fail;
        hnsw_params_t hp = hnsw_params_default();
        hp.m = cfg->hnsw_m ? cfg->hnsw_m : hp.m;
        hp.ef_construction = cfg->hnsw_efc ? cfg->hnsw_efc : hp.ef_construction;
        hp.ef_search = cfg->hnsw_ef ? cfg->hnsw_ef : hp.ef_search;
        if ((rc = hnsw_create(hp, cfg->metric, cfg->dim, &c->hnsw)) != 0) {
            cdn_err_set(err, rc, "cannot create the vector graph: %s", cdn_strerror(rc));
            goto fail;
        }
        if (cfg->int8_scan && (rc = quant_create(cfg->dim, &c->quant, err)) != 0)
            goto fail;
    }
    *out = c;
    return CDN_OK;
fail:
    coll_unref(c);
    return rc;
}

struct load_ctx {
    coll_t *c;
    int rc;
};

static int load_row(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct load_ctx *l = ctx;
    char *id;
    if (klen != 8)
        return l->rc = CDN_ERR_CORRUPT;
    if (!(id = cdn_strndup(val, vlen)))
        return l->rc = CDN_ERR_NOMEM;
    l->rc = coll_row_set(l->c, store_rd32((const unsigned char *)key + 4), id);
    cdn_free(id);
    if (l->rc == CDN_OK)
        l->c->live++;
    return l->rc;
}

static int load_acl(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    struct load_ctx *l = ctx;
    uint32_t buf[2 + ACL_MAX_PRINCIPALS];
    if (klen != 8 || vlen < 8 || vlen % 4 || vlen > sizeof buf)
        return l->rc = CDN_ERR_CORRUPT;
    memcpy(buf, val, vlen); /* LMDB values are not aligned for uint32 */
    /* Counts in 64 bits: a damaged record with counts summing past 2^32 must not wrap into a
     * length that matches vlen. */
    if (2 + (uint64_t)buf[0] + buf[1] != vlen / 4)
        return l->rc = CDN_ERR_CORRUPT;
    return l->rc = acl_index_set(l->c->acl, store_rd32((const unsigned char *)key + 4), buf);
}

/* Reads the codes file ("q8") into c->quant when it is there and restates c's rows (a file that
 * does not is reported and ignored: the codes are re-encoded). Called at open, before
 * coll_quant_sync, which then encodes only the rows the file lacks. */
static void coll_codes_open(const char *dir, coll_t *c);

int coll_load(const char *dir, store_txn_t *t, const coll_config_t *cfg, coll_t **out,
              cdn_err_t *err)
{
    unsigned char prefix[4], nkey[12];
    const void *v;
    size_t vlen;
    struct load_ctx l = {NULL, CDN_OK};
    int rc = coll_create_state(dir, cfg, &l.c, err);
    if (rc)
        return rc;
    store_be32(prefix, cfg->id);
    memcpy(nkey, "next", 4);
    memcpy(nkey + 4, prefix, 4);
    if (store_get(t, STORE_META, nkey, 8, &v, &vlen) == CDN_OK && vlen == 4)
        l.c->next_row = store_rd32(v);
    rc = store_scan_prefix(t, STORE_ROWS, prefix, 4, load_row, &l);
    if (rc == CDN_OK)
        rc = store_scan_prefix(t, STORE_ACLS, prefix, 4, load_acl, &l);
    if (rc) {
        cdn_err_set(err, rc, "cannot load collection \"%s\": %s", cfg->name, cdn_strerror(rc));
        coll_unref(l.c);
        return rc;
    }
    acl_index_compact(l.c->acl); /* loaded row by row: give back the growth slack */
    coll_codes_open(dir, l.c);   /* the saved codes: open need not encode every float row */
    coll_quant_sync(l.c);        /* rows the file lacks: encoded now */
    if ((rc = coll_text_open(dir, t, l.c, err)) != 0 ||
        (l.c->hnsw && (rc = coll_graph_open(dir, l.c, err)) != 0)) {
        coll_unref(l.c);
        return rc;
    }
    *out = l.c;
    return CDN_OK;
}

void coll_map_rows(coll_t *c)
{
    if (!c->vf)
        return;
    if (coll_codes(c))
        vecfile_release(c->vf, c->next_row);
    else
        vecfile_prefault(c->vf, c->next_row);
}

void coll_ref(coll_t *c)
{
    atomic_fetch_add(&c->refs, 1);
}

void coll_unref(coll_t *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    cdn_free(c->row_id);
    cdn_free(c->id_bytes);
    acl_index_free(c->acl);
    hnsw_free(c->hnsw);
    coll_graph_copy_drop(c);
    quant_free(c->quant);
    textidx_free(c->text);
    vecfile_close(c->vf);
    pthread_rwlock_destroy(&c->lock);
    cdn_free(c);
}

/* Rewrites the arena with the live ids only (cleared rows' bytes are never reused in place). */
static int compact_ids(coll_t *c)
{
    size_t live = 0, len = 0;
    for (size_t r = 0; r < c->row_cap; r++)
        if (c->row_id[r])
            live += strlen(c->id_bytes + c->row_id[r] - 1) + 1;
    char *nb = cdn_malloc(live ? live : 1);
    if (!nb)
        return CDN_ERR_NOMEM;
    for (size_t r = 0; r < c->row_cap; r++) {
        if (!c->row_id[r])
            continue;
        const char *old = c->id_bytes + c->row_id[r] - 1;
        size_t n = strlen(old) + 1;
        memcpy(nb + len, old, n);
        c->row_id[r] = (uint32_t)len + 1;
        len += n;
    }
    cdn_free(c->id_bytes);
    c->id_bytes = nb;
    c->id_len = c->id_cap = len;
    return CDN_OK;
}

int coll_row_set(coll_t *c, uint32_t row, const char *id)
{
    size_t n = strlen(id) + 1, cap = c->row_cap;
    if (c->id_len + n > c->id_max) {
        if (compact_ids(c))
            return CDN_ERR_NOMEM;
        if (c->id_len + n > c->id_max)
            return CDN_ERR_LIMIT;
    }
    if (row >= c->row_cap) {
        if (cdn_grow((void **)&c->row_id, &cap, (size_t)row + 1, sizeof(uint32_t)))
            return CDN_ERR_NOMEM;
        memset(c->row_id + c->row_cap, 0, (cap - c->row_cap) * sizeof(uint32_t));
        c->row_cap = cap;
    }
    if (c->id_len + n > c->id_cap && cdn_grow((void **)&c->id_bytes, &c->id_cap, c->id_len + n, 1))
        return CDN_ERR_NOMEM;
    memcpy(c->id_bytes + c->id_len, id, n);
    c->row_id[row] = (uint32_t)c->id_len + 1;
    c->id_len += n;
    return CDN_OK;
}

void coll_row_clear(coll_t *c, uint32_t row)
{
    if (row < c->row_cap)
        c->row_id[row] = 0;
}

int coll_quant_sync(coll_t *c)
{
    vec_view_t v;
    uint32_t have;
    int rc;
    if (!c->quant || c->next_row == 0)
        return CDN_OK;
    coll_view(c, &v);
    if (!quant_is_trained(c->quant)) {
        if (c->next_row < COLL_QUANT_TRAIN_MIN)
            return CDN_OK;
        /* The first rows stand in for the distribution; rows outside it stay exact, only
         * re-ranked more often (vector/quant.h). */
        rc = quant_train(c->quant, &v, NULL, c->next_row < 100000 ? c->next_row : 100000, NULL);
        if (rc)
            return rc;
    }
    have = quant_count(c->quant);
    if (have >= c->next_row)
        return CDN_OK;
    return quant_encode_rows(c->quant, &v, have, c->next_row - have, NULL);
}

static void coll_codes_open(const char *dir, coll_t *c)
{
    char path[4096];
    vec_view_t v;
    quant_t *q = NULL;
    if (!c->quant || c->next_row == 0 ||
        coll_file_path(dir, c->cfg.id, c->cfg.gen, "q8", path, sizeof path) || access(path, F_OK))
        return;
    coll_view(c, &v);
    int rc = quant_load(path, &v, &q);
    if (rc) {
        fprintf(stderr, "cordon: codes file %s is unusable (%s); re-encoding\n", path,
                cdn_strerror(rc));
        return;
    }
    quant_free(c->quant);
    c->quant = q;
    c->quant_saved = quant_count(q);
}

int coll_codes_save(const char *dir, coll_t *c, cdn_err_t *err)
{
    char path[4096];
    int rc;
    if (!c->quant || !quant_is_trained(c->quant) || quant_count(c->quant) == c->quant_saved)
        return CDN_OK;
    uint32_t rows = quant_count(c->quant);
    if ((rc = coll_file_path(dir, c->cfg.id, c->cfg.gen, "q8", path, sizeof path)) != 0 ||
        (rc = quant_save(c->quant, path)) != 0)
        return cdn_err_set(err, rc, "cannot save the 8-bit codes of \"%s\"", c->cfg.name);
    c->quant_saved = rows;
    return CDN_OK;
}
