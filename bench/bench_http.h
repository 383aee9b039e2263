/* bench_http.h: a small, bounded HTTP/1.1 client for the benchmarks that talk to `cordon serve`:
 * one keep-alive connection per handle, a request with a Content-Length body, a response with a
 * Content-Length body (the server sends no chunked responses; a chunked one is an error).
 * Relies on POSIX sockets (getaddrinfo, send, recv) only. */
#ifndef CDN_BENCH_HTTP_H
#define CDN_BENCH_HTTP_H

#include <stddef.h>

#define BENCH_HTTP_HEAD_MAX (16 * 1024) /* a response's status line and headers */
#define BENCH_HTTP_BODY_MAX ((size_t)256 << 20)

typedef struct bench_http {
    int fd; /* -1 while not connected */
    char host[256], port[16];
    double timeout_s; /* for each send and receive; 0 = 300 s */
    char *in;         /* received bytes: the last response, NUL-terminated after its body */
    size_t in_len, in_cap;
    size_t served; /* responses read on this connection */
    char err[256]; /* what went wrong, after a failed call */
} bench_http_t;

typedef struct bench_http_resp {
    int status;
    const char *body; /* inside the handle's buffer: valid until its next request */
    size_t body_len;
} bench_http_resp_t;

/* Splits "http://HOST:PORT" (HOST may be [v6]) into host and port; 0, or -1 when the URL is not
 * of that shape. */
int bench_http_parse_url(const char *url, char *host, size_t host_cap, char *port, size_t port_cap);

/* Prepares c for host:port without connecting (the first request connects). */
void bench_http_init(bench_http_t *c, const char *host, const char *port);

/* Connects now; 0, or -1 with c->err. */
int bench_http_connect(bench_http_t *c);

/* Sends one request (auth: the whole Authorization value or NULL; body may be NULL) and reads
 * its response into *r. A kept-alive connection the server closed before answering is
 * reconnected and the request sent again, once. 0, or -1 with c->err (the connection is then
 * closed; the next request reconnects). */
int bench_http_request(bench_http_t *c, const char *method, const char *path, const char *auth,
                       const char *body, size_t body_len, bench_http_resp_t *r);

void bench_http_close(bench_http_t *c);
/* Closes the connection and frees the buffer. */
void bench_http_free(bench_http_t *c);

/* Standard base64 of n bytes into out (4 * ((n + 2) / 3) + 1 bytes, NUL-terminated). */
void bench_http_b64(const unsigned char *in, size_t n, char *out);

#endif
