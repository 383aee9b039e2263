/* es_doc.c: the Elasticsearch document routes: index (PUT/POST _doc), _create, GET/HEAD,
 * DELETE, _update with doc, _mget. Reads run as the caller's subject (a hidden document is a
 * missing one); writes need the write permission. Relies on http/es_mapping and cordon.h. */
#include "base/mem.h"
#include "http/es.h"
#include "http/es_handlers.h"
#include "http/es_paths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first numeric array of 128..4096 elements in src (dense_vector by dynamic mapping, as
 * Elasticsearch maps float arrays of that size), or NULL. *path receives its path. */
static json_t *find_vector(json_t *src, const char *prefix, char *path, size_t size)
{
    const char *k;
    json_t *v;
    json_object_foreach(src, k, v)
    {
        char p[512];
        snprintf(p, sizeof p, "%s%s%s", prefix, *prefix ? "." : "", k);
        if (json_is_object(v)) {
            json_t *x = find_vector(v, p, path, size);
            if (x)
                return x;
        } else if (json_is_array(v) && json_array_size(v) >= 128 &&
                   json_array_size(v) <= CORDON_DIM_MAX && json_is_real(json_array_get(v, 0))) {
            snprintf(path, size, "%s", p);
            return v;
        }
    }
    return NULL;
}

int es_index_for_write(http_ctx_t *ctx, http_req_t *req, const char *name, json_t *first_source,
                       es_index_t *ix, http_resp_t *resp)
{
    int rc = es_index_load(ctx, name, ix);
    if (rc == CORDON_OK) {
        if (es_allowed(ctx, req, name, "write"))
            return 0;
        int seen = es_visible(ctx, req, name);
        es_index_release(ix);
        if (!seen)
            es_error_index(resp, name);
        else
            es_error(resp, 403, "security_exception",
                     "action [indices:data/write] is unauthorized for API key [%s] on index [%s]",
                     req->caller.key.id, name);
        return -1;
    }
    if (rc != CORDON_ERR_NOT_FOUND) {
        es_error(resp, 500, "exception", "cannot read index [%s]: %s", name, cordon_strerror(rc));
        return -1;
    }
    if (!es_allowed(ctx, req, name, "manage")) {
        es_error_index(resp, name);
        return -1;
    }
    /* Created by its first write, as Elasticsearch's action.auto_create_index. */
    char vpath[512];
    json_t *vec = first_source ? find_vector(first_source, "", vpath, sizeof vpath) : NULL;
    json_t *body = json_object(), *m = json_object();
    if (body && m && vec)
        es_mapping_set(m, vpath,
                       json_pack("{s:s, s:I, s:s}", "type", "dense_vector", "dims",
                                 (json_int_t)json_array_size(vec), "similarity", "cosine"));
    json_object_set_new(body, "mappings", m);
    pthread_mutex_lock(&ctx->mapping_lock);
    rc = es_index_load(ctx, name, ix); /* another request may have created it meanwhile */
    if (rc == CORDON_ERR_NOT_FOUND) {
        if (es_index_create(ctx, name, body, resp) != 0) {
            pthread_mutex_unlock(&ctx->mapping_lock);
            json_decref(body);
            return -1;
        }
        rc = es_index_load(ctx, name, ix);
    }
    pthread_mutex_unlock(&ctx->mapping_lock);
    json_decref(body);
    if (rc) {
        es_error(resp, 500, "exception", "cannot read index [%s]: %s", name, cordon_strerror(rc));
        return -1;
    }
    return 0;
}

static json_t *write_result(const es_index_t *ix, const char *id, const char *result, uint64_t rev)
{
    return json_pack("{s:s, s:s, s:i, s:s, s:{s:i, s:i, s:i}, s:I, s:i}", "_index", ix->name, "_id",
                     id, "_version", 1, "result", result, "_shards", "total", 1, "successful", 1,
                     "failed", 0, "_seq_no", (json_int_t)rev, "_primary_term", 1);
}

static int exists(http_ctx_t *ctx, const char *index, const char *id)
{
    unsigned char yes = 0;
    return cordon_exists(ctx->db, index, &id, 1, &yes, NULL) == CORDON_OK && yes;
}

