/* http.h: what the server's files share: the request a handler reads, the response it fills,
 * the server-wide context and who is asking. Relies on cordon.h (the server reaches the engine
 * only through the public API), base/buf and the server's own keys, metrics and config.
 * A request's strings are owned by the request and live until its response is sent. */
#ifndef CDN_HTTP_H
#define CDN_HTTP_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/buf.h"
#include "cordon.h"
#include "http/config.h"
#include "http/keys.h"
#include "http/metrics.h"

#define HTTP_SEGS_MAX 8  /* path segments a route may have */
#define HTTP_ARGS_MAX 32 /* query-string arguments kept per request */
#define HTTP_PATH_MAX 4096
#define HTTP_CONNECTIONS_MAX 1024 /* open connections; more are refused at accept */

typedef struct http_arg {
    char *name, *value; /* value "" for a bare flag (?pretty) */
} http_arg_t;

/* Who is asking, once the key is checked. */
typedef struct http_caller {
    keys_info_t key;
    /* The subject searches run as: the key's own, or the run-as header's. "" for none. */
    char subject[CORDON_ROLE_MAX + 8];
    int run_as;                  /* subject came from es-security-runas-user */
    char label[KEYS_ID_MAX + 8]; /* "key:<id>": who asked, as the audit records it */
    /* A key bound to asserted principals (no subject): them, for asserted-principal indexes. */
    const char *principals[KEYS_PRINCIPALS_MAX];
    size_t n_principals;
} http_caller_t;

typedef struct http_req {
    const char *method;       /* "GET", "PUT", ... */
    char path[HTTP_PATH_MAX]; /* as sent, for messages */
    char segbuf[HTTP_PATH_MAX];
    char *seg[HTTP_SEGS_MAX]; /* percent-decoded path segments (in segbuf) */
    size_t nseg;
    http_arg_t args[HTTP_ARGS_MAX];
    size_t nargs;
    char argbuf[4096]; /* the decoded arguments */
    size_t argused;
    int bad_utf8; /* an argument is not UTF-8 once decoded: answered 400 */
    const char *authorization, *run_as, *content_type; /* request headers, or NULL */
    const char *opaque_id; /* X-Opaque-Id: the client's name for the request (audit) */
    char *body;            /* NUL-terminated */
    size_t body_len;
    http_caller_t caller;
    uint64_t t0_ns;    /* when the request arrived (cdn_clock_ns), for "took" */
    const char *route; /* the route template matched, for logs and metrics */
    size_t route_idx;
} http_req_t;

typedef struct http_resp {
    int status;
    cdn_buf_t body;
    const char *content_type; /* NULL = application/json */
    char extra_name[2][40];   /* up to two more headers (WWW-Authenticate, Retry-After) */
    char extra_value[2][160];
    size_t n_extra;
} http_resp_t;

typedef struct http_ctx {
    cordon_t *db;
    keys_t *keys;
    metrics_t *metrics;
    http_config_t cfg;
    char data_dir[HTTP_PATH_MAX];
    atomic_int stopping;                /* shutting down: new requests get 503 */
    atomic_int in_flight;               /* requests being answered */
    atomic_int writes;                  /* write requests being answered (the write queue) */
    int log_fd;                         /* access log, -1 = off */
    pthread_mutex_t mapping_lock;       /* serialises changes to indexes' mappings */
    struct es_attrs_cache *attrs_cache; /* parsed index attrs (es_mapping.c); NULL = none */
    cordon_audit_info audit;            /* how the audit records, read at start */
} http_ctx_t;

typedef struct es_attrs_cache es_attrs_cache_t;

/* A handler answers one routed request; it always fills resp (errors included). */
typedef void (*http_handler_fn)(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

/* The query-string argument name, or NULL. */
const char *http_arg(const http_req_t *req, const char *name);
/* Milliseconds since the request arrived. */
long http_took_ms(const http_req_t *req);
/* 1 when the argument is present and not "false". */
int http_arg_flag(const http_req_t *req, const char *name);

/* The context apart from the listener (ctx.c): opens the data directory's keys (creating the
 * first admin key of an empty one, printed to out once, or taking cfg->bootstrap_key), the
 * metrics and the access log. db stays the caller's. On failure nothing is left open. */
int http_ctx_open(http_ctx_t *ctx, cordon_t *db, const char *data_dir, const http_config_t *cfg,
                  FILE *out, cdn_err_t *err);
/* Closes what http_ctx_open opened; no request may be in flight. */
void http_ctx_close(http_ctx_t *ctx);

/* A request apart from the socket (request.c). Adds one query-string argument, percent-decoded
 * into the request's buffer; -1 past HTTP_ARGS_MAX or the buffer. */
int http_req_add_arg(http_req_t *req, const char *key, const char *value);
/* Splits url (the path, still escaped) into percent-decoded segments; -1 when it is longer
 * than HTTP_PATH_MAX or has more than HTTP_SEGS_MAX segments, -2 when a segment is not UTF-8
 * once decoded. An argument that is not UTF-8 sets req->bad_utf8. */
int http_req_set_path(http_req_t *req, const char *url);
/* Answers a request whose headers, arguments and body are in: 413 when the body was too big,
 * 400 for a path past the bounds or not UTF-8 (or arguments not UTF-8), else the route's answer
 * (counted in ctx->in_flight). */
void http_answer(http_ctx_t *ctx, http_req_t *req, const char *url, int too_big, http_resp_t *resp);
/* Routes and dispatch (router.c): authenticates, routes, runs the handler, fills resp. */
void http_dispatch(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
/* Route templates, for metrics labels: *n of them. */
const char *const *http_route_names(size_t *n);

/* The server (server.c). */
typedef struct http_server http_server_t;
/* Opens the data directory's keys, creates the first admin key of an empty one (printed to
 * out once, or taken from cfg->bootstrap_key), and starts listening. */
#define HTTP_TLS_FILE_MAX (1024 * 1024) /* bytes of a TLS certificate or key file */

int http_server_start(cordon_t *db, const char *data_dir, const http_config_t *cfg, FILE *out,
                      http_server_t **srv, cdn_err_t *err);
/* Stops accepting, answers 503 to new requests, waits for the ones in flight, stops. */
void http_server_stop(http_server_t *srv);
/* The port it listens on (useful with port 0). */
unsigned http_server_port(const http_server_t *srv);

#endif
