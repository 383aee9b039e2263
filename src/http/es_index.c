/* es_index.c: the Elasticsearch API's cluster and index routes: GET /, cluster health, index
 * create/get/exists/delete, mappings, refresh, _cat/indices, and the server's own health.
 * An index a caller may not search reads as missing. Relies on http/es_mapping and cordon.h. */
#include "base/mem.h"
#include "http/es.h"
#include "http/es_handlers.h"
#include "http/es_mapping.h"
#include "http/es_paths.h"

#include <stdio.h>
#include <string.h>

void es_root(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    (void)ctx;
    (void)req;
    es_reply(resp, 200,
             json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:b, s:s, s:s, s:s}, s:s}",
                       "name", "cordon", "cluster_name", "cordon", "cluster_uuid",
                       "cordon-single-node", "version", "number", ES_VERSION, "build_flavor",
                       "default", "build_type", "cordon", "build_hash", "cordon", "build_date",
                       "2026-12-01T00:00:00.000Z", "build_snapshot", 0, "lucene_version", "9.12.0",
                       "minimum_wire_compatibility_version", "7.17.0",
                       "minimum_index_compatibility_version", "7.0.0", "tagline",
                       "You Know, for Search"));
}

/* 1 when the caller may see index at all: it may search it, or it administers the server. */
int es_visible(http_ctx_t *ctx, const http_req_t *req, const char *index)
{
    cordon_collection_info info;
    if (req->caller.key.admin && !req->caller.run_as)
        return 1;
    if (!req->caller.subject[0] && req->caller.n_principals) /* asserted principals */
        return cordon_collection_info_get(ctx->db, index, &info, NULL) == CORDON_OK &&
               info.asserted_principals;
    return es_allowed(ctx, req, index, "search");
}

void es_cluster_health(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    cordon_collection_info *list = NULL;
    size_t n = 0, shown = 0;
    cordon_collection_list(ctx->db, &list, &n, NULL);
    for (size_t i = 0; i < n; i++)
        shown += es_visible(ctx, req, list[i].name);
    cordon_free(list);
    es_reply(resp, 200,
             json_pack("{s:s, s:s, s:b, s:i, s:i, s:I, s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:i, "
                       "s:f}",
                       "cluster_name", "cordon", "status",
                       cordon_check(ctx->db, NULL) == CORDON_OK ? "green" : "red", "timed_out", 0,
                       "number_of_nodes", 1, "number_of_data_nodes", 1, "active_primary_shards",
                       (json_int_t)shown, "active_shards", (json_int_t)shown, "relocating_shards",
                       0, "initializing_shards", 0, "unassigned_shards", 0,
                       "delayed_unassigned_shards", 0, "number_of_pending_tasks", 0,
                       "number_of_in_flight_fetch", 0, "task_max_waiting_in_queue_millis", 0,
                       "active_shards_percent_as_number", 100.0));
}

/* 1 when name is one of the comma-separated names or patterns of list ("docs,logs-*"). */
static int listed(const char *list, const char *name)
{
    char one[CORDON_NAME_MAX + 2];
    while (*list) {
        const char *comma = strchr(list, ',');
        size_t n = comma ? (size_t)(comma - list) : strlen(list);
        if (n < sizeof one) {
            memcpy(one, list, n);
            one[n] = '\0';
            if (!strcmp(one, "_all") || es_glob(one, name))
                return 1;
        }
        list += n + (comma != NULL);
    }
    return 0;
}