/* Writes one document; fills resp with the write result or the error. */
static void put_one(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp, const char *id,
                    json_t *source, int create_only)
{
    es_index_t ix;
    es_doc_t doc;
    es_dynamic_t dyn = {0};
    const char *type = NULL;
    char why[400];
    cordon_error err = {0};
    uint64_t rev = 0;
    int had, rc;
    memset(&doc, 0, sizeof doc);
    if (es_index_for_write(ctx, req, req->seg[0], source, &ix, resp))
        return;
    snprintf(doc.id, sizeof doc.id, "%s", id);
    unsigned char failed = 0;
    char ewhy[512] = "";
    if (es_embed_sources(&ix, &source, 1, &failed, ewhy, sizeof ewhy)) {
        es_error(resp, 502, "embedding_endpoint_exception", "%s", ewhy);
        goto done;
    }
    if (es_doc_from_source(&ix, source, &dyn, &doc, &type, why, sizeof why)) {
        es_error(resp, 400, type, "%s", why);
        goto done;
    }
    had = exists(ctx, ix.name, id);
    if (create_only && had) {
        es_error(resp, 409, "version_conflict_engine_exception",
                 "[%s]: version conflict, document already exists (current version [1])", id);
        goto done;
    }
    if ((rc = cordon_chunk_check(ctx->db, ix.name, &doc.chunk, &err)) != 0 &&
        !dyn.changed) { /* with new fields the check must wait for them */
        es_error_cordon(resp, rc, &err, "mapper_parsing_exception");
        goto done;
    }
    if (dyn.changed) {
        pthread_mutex_lock(&ctx->mapping_lock);
        rc = es_dynamic_apply(ctx, &ix, &dyn, resp);
        pthread_mutex_unlock(&ctx->mapping_lock);
        if (rc)
            goto done;
    }
    if ((rc = cordon_put(ctx->db, ix.name, &doc.chunk, 1, &rev, &err)) != 0) {
        es_error_cordon(resp, rc, &err, "mapper_parsing_exception");
        goto done;
    }
    es_reply(resp, had ? 200 : 201, write_result(&ix, id, had ? "updated" : "created", rev));
done:
    json_decref(dyn.props);
    es_doc_release(&doc);
    es_index_release(&ix);
}

void es_doc_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    char gen[21];
    const char *id = req->nseg > 2 ? req->seg[2] : NULL;
    const char *op = http_arg(req, "op_type");
    json_t *body = es_body(ctx, req, resp, 1);
    if (!body)
        return;
    if (!id) {
        es_new_id(gen);
        id = gen;
    }
    put_one(ctx, req, resp, id, body, op && !strcmp(op, "create"));
    json_decref(body);
}

void es_doc_create(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    json_t *body = es_body(ctx, req, resp, 1);
    if (!body)
        return;
    put_one(ctx, req, resp, req->seg[2], body, 1);
    json_decref(body);
}

static json_t *doc_body(const es_index_t *ix, const cordon_record *r, json_t *spec)
{
    json_t *j =
        json_pack("{s:s, s:s, s:i, s:I, s:i, s:b}", "_index", ix->name, "_id", r->id, "_version", 1,
                  "_seq_no", (json_int_t)r->revision, "_primary_term", 1, "found", 1);
    json_t *shown = es_source_shown(ix, r, spec);
    es_authorizer_set(j, &r->authorizer);
    if (j && shown)
        json_object_set_new(j, "_source", shown);
    else
        json_decref(shown);
    return j;
}

static json_t *missing_doc(const char *index, const char *id)
{
    return json_pack("{s:s, s:s, s:b}", "_index", index, "_id", id, "found", 0);
}

void es_doc_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    es_index_t ix;
    cordon_subject s;
    cordon_record *r = NULL;
    cordon_error err = {0};
    int rc;
    if (es_subject(req, resp, &s) || es_index_open(ctx, req, resp, &ix))
        return;
    rc = cordon_get(ctx->db, ix.name, &s, req->seg[2], &r, &err);
    if (rc == CORDON_OK) {
        json_t *spec = es_source_arg(req);
        es_reply(resp, 200, doc_body(&ix, r, spec));
        es_audit_header(ctx, r->audit_seq, resp);
        json_decref(spec);
    } else if (rc == CORDON_ERR_NOT_FOUND || rc == CORDON_ERR_INVALID) {
        es_reply(resp, 404, missing_doc(ix.name, req->seg[2])); /* hidden equals missing */
    } else {
        es_error_cordon(resp, rc, &err, NULL);
    }
    cordon_record_free(r);
    es_index_release(&ix);
}

void es_doc_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    es_index_t ix;
    cordon_error err = {0};
    const char *id = req->seg[2];
    size_t deleted = 0;
    uint64_t rev = 0;
    int rc;
    if (es_index_open(ctx, req, resp, &ix))
        return;
    if (!es_allowed(ctx, req, ix.name, "write"))
        es_error(resp, 403, "security_exception",
                 "action [indices:data/write/delete] is unauthorized for API key [%s] on index "
                 "[%s]",
                 req->caller.key.id, ix.name);
    else if ((rc = cordon_delete(ctx->db, ix.name, &id, 1, &deleted, &rev, &err)) != 0)
        es_error_cordon(resp, rc, &err, NULL);
    else
        es_reply(resp, deleted ? 200 : 404,
                 write_result(&ix, id, deleted ? "deleted" : "not_found", rev));
    es_index_release(&ix);
}

