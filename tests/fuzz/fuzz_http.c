/* fuzz_http.c: any bytes as an HTTP request to the server's request handling (request.c,
 * router.c and every handler), without a socket: the same http_answer a connection reaches,
 * on a real data directory holding one index "f" of eight documents, four of them hidden from
 * the reader "alice" (ids "secret-N", text "xylosecret"), and her key.
 *
 * Input: a first byte choosing who asks, then (all but the bulk form) a line
 * "METHOD /path?query" and the body:
 *   0 alice's key          1 the admin key running as alice   2 the admin key
 *   3 no key               4 a key that does not exist        5 the admin's _bulk: the rest
 *                                                                is the NDJSON body of
 *                                                                POST /f/_bulk
 * What must hold besides no crash, overread or leak of memory:
 * - a status from 200 to 599, never 500 (bad input is the client's error), and a JSON body
 *   wherever the content type is JSON;
 * - alice (0, 1) changes nothing (the revision stays) and is never shown a hidden
 *   document's id or text, unless the request itself spelt them (an error may quote it);
 * - without a valid key only the open routes answer: everything else is 401;
 * - after a _bulk, every id whose last item succeeded is stored (or, deleted, is not), and
 *   alice reads it exactly when its stored ACL names one of her principals (user:alice,
 *   group:team) and denies none.
 * A request that may have changed the world (the revision moved, keys created or revoked)
 * makes a fresh one for the next input, so that every input starts from the same state.
 * Inputs that name a URL are skipped: an index's embedder could send them to the network.
 * Relies on libFuzzer (clang -fsanitize=fuzzer), jansson, cordon.h and src/http. */
#include <ftw.h>
#include <jansson.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mem.h"
#include "http/es.h"

#define ADMIN_ID "fz"
#define ADMIN_SECRET "fuzz-admin-secret"
#define MAX_INPUT (256 * 1024)

static struct {
    char dir[256];
    cordon_t *db;
    http_ctx_t ctx;
    char admin_auth[KEYS_HEADER_MAX], alice_auth[256];
    int ready;
} w;

/* One request through http_answer. body is copied (the handlers may write into it). The
 * response is the caller's (cdn_buf_free). */
static http_req_t req; /* the last request (large: path and argument buffers) */

static void send_req(const char *method, const char *url, const char *auth, const char *run_as,
                     const char *body, size_t body_len, http_resp_t *resp)
{
    char path[HTTP_PATH_MAX + 1];
    memset(&req, 0, sizeof req);
    memset(resp, 0, sizeof *resp);
    cdn_buf_init(&resp->body, (size_t)1 << 31);
    req.method = method;
    req.authorization = auth;
    req.run_as = run_as;
    req.content_type = strstr(url, "_bulk") ? "application/x-ndjson" : "application/json";
    req.t0_ns = 1;
    const char *q = strchr(url, '?');
    size_t pl = q ? (size_t)(q - url) : strlen(url);
    if (pl > HTTP_PATH_MAX)
        pl = HTTP_PATH_MAX;
    memcpy(path, url, pl);
    path[pl] = '\0';
    for (const char *a = q ? q + 1 : NULL; a && *a;) { /* name=value&... */
        char name[512], value[1024];
        const char *amp = strchr(a, '&'), *end = amp ? amp : a + strlen(a);
        const char *eq = memchr(a, '=', (size_t)(end - a));
        size_t nl = (size_t)((eq ? eq : end) - a), vl = eq ? (size_t)(end - eq - 1) : 0;
        if (nl < sizeof name && vl < sizeof value && nl) {
            memcpy(name, a, nl);
            name[nl] = '\0';
            memcpy(value, eq ? eq + 1 : "", vl);
            value[vl] = '\0';
            if (http_req_add_arg(&req, name, value) != 0)
                break;
        }
        a = amp ? amp + 1 : end;
    }
    char *copy = cdn_malloc(body_len + 1);
    if (!copy)
        abort();
    memcpy(copy, body, body_len);
    copy[body_len] = '\0';
    req.body = copy;
    req.body_len = body_len;
    http_answer(&w.ctx, &req, path, body_len > w.ctx.cfg.max_body_bytes, resp);
    cdn_free(copy);
}