void es_cat_indices(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    cordon_collection_info *list = NULL;
    const char *only = req->nseg > 2 ? req->seg[2] : NULL; /* GET /_cat/indices/{index} */
    size_t n = 0, shown = 0;
    int json = http_arg(req, "format") && !strcmp(http_arg(req, "format"), "json");
    json_t *arr = json_array();
    cordon_collection_list(ctx->db, &list, &n, NULL);
    resp->body.len = 0;
    for (size_t i = 0; i < n; i++) {
        cordon_collection_info *c = &list[i];
        if (!es_visible(ctx, req, c->name) || (only && !listed(only, c->name)))
            continue;
        shown++;
        /* docs.count is the readable count a subject would get from _count; here the server's
         * own figure, shown only to those who may search the index. */
        uint64_t bytes = c->vector_bytes + c->graph_bytes + c->codes_bytes + c->acl_bytes;
        char count[32], size[32], deleted[32];
        snprintf(count, sizeof count, "%llu", (unsigned long long)c->chunks);
        /* The rows deleted and replaced documents left, until a compaction (_forcemerge) gives
         * them back: what Elasticsearch's deleted documents awaiting a merge are. */
        snprintf(deleted, sizeof deleted, "%llu",
                 (unsigned long long)(c->rows > c->chunks ? c->rows - c->chunks : 0));
        snprintf(size, sizeof size, "%llub", (unsigned long long)bytes);
        if (json)
            json_array_append_new(
                arr, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "health",
                               "green", "status", "open", "index", c->name, "uuid", c->name, "pri",
                               "1", "rep", "0", "docs.count", count, "docs.deleted", deleted,
                               "store.size", size, "pri.store.size", size));
        else
            cdn_buf_printf(&resp->body, "green open %s %s 1 0 %s %s %s %s\n", c->name, c->name,
                           count, deleted, size, size);
    }
    cordon_free(list);
    if (only && !shown && !strchr(only, '*')) { /* a named index that is missing or hidden */
        json_decref(arr);
        es_error_index(resp, only);
        return;
    }
    if (json) {
        es_reply(resp, 200, arr);
        return;
    }
    json_decref(arr);
    resp->status = 200;
    resp->content_type = "text/plain; charset=UTF-8";
    if (!resp->body.data)
        cdn_buf_puts(&resp->body, "");
}

static json_t *index_body(const es_index_t *ix)
{
    json_t *settings = json_deep_copy(json_object_get(ix->attrs, "settings"));
    if (!json_is_object(settings)) {
        json_decref(settings);
        settings = json_object();
    }
    json_t *index = json_object_get(settings, "index");
    if (!json_is_object(index)) {
        index = json_object();
        json_object_set_new(settings, "index", index);
    }
    json_object_set_new(index, "number_of_shards", json_string("1"));
    json_object_set_new(index, "number_of_replicas", json_string("0"));
    json_object_set_new(index, "provided_name", json_string(ix->name));
    json_object_set_new(index, "uuid", json_string(ix->name));
    return json_pack("{s:{}, s:O, s:o}", "aliases", "mappings", ix->mappings, "settings", settings);
}

/* Loads the index named by segment 0 if the caller may see it; otherwise fills resp with the
 * missing-index answer. */
static int index_open(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp, int shared,
                      es_index_t *ix)
{
    const char *name = req->seg[0];
    int rc = shared ? es_index_load_shared(ctx, name, ix) : es_index_load(ctx, name, ix);
    if (rc == CORDON_OK && es_visible(ctx, req, name))
        return 0;
    if (rc == CORDON_OK)
        es_index_release(ix);
    if (rc == CORDON_OK || rc == CORDON_ERR_NOT_FOUND)
        es_error_index(resp, name);
    else
        es_error(resp, 500, "exception", "cannot read index [%s]: %s", name, cordon_strerror(rc));
    return -1;
}

int es_index_open(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp, es_index_t *ix)
{
    return index_open(ctx, req, resp, 0, ix);
}

int es_index_open_shared(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp, es_index_t *ix)
{
    return index_open(ctx, req, resp, 1, ix);
}

void es_index_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    es_index_t ix;
    if (es_index_open(ctx, req, resp, &ix))
        return;
    json_t *j = json_object();
    if (j)
        json_object_set_new(j, ix.name, index_body(&ix));
    es_reply(resp, 200, j);
    es_index_release(&ix);
}

void es_index_put(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    const char *name = req->seg[0];
    json_t *body;
    if (!es_allowed(ctx, req, name, "manage")) {
        es_error(resp, 403, "security_exception",
                 "action [indices:admin/create] is unauthorized for API key [%s] on index [%s]",
                 req->caller.key.id, name);
        return;
    }
    if (!(body = es_body(ctx, req, resp, 0)))
        return;
    if (es_index_create(ctx, name, body, resp) == 0)
        es_ack(resp, name);
    json_decref(body);
}

