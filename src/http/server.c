/* server.c: cordon serve's HTTP/1.1 server on libmicrohttpd: a thread pool sized to the cores,
 * keep-alive, bounded bodies (chunked ones included), the product header Elasticsearch clients
 * check, the access log, metrics and an orderly stop. Relies on libmicrohttpd, http/router.c
 * for everything a request means, and http/keys for the first admin key. */
#include "base/clock.h"
#include "base/fileio.h"
#include "base/mem.h"
#include "http/es.h"
#include "http/es_mapping.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct http_server {
    struct MHD_Daemon *d;
    http_ctx_t ctx;
    unsigned port;
};

/* One request in progress: accumulated while libmicrohttpd hands over the body. */
typedef struct conn_state {
    http_req_t req;
    cdn_buf_t body;
    int too_big;
    uint64_t t0;
    /* The answer, for the access log line written once it is sent (on_completed). */
    int answered, status;
    double ms;
    size_t bytes;
} conn_state_t;

/* libmicrohttpd leaves the URI and its arguments escaped: request.c decodes a path segment
 * only after the path is split, so an id holding "%2F" stays one segment, and each argument into
 * the request's own buffer. */
static size_t on_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return strlen(s);
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    /* past the bounds: the rest are ignored */
    return http_req_add_arg(cls, key, value) == 0 ? MHD_YES : MHD_NO;
}

static void log_line(http_ctx_t *ctx, const http_req_t *req, int status, double ms, size_t bytes)
{
    char buf[1024], ts[40];
    struct timespec now;
    struct tm tm;
    cdn_buf_t subj;
    if (ctx->log_fd < 0)
        return;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    cdn_buf_init(&subj, 512);
    cdn_buf_json_str(&subj, req->caller.subject[0] ? req->caller.subject : "");
    int n = snprintf(buf, sizeof buf,
                     "{\"time\":\"%s.%03ldZ\",\"method\":\"%s\",\"route\":\"%s\",\"status\":%d,"
                     "\"took_ms\":%.3f,\"subject\":%s,\"key\":\"%s\",\"bytes\":%zu}\n",
                     ts, now.tv_nsec / 1000000, req->method, req->route ? req->route : "", status,
                     ms, subj.data ? subj.data : "\"\"", req->caller.key.id, bytes);
    cdn_buf_free(&subj);
    if (n > 0 && (size_t)n < sizeof buf && write(ctx->log_fd, buf, (size_t)n) < 0) {
        /* a full or closed log must not fail the request */
    }
}