/* A setup request that must answer 2xx; its parsed body (decref it). */
static json_t *setup(const char *method, const char *url, const char *body)
{
    http_resp_t r;
    send_req(method, url, w.admin_auth, NULL, body, strlen(body), &r);
    json_t *j = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL);
    if (r.status < 200 || r.status > 299 || !j) {
        fprintf(stderr, "fuzz_http: setup %s %s: %d %.*s\n", method, url, r.status, (int)r.body.len,
                r.body.data ? r.body.data : "");
        abort();
    }
    cdn_buf_free(&r.body);
    return j;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void world_close(void)
{
    if (!w.ready)
        return;
    http_ctx_close(&w.ctx);
    cordon_close(w.db);
    /* In process: a fork of this process (its sanitizer's address space) for `rm -rf` cost
     * more than the whole rebuild */
    if (nftw(w.dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        abort();
    w.ready = 0;
}

static void world_open(void)
{
    http_config_t cfg;
    cordon_options o = {0};
    cordon_error e;
    cdn_err_t he;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(w.dir, sizeof w.dir, "%s/cordon-fuzz-http.%d", base, (int)getpid());
    http_config_defaults(&cfg);
    snprintf(cfg.access_log, sizeof cfg.access_log, "off");
    snprintf(cfg.bootstrap_key, sizeof cfg.bootstrap_key, ADMIN_ID ":" ADMIN_SECRET);
    cfg.audit_max_bytes = 1 << 20;  /* millions of inputs: keep the audit log small */
    cfg.max_body_bytes = 64 * 1024; /* inputs go past it: the 413 path too */
    http_config_db_options(&cfg, &o);
    if (cordon_open(w.dir, &o, &w.db, &e) != CORDON_OK ||
        http_ctx_open(&w.ctx, w.db, w.dir, &cfg, NULL, &he) != 0) {
        fprintf(stderr, "fuzz_http: cannot open %s\n", w.dir);
        abort();
    }
    w.ready = 1;
    if (keys_header_value(ADMIN_ID, ADMIN_SECRET, w.admin_auth) != CDN_OK)
        abort();
    json_decref(setup("PUT", "/f",
                      "{\"mappings\":{\"properties\":{\"title\":{\"type\":\"text\"},"
                      "\"n\":{\"type\":\"long\"},\"tag\":{\"type\":\"keyword\"},"
                      "\"allowed_groups\":{\"type\":\"keyword\"},"
                      "\"v\":{\"type\":\"dense_vector\",\"dims\":3,\"similarity\":\"cosine\"}}}}"));
    json_decref(setup("POST", "/_cordon/model",
                      "{\"ops\":[{\"op\":\"put_subject\",\"id\":\"alice\"},{\"op\":\"put_group\","
                      "\"id\":\"team\"},"
                      "{\"op\":\"add_member\",\"group\":\"team\",\"member\":\"alice\"},"
                      "{\"op\":\"grant\",\"to\":\"team\",\"to_kind\":\"group\",\"permission\":"
                      "{\"resource\":\"collection:f\",\"action\":\"search\"}},"
                      "{\"op\":\"grant\",\"to\":\"team\",\"to_kind\":\"group\",\"permission\":"
                      "{\"resource\":\"collection:f\",\"action\":\"read\"}}]}"));
    char bulk[4096];
    size_t at = 0;
    for (int i = 0; i < 8; i++) {
        int hidden = i >= 4;
        at += (size_t)snprintf(bulk + at, sizeof bulk - at,
                               "{\"index\":{\"_id\":\"%s-%d\"}}\n{\"title\":\"%s alpha beta %d\","
                               "\"n\":%d,\"tag\":\"t%d\",\"allowed_groups\":[\"%s\"],"
                               "\"v\":[%d,1,0.5]}\n",
                               hidden ? "secret" : "pub", i % 4, hidden ? "xylosecret" : "open", i,
                               i, i % 3, hidden ? "other" : "team", i + 1);
    }
    json_decref(setup("POST", "/f/_bulk?refresh=true", bulk));
    json_t *k =
        setup("POST", "/_security/api_key", "{\"name\":\"a\",\"cordon\":{\"subject\":\"alice\"}}");
    snprintf(w.alice_auth, sizeof w.alice_auth, "ApiKey %s",
             json_string_value(json_object_get(k, "encoded")));
    json_decref(k);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
#ifdef __GLIBC__
    /* Every rebuilt world opens two LMDB environments, each allocating megabytes of buffers
     * with calloc. glibc raises its mmap threshold after the first such buffer is freed, so
     * from then on they come from the heap and are zeroed by memset, then handed back by the
     * engine's malloc_trim: a fixed threshold keeps them fresh zero pages (about twice the
     * inputs a second in the UBSan build; ASan's allocator ignores this). */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
    world_open();
    atexit(world_close);
    return 0;
}

static int hex(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* The input as the server may come to read it: percent escapes and JSON \u escapes of ASCII
 * decoded, other backslashes dropped, letters lowercased (out holds n + 1 bytes). */
static void normalize(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = in[i];
        if (c == '%' && i + 2 < n && hex(in[i + 1]) >= 0 && hex(in[i + 2]) >= 0) {
            c = hex(in[i + 1]) * 16 + hex(in[i + 2]);
            i += 2;
        } else if (c == '\\' && i + 5 < n && in[i + 1] == 'u' && in[i + 2] == '0' &&
                   in[i + 3] == '0' && hex(in[i + 4]) >= 0 && hex(in[i + 5]) >= 0) {
            c = hex(in[i + 4]) * 16 + hex(in[i + 5]);
            i += 5;
        } else if (c == '\\') {
            continue;
        }
        out[o++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c ? c : ' ');
    }
    out[o] = '\0';
}

/* Whether the last request reached a route answered without a key (router.c's open ones). */
static int reached_open_route(void)
{
    const char *r = req.route ? req.route : "";
    return !strcmp(r, "GET /health") || !strcmp(r, "GET /_cordon/health") ||
           !strcmp(r, "GET /v1/openapi.json");
}

static void check_shape(const char *method, const http_resp_t *r, const char *what)
{
    if (r->status < 200 || r->status > 599 || r->status == 500) {
        fprintf(stderr, "fuzz_http: %s: status %d: %.*s\n", what, r->status, (int)r->body.len,
                r->body.data ? r->body.data : "");
        abort();
    }
    if (r->content_type || !strcmp(method, "HEAD") || r->body.len == 0)
        return;
    json_t *j = json_loadb(r->body.data, r->body.len, 0, NULL);
    if (!j || (r->status >= 400 && !json_object_get(j, "error") &&
               !json_is_false(json_object_get(j, "found")))) {
        fprintf(stderr, "fuzz_http: %s: not JSON, or an error without \"error\": %.*s\n", what,
                (int)r->body.len, r->body.data);
        abort();
    }
    json_decref(j);
}

/* Does a stored ACL name one of alice's principals? A name without a kind is a group's. */
static int names_alice(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], "user:alice") || !strcmp(names[i], "group:team") ||
            !strcmp(names[i], "team"))
            return 1;
    return 0;
}

