/* bench_http.c: the benchmarks' HTTP/1.1 client (bench_http.h): blocking sockets with
 * TCP_NODELAY and send/receive timeouts, bounded headers and bodies. Relies on POSIX sockets. */
#include "bench_http.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int fail(bench_http_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(bench_http_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    bench_http_close(c);
    return -1;
}

int bench_http_parse_url(const char *url, char *host, size_t host_cap, char *port, size_t port_cap)
{
    const char *h, *end, *colon;
    if (strncmp(url, "http://", 7))
        return -1;
    h = url + 7;
    end = h + strcspn(h, "/");
    if (*h == '[') { /* [v6]:port */
        const char *close = memchr(h, ']', (size_t)(end - h));
        if (!close || close[1] != ':')
            return -1;
        colon = close + 1;
        h++;
        if ((size_t)(close - h) >= host_cap)
            return -1;
        memcpy(host, h, (size_t)(close - h));
        host[close - h] = '\0';
    } else {
        colon = memchr(h, ':', (size_t)(end - h));
        if (!colon || colon == h || (size_t)(colon - h) >= host_cap)
            return -1;
        memcpy(host, h, (size_t)(colon - h));
        host[colon - h] = '\0';
    }
    size_t np = (size_t)(end - colon - 1);
    if (np == 0 || np >= port_cap || strspn(colon + 1, "0123456789") < np ||
        (*end && strcmp(end, "/")))
        return -1;
    memcpy(port, colon + 1, np);
    port[np] = '\0';
    return 0;
}

void bench_http_init(bench_http_t *c, const char *host, const char *port)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    snprintf(c->host, sizeof c->host, "%s", host);
    snprintf(c->port, sizeof c->port, "%s", port);
}

int bench_http_connect(bench_http_t *c)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *a;
    double t = c->timeout_s > 0 ? c->timeout_s : 300;
    struct timeval tv = {(time_t)t, (suseconds_t)((t - (time_t)t) * 1e6)};
    int one = 1, rc;
    bench_http_close(c);
    if ((rc = getaddrinfo(c->host, c->port, &hints, &res)) != 0)
        return fail(c, "cannot resolve %s: %s", c->host, gai_strerror(rc));
    for (a = res; a; a = a->ai_next) {
        c->fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (c->fd < 0)
            continue;
        if (connect(c->fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        close(c->fd);
        c->fd = -1;
    }
    freeaddrinfo(res);
    if (c->fd < 0)
        return fail(c, "cannot connect to %s:%s: %s", c->host, c->port, strerror(errno));
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    c->served = 0;
    c->in_len = 0;
    return 0;
}

void bench_http_close(bench_http_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->in_len = 0;
}

void bench_http_free(bench_http_t *c)
{
    bench_http_close(c);
    free(c->in);
    c->in = NULL;
    c->in_cap = 0;
}

static int send_all(int fd, const char *p, size_t n, int more)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Makes room for want more bytes in c->in (and a NUL); -1 past the bounds. */
static int reserve(bench_http_t *c, size_t want)
{
    size_t need = c->in_len + want + 1, cap = c->in_cap ? c->in_cap : 64 * 1024;
    if (need > BENCH_HTTP_HEAD_MAX + BENCH_HTTP_BODY_MAX + 1)
        return -1;
    if (need <= c->in_cap)
        return 0;
    while (cap < need)
        cap *= 2;
    char *p = realloc(c->in, cap);
    if (!p)
        return -1;
    c->in = p;
    c->in_cap = cap;
    return 0;
}

/* Receives at least one more byte; 1 read, 0 the peer closed, -1 an error. */
static int recv_some(bench_http_t *c)
{
    if (reserve(c, 64 * 1024))
        return -1;
    for (;;) {
        ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len - 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r > 0)
            c->in_len += (size_t)r;
        return r > 0 ? 1 : r == 0 ? 0 : -1;
    }
}

/* The value of header name in the header block [h, end), or NULL; *n its length. */
static const char *header(const char *h, const char *end, const char *name, size_t *n)
{
    size_t nl = strlen(name);
    while (h < end) {
        const char *eol = memchr(h, '\n', (size_t)(end - h));
        if (!eol)
            eol = end;
        if ((size_t)(eol - h) > nl && h[nl] == ':' && !strncasecmp(h, name, nl)) {
            const char *v = h + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            *n = (size_t)(eol - v);
            while (*n && (v[*n - 1] == '\r' || v[*n - 1] == ' '))
                (*n)--;
            return v;
        }
        h = eol + 1;
    }
    return NULL;
}