static enum MHD_Result send_resp(struct MHD_Connection *c, http_resp_t *resp)
{
    struct MHD_Response *r;
    size_t len = resp->body.len;
    char *data = resp->body.data;
    enum MHD_Result ret;
    resp->body.data = NULL;
    resp->body.len = resp->body.cap = 0;
    r = MHD_create_response_from_buffer_with_free_callback(len, data ? data : (char *)"",
                                                           data ? cdn_free : NULL);
    if (!r) {
        cdn_free(data);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type",
                            resp->content_type ? resp->content_type
                                               : "application/json; charset=UTF-8");
    MHD_add_response_header(r, "X-Elastic-Product", "Elasticsearch");
    for (size_t i = 0; i < resp->n_extra; i++)
        MHD_add_response_header(r, resp->extra_name[i], resp->extra_value[i]);
    ret = MHD_queue_response(c, (unsigned)resp->status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **state)
{
    http_server_t *srv = cls;
    http_ctx_t *ctx = &srv->ctx;
    conn_state_t *st = *state;
    (void)version;
    if (!st) { /* the headers are in: decide what can be decided before the body */
        if (!(st = cdn_calloc(1, sizeof *st)))
            return MHD_NO;
        st->t0 = cdn_clock_ns();
        cdn_buf_init(&st->body, ctx->cfg.max_body_bytes);
        *state = st;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > ctx->cfg.max_body_bytes)
            st->too_big = 1;
        return MHD_YES;
    }
    if (*size) {
        /* A client that trickles its body is cut off once the request has taken longer than
         * request_timeout_s (libmicrohttpd's own timeout counts idle time only). */
        if (cdn_clock_ns() - st->t0 > (uint64_t)ctx->cfg.request_timeout_s * 1000000000ull)
            return MHD_NO;
        if (!st->too_big && cdn_buf_append(&st->body, data, *size) != 0)
            st->too_big = 1; /* keep reading to the end, then answer 413 */
        *size = 0;
        return MHD_YES;
    }
    http_req_t *req = &st->req;
    http_resp_t resp = {0};
    cdn_buf_init(&resp.body, (size_t)1 << 31);
    req->method = method;
    req->t0_ns = st->t0;
    req->authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    req->run_as = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "es-security-runas-user");
    req->content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    req->opaque_id = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Opaque-Id");
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, req);
    if (cdn_buf_append(&st->body, "", 0) != 0 && !st->too_big) /* NUL-terminate */
        st->too_big = 1;
    req->body = st->body.data ? st->body.data : (char *)"";
    req->body_len = st->body.len;
    http_answer(ctx, req, url, st->too_big, &resp);
    size_t bytes = resp.body.len;
    int status = resp.status;
    double secs = (double)(cdn_clock_ns() - st->t0) / 1e9;
    metrics_request(ctx->metrics, req->route_idx, status, secs, bytes);
    st->answered = 1;
    st->status = status;
    st->ms = secs * 1e3;
    st->bytes = bytes;
    enum MHD_Result ret = send_resp(c, &resp);
    cdn_buf_free(&resp.body);
    return ret;
}

/* A request is done: its response sent (or the connection gone). The access log line is
 * written here, after the response, so that its write(2) is not part of the client's wait. */
static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode toe)
{
    http_server_t *srv = cls;
    conn_state_t *st = *state;
    (void)c;
    (void)toe;
    if (!st)
        return;
    if (st->answered)
        log_line(&srv->ctx, &st->req, st->status, st->ms, st->bytes);
    cdn_buf_free(&st->body);
    cdn_free(st);
    *state = NULL;
}

/* A PEM file into a NUL-terminated buffer (owned by the caller, cdn_free). */
static int read_pem(const char *path, const char *what, char **out, cdn_err_t *err)
{
    int fd;
    uint64_t size;
    *out = NULL;
    if (cdn_file_open_read(path, &fd, &size) != 0)
        return cdn_err_set(err, CDN_ERR_IO, "cannot read the TLS %s %s", what, path);
    if (size == 0 || size > HTTP_TLS_FILE_MAX) {
        close(fd);
        return cdn_err_set(err, CDN_ERR_INVALID, "the TLS %s %s is empty or over %d bytes", what,
                           path, HTTP_TLS_FILE_MAX);
    }
    if (!(*out = cdn_malloc((size_t)size + 1)) ||
        cdn_file_read_all(fd, *out, (size_t)size, NULL) != 0) {
        close(fd);
        cdn_free(*out);
        *out = NULL;
        return cdn_err_set(err, CDN_ERR_IO, "cannot read the TLS %s %s", what, path);
    }
    close(fd);
    (*out)[size] = '\0';
    return CDN_OK;
}

/* The certificate and key of an HTTPS listener, or a clear error. */
static int tls_load(const http_config_t *cfg, char **cert, char **key, cdn_err_t *err)
{
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "tls_cert_file is set, but this libmicrohttpd was built without TLS");
    int rc = read_pem(cfg->tls_cert_file, "certificate", cert, err);
    return rc ? rc : read_pem(cfg->tls_key_file, "key", key, err);
}

