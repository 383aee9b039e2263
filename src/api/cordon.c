/* cordon.c: the public C API (include/cordon.h) as a thin facade over query/.
 * Relies on query/engine, query/write and query/search; converts types and copies results
 * into caller-owned memory. */
#include "api/api.h"
#include "base/err.h"
#include "base/mem.h"
#include "query/compact.h"
#include "query/search.h"
#include "query/write.h"
#include "vector/hnsw.h"

#include <jansson.h>
#include <string.h>

_Static_assert((int)CORDON_ERR_INTERNAL == (int)CDN_ERR_INTERNAL &&
                   (int)CORDON_ERR_UNAVAILABLE == (int)CDN_ERR_UNAVAILABLE,
               "status codes must match base/err.h");
_Static_assert((int)CORDON_NAME_MAX == COLL_NAME_MAX, "name limits must match");
_Static_assert(CORDON_ID_MAX == WRITE_ID_MAX, "id limits must match");
_Static_assert(CORDON_K_MAX == SEARCH_K_MAX, "k limits must match");
_Static_assert((int)CORDON_META_KEYWORD == (int)TEXTIDX_KEYWORD &&
                   (int)CORDON_META_BOOL == (int)TEXTIDX_BOOL,
               "metadata kinds must match textidx kinds");
_Static_assert(CORDON_BATCH_MAX == WRITE_BATCH_MAX, "batch limits must match");
_Static_assert(CORDON_META_FIELDS_MAX == COLL_META_FIELDS_MAX, "metadata field limits must match");

#define NEED(cond, msg)                                                                            \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "%s", msg), &e, err);                  \
    } while (0)

const char *cordon_strerror(int code)
{
    return cdn_strerror(code);
}

int cordon_open(const char *dir, const cordon_options *opts, cordon_t **out, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    cordon_t *db;
    int rc;
    NEED(dir && out, "cordon_open needs a directory and an out pointer");
    if (!(db = cdn_calloc(1, sizeof *db)))
        return api_ret(cdn_err_set(&e, CDN_ERR_NOMEM, "out of memory"), &e, err);
    rc = engine_open(dir, opts ? opts->map_size : 0, opts && opts->must_exist, &db->e, &e);
    if (rc) {
        cdn_free(db);
        return api_ret(rc, &e, err);
    }
    if ((rc = api_audit_open(db, dir, opts, &e)) != 0 ||
        (rc = asof_open(db->e, &db->asof, &e)) != 0) {
        audit_close(db->audit);
        engine_close(db->e);
        cdn_free(db);
        return api_ret(rc, &e, err);
    }
    if ((rc = pdp_open(opts ? opts->authorizers_json : NULL, &db->pdp, &e)) != 0) {
        asof_close(db->asof);
        audit_close(db->audit);
        engine_close(db->e);
        cdn_free(db);
        return api_ret(rc, &e, err);
    }
    db->e->plan_exact_floats = opts ? opts->plan_exact_floats : 0;
    db->e->report_work = opts ? opts->report_work != 0 : 0;
    *out = db;
    return api_ret(CDN_OK, &e, err);
}

void cordon_close(cordon_t *db)
{
    if (!db)
        return;
    audit_close(db->audit); /* writes what is queued */
    asof_close(db->asof);
    engine_close(db->e);
    pdp_close(db->pdp);
    cdn_free(db);
}

uint64_t cordon_revision(cordon_t *db)
{
    return atomic_load(&db->e->revision);
}

int cordon_check(cordon_t *db, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    NEED(db, "cordon_check needs a handle");
    return api_ret(engine_check(db->e, &e), &e, err);
}

/* attrs: NULL, or a JSON object of at most CORDON_ATTRS_MAX bytes. */
static int attrs_check(const char *attrs, cdn_err_t *e)
{
    json_t *j;
    if (!attrs)
        return CDN_OK;
    if (strlen(attrs) > CORDON_ATTRS_MAX)
        return cdn_err_set(e, CDN_ERR_LIMIT, "attrs_json is %zu bytes; the limit is %d",
                           strlen(attrs), CORDON_ATTRS_MAX);
    j = json_loads(attrs, JSON_REJECT_DUPLICATES, NULL);
    int ok = json_is_object(j);
    json_decref(j);
    return ok ? CDN_OK : cdn_err_set(e, CDN_ERR_INVALID, "attrs_json must be a JSON object");
}