/* Reads one response. *closed_early: the peer closed before sending any byte of it. */
static int read_response(bench_http_t *c, bench_http_resp_t *r, int head, int *closed_early)
{
    char *eoh = NULL;
    size_t hl, n = 0;
    *closed_early = 0;
    c->in_len = 0;
    while (!(eoh = c->in_len ? memmem(c->in, c->in_len, "\r\n\r\n", 4) : NULL)) {
        if (c->in_len > BENCH_HTTP_HEAD_MAX)
            return fail(c, "the response's headers pass %d bytes", BENCH_HTTP_HEAD_MAX);
        int got = recv_some(c);
        if (got <= 0) {
            *closed_early = c->in_len == 0 && (got == 0 || errno == ECONNRESET);
            return fail(c, "%s",
                        got == 0 ? "the server closed the connection"
                                 : "receiving the response failed or timed out");
        }
    }
    hl = (size_t)(eoh - c->in) + 4;
    if (c->in_len < 12 || strncmp(c->in, "HTTP/1.", 7) || c->in[8] != ' ')
        return fail(c, "not an HTTP/1.x status line: %.40s", c->in);
    r->status = (int)strtol(c->in + 9, NULL, 10);
    const char *te = header(c->in, eoh, "Transfer-Encoding", &n);
    if (te && n)
        return fail(c,
                    "the response uses Transfer-Encoding %.*s (this client reads "
                    "Content-Length bodies only)",
                    (int)n, te);
    const char *cl = header(c->in, eoh, "Content-Length", &n);
    size_t len = cl ? (size_t)strtoull(cl, NULL, 10) : 0;
    if (!cl && !head && r->status != 204 && r->status != 304 && r->status >= 200)
        return fail(c, "the response (status %d) has no Content-Length", r->status);
    if (head)
        len = 0;
    if (len > BENCH_HTTP_BODY_MAX)
        return fail(c, "the response body of %zu bytes passes the client's bound", len);
    while (c->in_len < hl + len) {
        int got = recv_some(c);
        if (got <= 0)
            return fail(c, "the connection ended %zu bytes into a body of %zu", c->in_len - hl,
                        len);
    }
    if (c->in_len > hl + len)
        return fail(c, "the server sent %zu bytes past the response", c->in_len - hl - len);
    c->in[hl + len] = '\0';
    r->body = c->in + hl;
    r->body_len = len;
    eoh = c->in + hl - 4; /* reading the body may have moved c->in */
    const char *conn = header(c->in, eoh, "Connection", &n);
    c->served++;
    if (conn && n == 5 && !strncasecmp(conn, "close", 5)) {
        close(c->fd); /* keep the body readable: only the socket goes */
        c->fd = -1;
    }
    return 0;
}

int bench_http_request(bench_http_t *c, const char *method, const char *path, const char *auth,
                       const char *body, size_t body_len, bench_http_resp_t *r)
{
    char head[2048];
    int hn = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: %s:%s\r\n%s%s%sContent-Type: "
                      "application/%s\r\nContent-Length: %zu\r\n\r\n",
                      method, path, c->host, c->port, auth ? "Authorization: " : "",
                      auth ? auth : "", auth ? "\r\n" : "",
                      strstr(path, "_bulk") ? "x-ndjson" : "json", body ? body_len : 0);
    if (hn < 0 || (size_t)hn >= sizeof head)
        return fail(c, "the request line and headers pass %zu bytes", sizeof head);
    for (int attempt = 0; attempt < 2; attempt++) {
        int reused = c->fd >= 0 && c->served > 0, early = 0;
        if (c->fd < 0 && bench_http_connect(c))
            return -1;
        if (send_all(c->fd, head, (size_t)hn, body && body_len) ||
            (body && body_len && send_all(c->fd, body, body_len, 0))) {
            if (reused && attempt == 0) {
                bench_http_close(c);
                continue;
            }
            return fail(c, "sending the request failed: %s", strerror(errno));
        }
        if (read_response(c, r, !strcmp(method, "HEAD"), &early) == 0)
            return 0;
        if (!(early && reused && attempt == 0))
            return -1;
    }
    return -1;
}

void bench_http_b64(const unsigned char *in, size_t n, char *out)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < n ? in[i + 2] : 0);
        out[o++] = t[v >> 18 & 63];
        out[o++] = t[v >> 12 & 63];
        out[o++] = i + 1 < n ? t[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? t[v & 63] : '=';
    }
    out[o] = '\0';
}