/* Merges patch into doc, objects recursively, as Elasticsearch's partial update. */
static void merge_into(json_t *doc, json_t *patch)
{
    const char *k;
    json_t *v;
    json_object_foreach(patch, k, v)
    {
        json_t *have = json_object_get(doc, k);
        if (json_is_object(have) && json_is_object(v))
            merge_into(have, v);
        else
            json_object_set(doc, k, v);
    }
}

void es_doc_update(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    es_index_t ix;
    cordon_record *r = NULL;
    json_t *body = es_body(ctx, req, resp, 1), *doc, *src;
    if (!body)
        return;
    doc = json_object_get(body, "doc");
    if (!json_is_object(doc)) {
        es_error(resp, 400, "action_request_validation_exception",
                 "Validation Failed: 1: script or doc is missing (cordon runs no scripts);");
        json_decref(body);
        return;
    }
    if (es_index_for_write(ctx, req, req->seg[0], doc, &ix, resp)) {
        json_decref(body);
        return;
    }
    /* A caller that reads as someone (its subject, run-as, asserted principals) merges only
     * into what it may read: a hidden document is as missing here as to get. */
    cordon_subject s;
    int rc;
    if (req->caller.subject[0] || req->caller.n_principals) {
        es_subject(req, resp, &s);
        rc = cordon_get(ctx->db, ix.name, &s, req->seg[2], &r, NULL);
    } else {
        rc = cordon_read_stored(ctx->db, ix.name, req->seg[2], &r, NULL);
    }
    if (rc == CORDON_OK) {
        src = es_source_of(&ix, r);
        merge_into(src, doc);
    } else if (json_is_true(json_object_get(body, "doc_as_upsert"))) {
        src = json_deep_copy(doc);
    } else if (json_is_object(json_object_get(body, "upsert"))) {
        src = json_deep_copy(json_object_get(body, "upsert"));
    } else {
        es_error(resp, 404, "document_missing_exception", "[%s]: document missing", req->seg[2]);
        goto done;
    }
    es_index_release(&ix);
    put_one(ctx, req, resp, req->seg[2], src, 0);
    json_decref(src);
    cordon_record_free(r);
    json_decref(body);
    return;
done:
    cordon_record_free(r);
    es_index_release(&ix);
    json_decref(body);
}

void es_mget(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    cordon_subject s;
    json_t *body, *docs, *ids, *out, *x, *spec = es_source_arg(req);
    const char *path_index = req->nseg > 1 ? req->seg[0] : NULL;
    size_t i;
    if (es_subject(req, resp, &s) || !(body = es_body(ctx, req, resp, 1))) {
        json_decref(spec);
        return;
    }
    docs = json_object_get(body, "docs");
    ids = json_object_get(body, "ids");
    if (!json_is_array(docs) && !(json_is_array(ids) && path_index)) {
        es_error(resp, 400, "action_request_validation_exception",
                 "Validation Failed: 1: no documents to get;");
        goto done;
    }
    out = json_array();
    json_t *list = json_is_array(docs) ? docs : ids;
    json_array_foreach(list, i, x)
    {
        const char *index = json_string_value(json_object_get(x, "_index"));
        const char *id =
            json_is_string(x) ? json_string_value(x) : json_string_value(json_object_get(x, "_id"));
        es_index_t ix;
        cordon_record *r = NULL;
        if (!index)
            index = path_index;
        if (!index || !id) {
            json_decref(out);
            es_error(resp, 400, "action_request_validation_exception",
                     "Validation Failed: 1: %s is missing for doc %zu;", index ? "id" : "index", i);
            goto done;
        }
        if (es_index_load(ctx, index, &ix) != 0 || !es_visible(ctx, req, index)) {
            if (ix.attrs)
                es_index_release(&ix);
            json_array_append_new(out, missing_doc(index, id));
            continue;
        }
        if (cordon_get(ctx->db, index, &s, id, &r, NULL) == CORDON_OK) {
            json_t *dspec = json_object_get(x, "_source") ? json_object_get(x, "_source") : spec;
            json_array_append_new(out, doc_body(&ix, r, dspec));
        } else {
            json_array_append_new(out, missing_doc(index, id));
        }
        cordon_record_free(r);
        es_index_release(&ix);
    }
    es_reply(resp, 200, json_pack("{s:o}", "docs", out));
done:
    json_decref(spec);
    json_decref(body);
}