int cordon_collection_create(cordon_t *db, const cordon_collection_spec *s, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    coll_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    NEED(db && s && s->name, "cordon_collection_create needs a spec with a name");
    NEED(strlen(s->name) <= COLL_NAME_MAX, "collection name is longer than 128 bytes");
    NEED(s->dim <= CORDON_DIM_MAX, "dim is above the limit of 4096");
    NEED((unsigned)s->metric <= CORDON_METRIC_L2, "metric must be cosine, dot or l2");
    NEED(s->n_text_fields <= CORDON_TEXT_FIELDS_MAX, "more than 16 text fields");
    NEED(!s->n_text_fields || s->text_fields, "text_fields is NULL");
    memcpy(cfg.name, s->name, strlen(s->name) + 1);
    cfg.dim = s->dim;
    cfg.metric = (vec_metric_t)s->metric;
    for (size_t i = 0; i < s->n_text_fields; i++) {
        const char *f = s->text_fields[i];
        NEED(f && *f && strlen(f) <= COLL_NAME_MAX, "a text field name is empty or too long");
        for (size_t j = 0; j < i; j++)
            NEED(strcmp(f, cfg.text_fields[j]), "a text field is named twice");
        memcpy(cfg.text_fields[i], f, strlen(f) + 1);
    }
    cfg.n_text = s->n_text_fields;
    const char *acl = s->acl_field ? s->acl_field : "allowed_groups";
    NEED(*acl && strlen(acl) <= COLL_NAME_MAX, "acl_field is empty or too long");
    memcpy(cfg.acl_field, acl, strlen(acl) + 1);
    hnsw_params_t dflt = hnsw_params_default();
    cfg.hnsw_m = s->hnsw_m ? s->hnsw_m : dflt.m;
    cfg.hnsw_efc = s->hnsw_ef_construction ? s->hnsw_ef_construction : dflt.ef_construction;
    cfg.hnsw_ef = s->hnsw_ef_search; /* 0: calibrated from measured recall (graph.c) */
    NEED(cfg.hnsw_m >= 2 && cfg.hnsw_m <= 128, "hnsw_m must be 2 to 128");
    NEED(!s->analyzer || strlen(s->analyzer) < COLL_ANALYZER_MAX, "analyzer name too long");
    memcpy(cfg.analyzer, s->analyzer ? s->analyzer : "standard",
           strlen(s->analyzer ? s->analyzer : "standard") + 1);
    NEED(s->n_meta_fields <= CORDON_META_FIELDS_MAX, "more than 32 metadata fields");
    NEED(!s->n_meta_fields || s->meta_fields, "meta_fields is NULL");
    for (size_t i = 0; i < s->n_meta_fields; i++) {
        const cordon_meta_field *m = &s->meta_fields[i];
        NEED(m->name && *m->name && strlen(m->name) <= COLL_NAME_MAX && m->name[0] != '_',
             "a metadata field name is empty, too long or starts with '_'");
        NEED(m->kind >= CORDON_META_KEYWORD && m->kind <= CORDON_META_BOOL,
             "metadata field kind must be keyword, number, date or bool");
        for (size_t j = 0; j < cfg.n_text; j++)
            NEED(strcmp(m->name, cfg.text_fields[j]), "a metadata field has a text field's name");
        memcpy(cfg.meta_fields[i], m->name, strlen(m->name) + 1);
        cfg.meta_kinds[i] = (int)m->kind; /* cordon_meta_kind values equal textidx_kind_t */
    }
    cfg.n_meta = s->n_meta_fields;
    NEED(s->bm25_k1 >= 0 && s->bm25_b >= 0 && s->bm25_b <= 1, "bm25_k1 must be >= 0 and bm25_b "
                                                              "between 0 and 1");
    cfg.asserted = s->asserted_principals != 0;
    NEED(s->int8_scan >= -1 && s->int8_scan <= 1, "int8_scan must be 0 (automatic), 1 or -1");
    cfg.int8_scan =
        s->dim > 0 && (s->int8_scan > 0 || (s->int8_scan == 0 && s->dim >= CORDON_CODES_MIN_DIM));
    cfg.bm25_global = s->bm25_global_stats != 0;
    if (s->authorizer) {
        size_t n = strlen(s->authorizer);
        NEED(n >= 1 && n <= COLL_AUTHORIZER_MAX &&
                 strspn(s->authorizer, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n,
             "authorizer must name a configured authorizer: 1 to 63 of [a-z0-9_-]");
        NEED(api_pdp_has(db, s->authorizer),
             "authorizer names no authorizer configured on this handle (cordon_options."
             "authorizers)");
        memcpy(cfg.authorizer, s->authorizer, n + 1);
    }
    cfg.k1 = s->bm25_k1;
    cfg.b = s->bm25_b;
    NEED(cfg.hnsw_efc <= 4096 && cfg.hnsw_ef <= 4096, "hnsw ef values must be at most 4096");
    int rc = attrs_check(s->attrs_json, &e);
    if (rc == CDN_OK)
        rc = engine_coll_create(db->e, &cfg, s->attrs_json, &e);
    return api_ret(rc, &e, err);
}

int cordon_collection_alter(cordon_t *db, const char *name, const cordon_collection_change *ch,
                            cordon_error *err)
{
    cdn_err_t e = {0, ""};
    const char *names[CORDON_META_FIELDS_MAX];
    int kinds[CORDON_META_FIELDS_MAX], rc;
    coll_t *c;
    NEED(db && name && ch, "cordon_collection_alter needs a name and a change");
    NEED(ch->n_add_meta_fields <= CORDON_META_FIELDS_MAX, "more than 32 metadata fields");
    NEED(!ch->n_add_meta_fields || ch->add_meta_fields, "add_meta_fields is NULL");
    if ((rc = attrs_check(ch->attrs_json, &e)) != 0)
        return api_ret(rc, &e, err);
    if ((rc = engine_coll_get(db->e, name, &c, &e)) != 0)
        return api_ret(rc, &e, err);
    for (size_t i = 0; i < ch->n_add_meta_fields; i++) {
        const cordon_meta_field *m = &ch->add_meta_fields[i];
        int text = 0;
        for (size_t j = 0; m->name && j < c->cfg.n_text; j++)
            text |= !strcmp(m->name, c->cfg.text_fields[j]);
        if (!m->name || text || m->kind < CORDON_META_KEYWORD || m->kind > CORDON_META_BOOL) {
            coll_unref(c);
            return api_ret(cdn_err_set(&e, CDN_ERR_INVALID,
                                       "metadata field %zu: give a name that is not a text "
                                       "field's and a kind (keyword, number, date or bool)",
                                       i),
                           &e, err);
        }
        names[i] = m->name;
        kinds[i] = (int)m->kind;
    }
    coll_unref(c);
    NEED(ch->n_add_text_fields <= CORDON_TEXT_FIELDS_MAX &&
             (!ch->n_add_text_fields || ch->add_text_fields),
         "add_text_fields is NULL or longer than 16");
    rc = engine_coll_update(db->e, name, ch->attrs_json, ch->add_text_fields, ch->n_add_text_fields,
                            names, kinds, ch->n_add_meta_fields, &e);
    return api_ret(rc, &e, err);
}

int cordon_collection_attrs(cordon_t *db, const char *name, char **json, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    NEED(db && name && json, "cordon_collection_attrs needs a name and an out pointer");
    return api_ret(engine_coll_attrs(db->e, name, json, &e), &e, err);
}

int cordon_collection_drop(cordon_t *db, const char *name, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    NEED(db && name, "cordon_collection_drop needs a name");
    return api_ret(engine_coll_drop(db->e, name, &e), &e, err);
}

int cordon_collection_compact(cordon_t *db, const char *name, cordon_compact_stats *stats,
                              cordon_error *err)
{
    cdn_err_t e = {0, ""};
    engine_compact_stats_t st;
    NEED(db && name, "cordon_collection_compact needs a name");
    int rc = engine_coll_compact(db->e, name, &st, &e);
    if (stats)
        *stats = (cordon_compact_stats){st.rows_before, st.rows_after,      st.compacted,     st.ms,
                                        st.locked_ms,   st.db_bytes_before, st.db_bytes_after};
    return api_ret(rc, &e, err);
}

static void fill_info(const coll_t *c, cordon_collection_info *o)
{
    memset(o, 0, sizeof *o);
    memcpy(o->name, c->cfg.name, sizeof o->name);
    o->dim = c->cfg.dim;
    o->metric = (cordon_metric)c->cfg.metric;
    o->chunks = c->live;
    o->n_text_fields = c->cfg.n_text;
    memcpy(o->text_fields, c->cfg.text_fields, sizeof o->text_fields);
    memcpy(o->acl_field, c->cfg.acl_field, sizeof o->acl_field);
    o->n_meta_fields = c->cfg.n_meta;
    for (size_t i = 0; i < c->cfg.n_meta; i++) {
        memcpy(o->meta_fields[i].name, c->cfg.meta_fields[i], sizeof o->meta_fields[i].name);
        o->meta_fields[i].kind = (cordon_meta_kind)c->cfg.meta_kinds[i];
    }
    _Static_assert(sizeof o->analyzer == COLL_ANALYZER_MAX, "analyzer name sizes must match");
    memcpy(o->analyzer, c->cfg.analyzer, sizeof o->analyzer);
    o->asserted_principals = c->cfg.asserted;
    o->int8_scan = c->cfg.int8_scan;
    o->bm25_global_stats = c->cfg.bm25_global;
    _Static_assert(sizeof o->authorizer == COLL_AUTHORIZER_MAX + 1, "authorizer sizes must match");
    memcpy(o->authorizer, c->cfg.authorizer, sizeof o->authorizer);
    o->hnsw_m = c->cfg.hnsw_m;
    o->hnsw_ef_construction = c->cfg.hnsw_efc;
    o->hnsw_ef_search = c->cfg.hnsw_ef;
    o->rows = c->next_row;
    if (c->vf)
        o->vector_bytes = (uint64_t)c->next_row * vecfile_stride(c->vf) * sizeof(float);
    if (c->hnsw) {
        hnsw_info_t hi;
        hnsw_get_info(c->hnsw, &hi);
        o->graph_bytes = hi.memory_bytes;
        o->hnsw_ef_calibrated = coll_search_ef(c, COLL_EF_UNFILTERED);
        o->calibrated_rows = c->ef_auto_rows;
    }
    if (c->quant)
        o->codes_bytes = quant_memory(c->quant);
    o->acl_bytes = acl_index_memory(c->acl);
}

int cordon_collection_list(cordon_t *db, cordon_collection_info **out, size_t *n, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    engine_t *en;
    NEED(db && out && n, "cordon_collection_list needs out pointers");
    en = db->e;
    /* References under the registry lock, then each collection's lock on its own: a request
     * takes a collection's lock before meta_lock, so the two are never held the other way. */
    pthread_rwlock_rdlock(&en->meta_lock);
    size_t m = en->ncolls;
    coll_t **cs = cdn_calloc(m ? m : 1, sizeof *cs);
    for (size_t i = 0; cs && i < m; i++)
        coll_ref(cs[i] = en->colls[i]);
    pthread_rwlock_unlock(&en->meta_lock);
    *out = cs ? cdn_calloc(m ? m : 1, sizeof **out) : NULL;
    for (size_t i = 0; cs && i < m; i++) {
        if (*out) {
            pthread_rwlock_rdlock(&cs[i]->lock);
            fill_info(cs[i], &(*out)[i]);
            pthread_rwlock_unlock(&cs[i]->lock);
        }
        coll_unref(cs[i]);
    }
    cdn_free(cs);
    *n = *out ? m : 0;
    if (!*out)
        return api_ret(cdn_err_set(&e, CDN_ERR_NOMEM, "out of memory"), &e, err);
    return api_ret(CDN_OK, &e, err);
}

int cordon_collection_info_get(cordon_t *db, const char *name, cordon_collection_info *out,
                               cordon_error *err)
{
    cdn_err_t e = {0, ""};
    coll_t *c;
    int rc;
    NEED(db && name && out, "cordon_collection_info_get needs a name and an out pointer");
    if ((rc = engine_coll_get(db->e, name, &c, &e)) != 0)
        return api_ret(rc, &e, err);
    pthread_rwlock_rdlock(&c->lock);
    fill_info(c, out);
    pthread_rwlock_unlock(&c->lock);
    coll_unref(c);
    return api_ret(CDN_OK, &e, err);
}

void cordon_free(void *p)
{
    cdn_free(p);
}