static json_t *get_doc(const char *index, const char *id, const char *auth, int *status)
{
    char url[1200], esc[500];
    size_t o = 0;
    for (const char *p = id; *p && o + 4 < sizeof esc; p++) /* the id as one path segment */
        o +=
            (size_t)snprintf(esc + o, sizeof esc - o,
                             (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ? "%c" : "%%%02X",
                             (unsigned char)*p);
    esc[o] = '\0';
    snprintf(url, sizeof url, "/%s/_doc/%s", index, esc);
    http_resp_t r;
    send_req("GET", url, auth, NULL, "", 0, &r);
    check_shape("GET", &r, "a _bulk's read-back");
    *status = r.status;
    json_t *j = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL);
    cdn_buf_free(&r.body);
    return j;
}

/* After a _bulk: the last successful item of every id reads back as it says, for the admin and
 * for alice. */
static void check_bulk(const http_resp_t *r)
{
    json_t *j = json_loadb(r->body.data, r->body.len, 0, NULL), *items, *it;
    size_t i;
    if (r->status != 200)
        goto out;
    items = json_object_get(j, "items");
    if (!json_is_array(items) || !json_is_boolean(json_object_get(j, "errors")))
        abort();
    json_array_foreach(items, i, it)
    {
        const char *op = json_object_iter_key(json_object_iter(it));
        json_t *res = json_object_iter_value(json_object_iter(it));
        const char *id = json_string_value(json_object_get(res, "_id"));
        const char *index = json_string_value(json_object_get(res, "_index"));
        json_int_t st = json_integer_value(json_object_get(res, "status"));
        if (!op || !id || !index || !st)
            abort();   /* every item names its action, id and status */
        int later = 0; /* only the last item of an id decides what is stored */
        for (size_t k = i + 1; k < json_array_size(items) && !later; k++) {
            json_t *o2 = json_object_iter_value(json_object_iter(json_array_get(items, k)));
            const char *id2 = json_string_value(json_object_get(o2, "_id"));
            const char *ix2 = json_string_value(json_object_get(o2, "_index"));
            later = id2 && ix2 && !strcmp(id2, id) && !strcmp(ix2, index);
        }
        if (later || st >= 300 || strlen(id) > 400 || strlen(index) > 200)
            continue;
        cordon_record *rec = NULL;
        int found = cordon_read_stored(w.db, index, id, &rec, NULL) == CORDON_OK, sb;
        if (found != (strcmp(op, "delete") != 0)) {
            fprintf(stderr, "fuzz_http: %s of %s acknowledged (%d), stored: %d\n", op, id, (int)st,
                    found);
            abort();
        }
        /* alice may search and read collection f only */
        int want = found && !strcmp(index, "f") && names_alice(rec->allowed, rec->n_allowed) &&
                   !names_alice(rec->denied, rec->n_denied);
        cordon_record_free(rec);
        json_t *mine = get_doc(index, id, w.alice_auth, &sb);
        if (json_is_true(json_object_get(mine, "found")) != want) {
            fprintf(stderr, "fuzz_http: alice reads %s: found=%d, its ACL says %d\n", id, !want,
                    want);
            abort();
        }
        json_decref(mine);
    }
out:
    json_decref(j);
}

