/* es_bulk.c: the Elasticsearch _bulk route: NDJSON actions (index, create, update, delete),
 * taken index by index in request order (items of different indices do not depend on each
 * other, so a body that interleaves two indices still writes in batches), consecutive
 * index/create items of one index written as one cordon_put and consecutive deletes of one
 * index as one cordon_delete, every item answered on its own and in its place (a bad item
 * fails alone, as in Elasticsearch). Relies on http/es_handlers and the
 * public API. */
#include "base/mem.h"
#include "base/strmap.h"
#include "http/es.h"
#include "http/es_handlers.h"
#include "http/es_vecscan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { OP_INDEX, OP_CREATE, OP_UPDATE, OP_DELETE } op_t;

typedef struct item {
    op_t op;
    char index[CORDON_NAME_MAX + 1];
    char id[CORDON_ID_MAX + 1];
    json_t *source; /* index/create: the document; update: the update body */
    json_t *result; /* the item's answer */
    /* index/create: the document line, read when its batch is written (the index's vector
     * field is known then), and its number in the body */
    const char *line;
    size_t len, lineno;
    size_t pos; /* its place in the request */
} item_t;

/* Index by index, each in request order. */
static int by_index(const void *a, const void *b)
{
    const item_t *x = a, *y = b;
    int c = strcmp(x->index, y->index);
    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

static int by_pos(const void *a, const void *b)
{
    const item_t *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static const char *op_name(op_t op)
{
    static const char *const n[] = {"index", "create", "update", "delete"};
    return n[op];
}

/* The status and type of an item whose put failed after its document passed the checks. */
static int put_status(int rc)
{
    return rc == CORDON_ERR_NOMEM       ? 503
           : rc == CORDON_ERR_NOT_FOUND ? 404
           : rc == CORDON_ERR_INVALID   ? 400
                                        : 500; /* the disk or the database is full or failing */
}

static const char *put_type(int rc)
{
    return rc == CORDON_ERR_NOMEM       ? "circuit_breaking_exception"
           : rc == CORDON_ERR_NOT_FOUND ? "index_not_found_exception"
           : rc == CORDON_ERR_INVALID   ? "mapper_parsing_exception"
                                        : "exception";
}

static void item_error(item_t *it, int status, const char *type, const char *reason)
{
    json_decref(it->result);
    it->result =
        json_pack("{s:s, s:s, s:i, s:{s:s, s:s, s:s}}", "_index", it->index, "_id", it->id,
                  "status", status, "error", "type", type, "reason", reason, "index", it->index);
}

static void item_ok(item_t *it, int status, const char *result, uint64_t rev)
{
    json_decref(it->result);
    it->result = json_pack("{s:s, s:s, s:i, s:s, s:{s:i, s:i, s:i}, s:I, s:i, s:i}", "_index",
                           it->index, "_id", it->id, "_version", 1, "result", result, "_shards",
                           "total", 1, "successful", 1, "failed", 0, "_seq_no", (json_int_t)rev,
                           "_primary_term", 1, "status", status);
}

/* Copies a response's error into an item. */
static void item_from_resp(item_t *it, const http_resp_t *r)
{
    json_t *j = json_loads(r->body.data ? r->body.data : "{}", 0, NULL);
    json_t *e = json_object_get(j, "error");
    item_error(it, r->status ? r->status : 500,
               json_string_value(json_object_get(e, "type"))
                   ? json_string_value(json_object_get(e, "type"))
                   : "exception",
               json_string_value(json_object_get(e, "reason"))
                   ? json_string_value(json_object_get(e, "reason"))
                   : "failed");
    json_decref(j);
}

static int too_deep(item_t *it, size_t lineno, unsigned max)
{
    char why[300];
    snprintf(why, sizeof why, "line %zu: the document nests deeper than %u levels, the limit",
             lineno, max);
    item_error(it, 400, "mapper_parsing_exception", why);
    return -1;
}

/* Reads an index/create item's document line into it->source, refusing one nested deeper than
 * max. Given ix and doc, the index's vector is read straight into doc->vector when the line
 * allows (es_vecscan), and the source holds null in its place; any other line is parsed
 * whole. 0, or -1 with the item's error. */
static int parse_doc(item_t *it, unsigned max, const es_index_t *ix, es_doc_t *doc)
{
    json_error_t je;
    es_vecscan_t at;
    if (it->source)
        return 0;
    if (ix && doc && ix->info.dim && ix->vector_field) {
        size_t vlen, n;
        float *v = cdn_malloc(ix->info.dim * sizeof *v);
        char *text = NULL;
        if (v && es_vecscan(it->line, it->len, ix->vector_field, ix->info.dim, v, &at) == 0 &&
            (vlen = at.end - at.start, n = it->len - vlen + 4, text = cdn_malloc(n))) {
            memcpy(text, it->line, at.start);
            memcpy(text + at.start, "null", 4);
            memcpy(text + at.start + 4, it->line + at.end, it->len - at.end);
            /* The array of numbers is two levels down (the document, the array), so the line
             * nests as deep as the text with null in its place, or two: the long part of the
             * line need not be scanned again. */
            if (max < 2 || es_too_deep(text, n, max)) {
                cdn_free(text);
                cdn_free(v);
                return too_deep(it, it->lineno, max);
            }
            it->source = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
            if (json_is_object(it->source)) {
                doc->vector = v;
                doc->vector_scanned = 1;
                doc->vector_sumsq = at.sumsq;
                cdn_free(text);
                return 0;
            }
            json_decref(it->source); /* the whole line says what is wrong */
            it->source = NULL;
        }
        cdn_free(text);
        cdn_free(v);
    }
    if (es_too_deep(it->line, it->len, max))
        return too_deep(it, it->lineno, max);
    it->source = json_loadb(it->line, it->len, JSON_REJECT_DUPLICATES, &je);
    if (json_is_object(it->source))
        return 0;
    char why[300];
    snprintf(why, sizeof why, "line %zu: the document is not a JSON object%s%s", it->lineno,
             it->source ? "" : ": ", it->source ? "" : je.text);
    json_decref(it->source);
    it->source = NULL;
    item_error(it, 400, "mapper_parsing_exception", why);
    return -1;
}

/* Embeds the documents of items [from, to) that arrive without a vector, when the index
 * embeds documents: those parsed (no answer yet) whose vector was not read from the line;
 * each one whose embedding failed is answered 502. */
static void embed_missing(const es_index_t *ix, item_t *items, const es_doc_t *docs, size_t from,
                          size_t to)
{
    json_t *sources[256];
    unsigned char scratch[256];
    size_t at[256];
    char why[512] = "";
    if (!ix->embed_documents)
        return;
    for (size_t i = from; i < to;) {
        size_t n = 0;
        for (; i < to && n < 256; i++)
            if (!items[i].result && items[i].source && !docs[i - from].vector_scanned) {
                sources[n] = items[i].source;
                scratch[n] = 0;
                at[n++] = i;
            }
        if (!n || !es_embed_sources(ix, sources, n, scratch, why, sizeof why))
            continue;
        for (size_t k = 0; k < n; k++)
            if (scratch[k])
                item_error(&items[at[k]], 502, "embedding_endpoint_exception", why);
    }
}

/* Writes items [from, to) (all index/create of one index) as one put. */
static void flush(http_ctx_t *ctx, http_req_t *req, item_t *items, size_t from, size_t to)
{
    es_index_t ix;
    http_resp_t r = {0};
    es_dynamic_t dyn = {0};
    cordon_error err = {0};
    size_t n = to - from, m = 0;
    es_doc_t *docs;
    cordon_chunk *chunks;
    size_t *which;
    uint64_t rev = 0;
    unsigned char *had;
    const char **ids;
    size_t first = from;
    /* The first document that parses is the one an index created by this write is mapped
     * from; documents that do not parse fail alone, whatever happens to the index. */
    while (first < to && parse_doc(&items[first], ctx->cfg.json_depth_max, NULL, NULL))
        first++;
    if (first == to)
        return;
    cdn_buf_init(&r.body, 1 << 20);
    if (es_index_for_write(ctx, req, items[first].index, items[first].source, &ix, &r)) {
        for (size_t i = first; i < to; i++)
            if (!parse_doc(&items[i], ctx->cfg.json_depth_max, NULL, NULL))
                item_from_resp(&items[i], &r);
        cdn_buf_free(&r.body);
        return;
    }
    docs = cdn_calloc(n, sizeof *docs);
    chunks = cdn_calloc(n, sizeof *chunks);
    which = cdn_calloc(n, sizeof *which);
    had = cdn_calloc(n, sizeof *had);
    ids = cdn_calloc(n, sizeof *ids);
    for (size_t i = 0; ids && i < n; i++)
        ids[i] = items[from + i].id;
    /* created or updated: one read for the whole batch */
    if (!docs || !chunks || !which || !had || !ids ||
        cordon_exists(ctx->db, ix.name, ids, n, had, NULL) != CORDON_OK) {
        for (size_t i = from; i < to; i++)
            item_error(&items[i], 503, "circuit_breaking_exception", "out of memory");
        goto done;
    }
    /* Every line parsed first (the vector read straight into its document where it can be),
     * so that those arriving without a vector can be embedded together. */
    for (size_t i = 0; i < n; i++)
        if (!items[from + i].result)
            parse_doc(&items[from + i], ctx->cfg.json_depth_max, &ix, &docs[i]);
    embed_missing(&ix, items, docs, from, to);
    for (size_t i = 0; i < n; i++) {
        item_t *it = &items[from + i];
        const char *type = NULL;
        char why[400];
        if (it->result) /* failed already: its line or its embedding */
            continue;
        snprintf(docs[i].id, sizeof docs[i].id, "%s", it->id);
        if (es_doc_from_source(&ix, it->source, &dyn, &docs[i], &type, why, sizeof why)) {
            item_error(it, 400, type, why);
            continue;
        }
        if (it->op == OP_CREATE && had[i]) {
            char why2[700];
            snprintf(why2, sizeof why2,
                     "[%s]: version conflict, document already exists (current version [1])",
                     it->id);
            item_error(it, 409, "version_conflict_engine_exception", why2);
            continue;
        }
        it->result = json_null(); /* pending */
    }
    if (dyn.changed) {
        pthread_mutex_lock(&ctx->mapping_lock);
        int rc = es_dynamic_apply(ctx, &ix, &dyn, &r);
        pthread_mutex_unlock(&ctx->mapping_lock);
        if (rc) {
            for (size_t i = from; i < to; i++)
                if (json_is_null(items[i].result))
                    item_from_resp(&items[i], &r);
            goto done;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!json_is_null(items[from + i].result))
            continue;
        chunks[m] = docs[i].chunk;
        which[m++] = i;
    }
    /* The batch as it is first: cordon_put checks every chunk before writing any, so only when
     * it refuses one are the chunks checked one by one, to put the others and report each
     * refused item on its own. */
    int rc = m ? cordon_put(ctx->db, ix.name, chunks, m, &rev, &err) : CORDON_OK;
    if (rc == CORDON_ERR_INVALID || rc == CORDON_ERR_LIMIT) {
        size_t kept = 0;
        for (size_t j = 0; j < m; j++) {
            item_t *it = &items[from + which[j]];
            if (cordon_chunk_check(ctx->db, ix.name, &chunks[j], &err) != CORDON_OK) {
                item_error(it, 400, "mapper_parsing_exception", err.message);
                continue;
            }
            chunks[kept] = chunks[j];
            which[kept++] = which[j];
        }
        m = kept;
        rc = m ? cordon_put(ctx->db, ix.name, chunks, m, &rev, &err) : CORDON_OK;
    }
    if (m) {
        for (size_t j = 0; j < m; j++) {
            item_t *it = &items[from + which[j]];
            if (rc == CORDON_OK)
                item_ok(it, had[which[j]] ? 200 : 201, had[which[j]] ? "updated" : "created", rev);
            else /* every document passed its checks: the store refused (full, failing) */
                item_error(it, put_status(rc), put_type(rc), err.message);
        }
    }
done:
    for (size_t i = 0; docs && i < n; i++)
        es_doc_release(&docs[i]);
    json_decref(dyn.props);
    cdn_free(docs);
    cdn_free(chunks);
    cdn_free(which);
    cdn_free(had);
    cdn_free(ids);
    cdn_buf_free(&r.body);
    es_index_release(&ix);
}

/* Deletes items [from, to) (deletes of one index, each id once) in one write. Each is answered
 * "deleted" when it existed and "not_found" (404) when not, as a single delete is; which ids
 * exist is read in one cordon_exists before, as index items learn "created" or "updated"
 * (under a concurrent delete of the same id both may say "deleted"). */
static void flush_deletes(http_ctx_t *ctx, http_req_t *req, item_t *items, size_t from, size_t to)
{
    es_index_t ix;
    http_req_t sub = *req;
    http_resp_t r = {0};
    cordon_error err = {0};
    size_t n = to - from, m = 0;
    uint64_t rev = 0;
    int failed = 0;
    if (!n)
        return;
    cdn_buf_init(&r.body, 1 << 16);
    sub.seg[0] = items[from].index;
    sub.seg[1] = "_doc";
    sub.seg[2] = items[from].id;
    sub.nseg = 3;
    sub.nargs = 0;
    if (es_index_open(ctx, &sub, &r, &ix)) {
        for (size_t i = from; i < to; i++)
            item_from_resp(&items[i], &r);
        cdn_buf_free(&r.body);
        return;
    }
    const char **ids = cdn_calloc(n, sizeof *ids), **gone = cdn_calloc(n, sizeof *gone);
    unsigned char *had = cdn_calloc(n, 1);
    if (!es_allowed(ctx, req, ix.name, "write")) {
        es_error(&r, 403, "security_exception",
                 "action [indices:data/write/delete] is unauthorized for API key [%s] on index "
                 "[%s]",
                 req->caller.key.id, ix.name);
        failed = 1;
    } else if (!ids || !gone || !had) {
        es_error(&r, 503, "circuit_breaking_exception", "out of memory");
        failed = 1;
    } else {
        for (size_t i = 0; i < n; i++)
            ids[i] = items[from + i].id;
        int rc = cordon_exists(ctx->db, ix.name, ids, n, had, &err);
        for (size_t i = 0; rc == CORDON_OK && i < n; i++)
            if (had[i])
                gone[m++] = ids[i];
        if (rc == CORDON_OK && m)
            rc = cordon_delete(ctx->db, ix.name, gone, m, NULL, &rev, &err);
        else if (rc == CORDON_OK)
            rev = cordon_revision(ctx->db);
        if (rc) {
            es_error_cordon(&r, rc, &err, NULL);
            failed = 1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (failed)
            item_from_resp(&items[from + i], &r);
        else
            item_ok(&items[from + i], had[i] ? 200 : 404, had[i] ? "deleted" : "not_found", rev);
    }
    cdn_free(ids);
    cdn_free(gone);
    cdn_free(had);
    cdn_buf_free(&r.body);
    es_index_release(&ix);
}

/* Runs one update item through the single-document handler. */
static void one(http_ctx_t *ctx, http_req_t *req, item_t *it)
{
    http_req_t sub = *req;
    http_resp_t r = {0};
    char *body = json_dumps(it->source, JSON_COMPACT);
    cdn_buf_init(&r.body, 1 << 20);
    sub.seg[0] = it->index;
    sub.seg[1] = "_update";
    sub.seg[2] = it->id;
    sub.nseg = 3;
    sub.nargs = 0;
    sub.body = body ? body : "";
    sub.body_len = body ? strlen(body) : 0;
    es_doc_update(ctx, &sub, &r);
    json_t *j = json_loads(r.body.data ? r.body.data : "{}", 0, NULL);
    if (r.status < 300) {
        json_object_set_new(j, "status", json_integer(r.status));
        json_decref(it->result);
        it->result = j;
    } else {
        json_decref(j);
        item_from_resp(it, &r);
    }
    free(body);
    cdn_buf_free(&r.body);
}

/* Parses the action line at line; 0, or -1 with resp filled (the whole request fails, as
 * Elasticsearch's "Malformed action/metadata line"). */
static int parse_action(json_t *a, const char *path_index, item_t *it, size_t lineno,
                        http_resp_t *resp)
{
    const char *k = NULL;
    json_t *meta = NULL;
    if (!json_is_object(a) || json_object_size(a) != 1) {
        es_error(resp, 400, "illegal_argument_exception",
                 "Malformed action/metadata line [%zu], expected START_OBJECT with one action",
                 lineno);
        return -1;
    }
    json_object_foreach(a, k, meta) break;
    if (!strcmp(k, "index"))
        it->op = OP_INDEX;
    else if (!strcmp(k, "create"))
        it->op = OP_CREATE;
    else if (!strcmp(k, "update"))
        it->op = OP_UPDATE;
    else if (!strcmp(k, "delete"))
        it->op = OP_DELETE;
    else {
        es_error(resp, 400, "illegal_argument_exception",
                 "Malformed action/metadata line [%zu], expected one of [create, delete, index, "
                 "update] but found [%s]",
                 lineno, k);
        return -1;
    }
    const char *index = json_string_value(json_object_get(meta, "_index"));
    json_t *idv = json_object_get(meta, "_id");
    if (!index)
        index = path_index;
    if (!index || strlen(index) > CORDON_NAME_MAX) {
        es_error(resp, 400, "action_request_validation_exception",
                 "Validation Failed: 1: index is missing or too long on line %zu;", lineno);
        return -1;
    }
    snprintf(it->index, sizeof it->index, "%s", index);
    if (json_is_string(idv) && json_string_length(idv) <= CORDON_ID_MAX)
        snprintf(it->id, sizeof it->id, "%s", json_string_value(idv));
    else if (json_is_integer(idv))
        snprintf(it->id, sizeof it->id, "%lld", (long long)json_integer_value(idv));
    else if (it->op == OP_INDEX || it->op == OP_CREATE)
        es_new_id(it->id);
    else {
        es_error(resp, 400, "action_request_validation_exception",
                 "Validation Failed: 1: an id is required for a %s operation (line %zu);",
                 op_name(it->op), lineno);
        return -1;
    }
    return 0;
}

void es_bulk(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    const char *path_index = req->nseg > 1 ? req->seg[0] : NULL;
    item_t *items = NULL;
    size_t n = 0, cap = 0, lineno = 0;
    char *p = req->body, *end = req->body + req->body_len;
    int errors = 0;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p)), *line = p;
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        p = nl ? nl + 1 : end;
        lineno++;
        while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
            len--;
        if (!len)
            continue;
        if (n == ctx->cfg.max_bulk_items) {
            es_error(resp, 400, "illegal_argument_exception",
                     "the bulk request holds more than %zu items, the limit (max_bulk_items)",
                     ctx->cfg.max_bulk_items);
            goto done;
        }
        if (cdn_grow((void **)&items, &cap, n + 1, sizeof *items)) {
            es_error(resp, 503, "circuit_breaking_exception", "out of memory");
            goto done;
        }
        item_t *it = &items[n];
        memset(it, 0, sizeof *it);
        it->pos = n;
        json_t *a = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
        int bad = parse_action(a, path_index, it, lineno, resp);
        json_decref(a);
        if (bad)
            goto done;
        n++;
        if (it->op == OP_DELETE)
            continue;
        /* The document (or update body) line. */
        while (p < end && (*p == '\n' || *p == '\r'))
            p++, lineno++;
        nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
        line = p;
        len = p < end ? (nl ? (size_t)(nl - p) : (size_t)(end - p)) : 0;
        p = nl ? nl + 1 : end;
        lineno++;
        if (it->op != OP_UPDATE && len) {
            it->line = line; /* read with its batch */
            it->len = len;
            it->lineno = lineno;
            continue;
        }
        json_error_t je;
        char why[300];
        if (len && es_too_deep(line, len, ctx->cfg.json_depth_max)) {
            too_deep(it, lineno, ctx->cfg.json_depth_max);
        } else if (!len || !(it->source = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je)) ||
                   !json_is_object(it->source)) {
            snprintf(why, sizeof why, "line %zu: the document is not a JSON object%s%s", lineno,
                     it->source || !len ? "" : ": ", it->source || !len ? "" : je.text);
            json_decref(it->source);
            it->source = NULL;
            item_error(it, 400, "mapper_parsing_exception", why);
        }
    }
    if (n == 0) {
        es_error(resp, 400, "action_request_validation_exception",
                 "Validation Failed: 1: no requests added;");
        goto done;
    }
    qsort(items, n, sizeof *items, by_index);
    {
        size_t start = 0;
        int run_kind = 0; /* of items [start, i): 1 index/create, 2 delete */
        cdn_strmap_t ids;
        cdn_strmap_init(&ids);
        for (size_t i = 0; i <= n; i++) {
            /* runs of one kind: index/create (one put) or delete (one delete) */
            int kind = i == n || items[i].result  ? 0
                       : items[i].op == OP_DELETE ? 2
                       : items[i].op != OP_UPDATE ? 1
                                                  : 0;
            int batchable = kind != 0;
            int same = batchable && i > start && kind == run_kind &&
                       !strcmp(items[i].index, items[start].index);
            uint32_t seen;
            if (same && cdn_strmap_get(&ids, items[i].id, strlen(items[i].id), &seen) == 0)
                same = 0; /* the same id twice: the first must land before the second */
            if (!same) {
                if (run_kind == 2)
                    flush_deletes(ctx, req, items, start, i);
                else
                    flush(ctx, req, items, start, i);
                run_kind = kind;
                cdn_strmap_free(&ids);
                cdn_strmap_init(&ids);
                start = i;
                if (!batchable) {
                    if (i < n && !items[i].result)
                        one(ctx, req, &items[i]);
                    start = i + 1;
                    continue;
                }
            }
            cdn_strmap_put(&ids, items[i].id, strlen(items[i].id), 1);
        }
        cdn_strmap_free(&ids);
    }
    qsort(items, n, sizeof *items, by_pos); /* answers in request order */
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *r = items[i].result;
        int st = (int)json_integer_value(json_object_get(r, "status"));
        /* a delete of an id that is not there answers 404 without an error */
        errors |=
            st >= 300 && !(items[i].op == OP_DELETE && st == 404 && !json_object_get(r, "error"));
        json_array_append_new(arr, json_pack("{s:O}", op_name(items[i].op), r ? r : json_null()));
    }
    es_reply(resp, 200,
             json_pack("{s:i, s:b, s:o}", "took", (int)http_took_ms(req), "errors", errors, "items",
                       arr));
done:
    for (size_t i = 0; i < n; i++) {
        json_decref(items[i].source);
        json_decref(items[i].result);
    }
    cdn_free(items);
}
