/* request.c: turning what arrived into a routed request and its answer, apart from the socket:
 * the path split into percent-decoded segments, the query-string arguments decoded into the
 * request's own buffer, and the checks made before dispatch (an oversized body, a path past the
 * bounds). server.c calls it for every request libmicrohttpd hands over; the HTTP fuzz target
 * calls it the same way without a socket. Relies on libmicrohttpd's unescaping and router.c. */
#include "base/utf8.h"
#include "http/es.h"

#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

static int utf8(const char *s)
{
    size_t at;
    return cdn_utf8_valid(s, strlen(s), &at);
}

static char *arg_copy(http_req_t *r, const char *s)
{
    size_t n = strlen(s) + 1;
    if (n > sizeof r->argbuf - r->argused)
        return NULL;
    char *d = r->argbuf + r->argused;
    memcpy(d, s, n);
    MHD_http_unescape(d);
    r->argused += strlen(d) + 1;
    return d;
}

int http_req_add_arg(http_req_t *r, const char *key, const char *value)
{
    char *k, *v;
    if (r->nargs == HTTP_ARGS_MAX || !(k = arg_copy(r, key)) ||
        !(v = arg_copy(r, value ? value : "")))
        return -1;
    if (!utf8(k) || !utf8(v))
        r->bad_utf8 = 1; /* answered 400: a reply could not even quote it */
    r->args[r->nargs].name = k;
    r->args[r->nargs].value = v;
    r->nargs++;
    return 0;
}

/* A path segment is decoded only after the path is split, so an id holding "%2F" stays one
 * segment; -2 when one is not UTF-8 once decoded (names and ids are UTF-8 strings). */
int http_req_set_path(http_req_t *r, const char *url)
{
    char *p;
    if (strlen(url) >= HTTP_PATH_MAX)
        return -1;
    snprintf(r->segbuf, sizeof r->segbuf, "%s", url);
    snprintf(r->path, sizeof r->path, "%s", url);
    MHD_http_unescape(r->path); /* for messages */
    if (!utf8(r->path))
        snprintf(r->path, sizeof r->path, "%s", url); /* quoted as sent, still escaped */
    p = r->segbuf;
    r->nseg = 0;
    while (*p == '/')
        p++;
    while (*p) {
        char *slash = strchr(p, '/');
        if (slash)
            *slash = '\0';
        if (*p) {
            if (r->nseg == HTTP_SEGS_MAX)
                return -1;
            MHD_http_unescape(p);
            if (!utf8(p))
                return -2;
            r->seg[r->nseg++] = p;
        }
        if (!slash)
            break;
        p = slash + 1;
        while (*p == '/')
            p++;
    }
    return 0;
}

void http_answer(http_ctx_t *ctx, http_req_t *req, const char *url, int too_big, http_resp_t *resp)
{
    int rc = 0;
    if (too_big)
        es_error(resp, 413, "content_too_long_exception",
                 "the request body is larger than %zu bytes (max_body_bytes)",
                 ctx->cfg.max_body_bytes);
    else if ((rc = http_req_set_path(req, url)) == -1)
        es_error(resp, 400, "illegal_argument_exception",
                 "the path is longer or has more segments than the server accepts");
    else if (rc != 0 || req->bad_utf8)
        es_error(resp, 400, "illegal_argument_exception",
                 "the %s is not valid UTF-8 once percent-decoded", rc ? "path" : "query string");
    else {
        /* Counted while answered: a stop waits for these, not for requests still arriving
         * (libmicrohttpd closes those). */
        atomic_fetch_add(&ctx->in_flight, 1);
        http_dispatch(ctx, req, resp);
        atomic_fetch_sub(&ctx->in_flight, 1);
    }
}
