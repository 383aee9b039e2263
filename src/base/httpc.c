/* httpc.c: a JSON POST over libcurl with timeouts and a bounded answer (httpc.h). A new easy
 * handle per call keeps calls independent across threads; the services this talks to are
 * local or close, so connection reuse is left to a later need. */
#include "base/httpc.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_setup(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    cdn_buf_t *b = ctx;
    return cdn_buf_append(b, p, size * n) == 0 ? size * n : 0; /* past the bound: abort */
}

int cdn_httpc_post(const cdn_httpc_req_t *req, long *status, cdn_buf_t *answer, int *timed_out,
                   char *why, size_t whysz)
{
    int rc = -1;
    *status = 0;
    *timed_out = 0;
    cdn_buf_init(answer, req->max_answer);
    pthread_once(&curl_once, curl_setup);
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (!c || !h) {
        snprintf(why, whysz, "out of memory calling %s", req->what);
        goto out;
    }
    curl_easy_setopt(c, CURLOPT_URL, req->url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(req->connect_ms ? req->connect_ms : req->total_ms));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)req->total_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for timeouts */
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    CURLcode cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        *timed_out = cc == CURLE_OPERATION_TIMEDOUT;
        snprintf(why, whysz, "%s did not answer: %s", req->what,
                 cc == CURLE_WRITE_ERROR ? "the answer is larger than the limit"
                                         : curl_easy_strerror(cc));
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    rc = 0;
out:
    curl_slist_free_all(h);
    if (c)
        curl_easy_cleanup(c);
    return rc;
}