/* 1 when the index req->seg[0] exists, the caller sees it and may manage it (an admin action,
 * named in the refusal as Elasticsearch names it); else resp holds the 404 or 403. */
static int may_manage(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp, const char *action)
{
    es_index_t ix;
    if (es_index_open(ctx, req, resp, &ix))
        return 0;
    es_index_release(&ix);
    if (es_allowed(ctx, req, req->seg[0], "manage"))
        return 1;
    es_error(resp, 403, "security_exception",
             "action [%s] is unauthorized for API key [%s] on index [%s]", action,
             req->caller.key.id, req->seg[0]);
    return 0;
}

/* Answers a failed call on the index req->seg[0]: 404 when it went meanwhile. */
static void index_failed(http_req_t *req, http_resp_t *resp, int rc, const cordon_error *err)
{
    if (rc == CORDON_ERR_NOT_FOUND)
        es_error_index(resp, req->seg[0]);
    else
        es_error_cordon(resp, rc, err, NULL);
}

void es_index_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    cordon_error err = {0};
    int rc;
    if (!may_manage(ctx, req, resp, "indices:admin/delete"))
        return;
    if ((rc = cordon_collection_drop(ctx->db, req->seg[0], &err)) != 0) {
        index_failed(req, resp, rc, &err);
        return;
    }
    es_ack(resp, NULL);
}

void es_mapping_get_route(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    es_index_t ix;
    if (es_index_open(ctx, req, resp, &ix))
        return;
    es_reply(resp, 200, json_pack("{s:{s:O}}", ix.name, "mappings", ix.mappings));
    es_index_release(&ix);
}

void es_mapping_put_route(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    es_index_t ix;
    json_t *body;
    if (es_index_open(ctx, req, resp, &ix))
        return;
    if (!es_allowed(ctx, req, ix.name, "manage"))
        es_error(resp, 403, "security_exception",
                 "action [indices:admin/mapping/put] is unauthorized for API key [%s] on index "
                 "[%s]",
                 req->caller.key.id, ix.name);
    else if ((body = es_body(ctx, req, resp, 1)) != NULL) {
        pthread_mutex_lock(&ctx->mapping_lock);
        /* Reload under the lock: a concurrent dynamic mapping may have changed it. */
        es_index_release(&ix);
        if (es_index_load(ctx, req->seg[0], &ix) != 0)
            es_error_index(resp, req->seg[0]);
        else if (es_index_put_mapping(ctx, &ix, body, resp) == 0)
            es_ack(resp, NULL);
        pthread_mutex_unlock(&ctx->mapping_lock);
        json_decref(body);
    }
    es_index_release(&ix);
}

void es_refresh(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    es_index_t ix;
    /* Every acknowledged write is visible to the next request: refresh has nothing to do. */
    if (req->nseg > 1 && es_index_open(ctx, req, resp, &ix))
        return;
    if (req->nseg > 1)
        es_index_release(&ix);
    es_reply(resp, 200,
             json_pack("{s:{s:i, s:i, s:i}}", "_shards", "total", 1, "successful", 1, "failed", 0));
}

void es_forcemerge(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    cordon_error err = {0};
    int rc;
    /* Elasticsearch merges segments and expunges deleted documents; here the one thing to
     * give back is the rows deletes and replaces left: cordon_collection_compact. Its
     * parameters (max_num_segments, only_expunge_deletes, flush) change nothing here. */
    if (!may_manage(ctx, req, resp, "indices:admin/forcemerge"))
        return;
    if ((rc = cordon_collection_compact(ctx->db, req->seg[0], NULL, &err)) != 0) {
        index_failed(req, resp, rc, &err);
        return;
    }
    es_reply(resp, 200,
             json_pack("{s:{s:i, s:i, s:i}}", "_shards", "total", 1, "successful", 1, "failed", 0));
}