int http_server_start(cordon_t *db, const char *data_dir, const http_config_t *cfg, FILE *out,
                      http_server_t **srvp, cdn_err_t *err)
{
    http_server_t *srv = cdn_calloc(1, sizeof *srv);
    char *tls_cert = NULL, *tls_key = NULL;
    struct sockaddr_in6 a6;
    struct sockaddr_in a4;
    struct sockaddr *sa;
    char host[128];
    unsigned port = 0, threads;
    int rc, opened = 0;
    if (!srv)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    if ((rc = http_config_listen_parts(cfg->listen, host, sizeof host, &port, err)) != 0)
        goto fail;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    if (inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)port);
        sa = (struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)port);
        sa = (struct sockaddr *)&a6;
    } else {
        rc = cdn_err_set(err, CDN_ERR_INVALID,
                         "listen address \"%s\": give a numeric IPv4 or IPv6 address and a port "
                         "(127.0.0.1:9200, [::1]:9200)",
                         cfg->listen);
        goto fail;
    }
    if ((rc = http_ctx_open(&srv->ctx, db, data_dir, cfg, out, err)) != 0)
        goto fail;
    opened = 1;
    /* threads 0 (the default): a thread per connection. A pool of threads pins each connection
     * to the thread that accepted it, and one thread accepts most of a burst, so with few
     * keep-alive clients one core served them all (measured: one worker at 95%, the other
     * idle, users served 15x apart). */
    threads = cfg->threads;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                     (sa->sa_family == AF_INET6 ? MHD_USE_IPv6 : 0) |
                     (threads ? MHD_USE_EPOLL : MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL);
    if (cfg->tls_cert_file[0] && (rc = tls_load(cfg, &tls_cert, &tls_key, err)) != 0)
        goto fail;
    struct MHD_OptionItem tls[3] = {{MHD_OPTION_END, 0, NULL}};
    if (tls_cert) { /* HTTPS only: a plain request on this port fails the handshake */
        flags |= MHD_USE_TLS;
        tls[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, tls_cert};
        tls[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, tls_key};
    }
    srv->d = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR, sa,
        MHD_OPTION_THREAD_POOL_SIZE, threads ? threads : 0u, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)HTTP_CONNECTIONS_MAX, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)cfg->idle_timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)cfg->max_header_bytes * 2, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, MHD_OPTION_UNESCAPE_CALLBACK, on_unescape, NULL,
        MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
    cdn_free(tls_cert); /* libmicrohttpd has parsed them */
    cdn_free(tls_key);
    tls_cert = tls_key = NULL;
    if (!srv->d && cfg->tls_cert_file[0]) {
        rc = cdn_err_set(err, CDN_ERR_INVALID,
                         "cannot serve HTTPS on %s with %s and %s: is the key that of the "
                         "certificate, both in PEM, and the port free?",
                         cfg->listen, cfg->tls_cert_file, cfg->tls_key_file);
        goto fail;
    }
    if (!srv->d) {
        rc = cdn_err_set(err, CDN_ERR_IO,
                         "cannot listen on %s (is the port in use, or the address not this "
                         "machine's?)",
                         cfg->listen);
        goto fail;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = di ? di->port : port;
    *srvp = srv;
    return CDN_OK;
fail:
    cdn_free(tls_cert);
    cdn_free(tls_key);
    if (opened)
        http_ctx_close(&srv->ctx);
    cdn_free(srv);
    return rc;
}

unsigned http_server_port(const http_server_t *srv)
{
    return srv->port;
}

void http_server_stop(http_server_t *srv)
{
    if (!srv)
        return;
    atomic_store(&srv->ctx.stopping, 1);
    MHD_socket s = MHD_quiesce_daemon(srv->d); /* no new connections */
    /* Let requests in flight finish (writes included), for up to the request timeout. */
    for (unsigned i = 0;
         i < srv->ctx.cfg.request_timeout_s * 100 && atomic_load(&srv->ctx.in_flight) > 0; i++)
        usleep(10000);
    MHD_stop_daemon(srv->d);
    if (s != MHD_INVALID_SOCKET)
        close(s);
    http_ctx_close(&srv->ctx);
    cdn_free(srv);
}