/* The ids of the live keys, a line each (cdn_free it): a request that created or revoked
 * one changes them. */
static char *key_ids(void)
{
    keys_info_t *keys = NULL;
    size_t n = 0;
    cdn_buf_t b;
    cdn_buf_init(&b, (size_t)1 << 24);
    if (keys_list(w.ctx.keys, &keys, &n, NULL) != CDN_OK)
        abort();
    for (size_t i = 0; i < n; i++)
        if (cdn_buf_append(&b, keys[i].id, strlen(keys[i].id)) || cdn_buf_append(&b, "\n", 1))
            abort();
    cdn_free(keys);
    if (cdn_buf_append(&b, "", 1))
        abort();
    return (char *)b.data;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char norm[MAX_INPUT + 1];
    static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "HEAD"};
    char method[8], url[HTTP_PATH_MAX + 2048];
    if (size < 1 || size > MAX_INPUT)
        return 0;
    int who = data[0] % 6;
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    normalize(data + 1, n, norm);
    if (strstr(norm, "http") || strstr(norm, "://"))
        return 0; /* an embedder's URL: not to be sent anywhere */
    if (memchr(rest, '\0', n))
        return 0; /* the server's buffers are strings */
    const char *body = rest;
    size_t body_len = n;
    if (who == 5) {
        snprintf(method, sizeof method, "POST");
        snprintf(url, sizeof url, "/f/_bulk");
    } else {
        const char *nl = memchr(rest, '\n', n), *sp;
        size_t line = nl ? (size_t)(nl - rest) : n;
        if (!(sp = memchr(rest, ' ', line)) || line - (size_t)(sp - rest) - 1 >= sizeof url)
            return 0;
        size_t ml = (size_t)(sp - rest);
        int known = -1;
        for (int i = 0; i < 5; i++)
            if (strlen(methods[i]) == ml && !memcmp(rest, methods[i], ml))
                known = i;
        if (known < 0)
            return 0;
        snprintf(method, sizeof method, "%s", methods[known]);
        memcpy(url, sp + 1, line - ml - 1);
        url[line - ml - 1] = '\0';
        if (url[0] != '/')
            return 0;
        body = nl ? nl + 1 : rest + n;
        body_len = nl ? n - line - 1 : 0;
    }
    const char *auth = who == 0   ? w.alice_auth
                       : who == 3 ? NULL
                       : who == 4 ? "ApiKey bm9ib2R5Om5vdGhpbmc="
                                  : w.admin_auth;
    uint64_t rev = cordon_revision(w.db);
    char *keys_before = key_ids();
    http_resp_t r;
    send_req(method, url, auth, who == 1 ? "alice" : NULL, body, body_len, &r);
    check_shape(method, &r, "the request");
    if (who == 0 || who == 1) {
        if (cordon_revision(w.db) != rev) {
            fprintf(stderr, "fuzz_http: a request as alice moved the revision (%d)\n", r.status);
            abort();
        }
        static const char *const hidden[] = {"secret-", "xylosecret"};
        for (int i = 0; i < 2; i++)
            if (r.body.data && strstr(r.body.data, hidden[i]) && !strstr(norm, hidden[i])) {
                fprintf(stderr, "fuzz_http: LEAK: alice was shown %s: %.*s\n", hidden[i],
                        (int)r.body.len, r.body.data);
                abort();
            }
    }
    if ((who == 3 || who == 4) && r.status != 401 && r.status != 400 && r.status != 413 &&
        !reached_open_route()) {
        fprintf(stderr, "fuzz_http: %s %s without a valid key: %d\n", method, url, r.status);
        abort();
    }
    if (who == 5)
        check_bulk(&r);
    cdn_buf_free(&r.body);
    char *keys_after = key_ids();
    if (cordon_revision(w.db) != rev || strcmp(keys_before, keys_after)) {
        world_close(); /* the next input starts from the same world */
        world_open();
    }
    cdn_free(keys_before);
    cdn_free(keys_after);
    return 0;
}
