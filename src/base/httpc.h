/* httpc.h: one JSON POST to an outside service (an embedding endpoint, a policy decision
 * point), with a connect and a total timeout and a bounded answer. Relies on libcurl; the
 * caller parses the answer. Thread-safe: each call uses its own connection. */
#ifndef CDN_HTTPC_H
#define CDN_HTTPC_H

#include "base/buf.h"

#include <stddef.h>

typedef struct cdn_httpc_req {
    const char *url;     /* http:// or https:// (no other scheme is followed) */
    const char *body;    /* sent as application/json */
    unsigned connect_ms; /* 0 = total_ms */
    unsigned total_ms;   /* the whole exchange, connect included; must be > 0 */
    size_t max_answer;   /* bytes of an answer; past it the call fails */
    const char *what;    /* how errors name the service, e.g. "the authorizer \"cerbos\"" */
} cdn_httpc_req_t;

/* POSTs req->body to req->url. Returns 0 with the HTTP status in *status and the answer in
 * *answer (initialised here; the caller frees it with cdn_buf_free, also on failure), or -1
 * with a sentence in why naming the service and what failed (refused, timed out, too large);
 * *timed_out is 1 when the failure was the timeout. */
int cdn_httpc_post(const cdn_httpc_req_t *req, long *status, cdn_buf_t *answer, int *timed_out,
                   char *why, size_t whysz);

#endif
