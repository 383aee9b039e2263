/* embed.c: query text to a vector through an embedding endpoint that speaks the OpenAI
 * protocol (POST /v1/embeddings: what llama.cpp's server, Ollama, vLLM,
 * text-embeddings-inference and cordon's local embedder serve), with a connect and a total
 * timeout, a bounded response, and an error naming the endpoint for every failure: never a
 * silent fallback. Relies on libcurl and jansson. */
#include "http/embed.h"
#include "base/buf.h"

#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

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

int embed_text(const embed_endpoint_t *ep, const char *text, uint32_t dim, float *out, char *why,
               size_t whysz)
{
    cdn_buf_t resp;
    char *req = NULL;
    long status = 0;
    int rc = -1;
    json_t *j = NULL, *body = json_pack("{s:s, s:s}", "input", text, "model",
                                        ep->model && ep->model[0] ? ep->model : "default");
    pthread_once(&curl_once, curl_setup);
    cdn_buf_init(&resp, EMBED_RESPONSE_MAX);
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (!c || !h || !body || !(req = json_dumps(body, JSON_COMPACT))) {
        snprintf(why, whysz, "out of memory calling the embedding endpoint %.200s", ep->url);
        goto out;
    }
    curl_easy_setopt(c, CURLOPT_URL, ep->url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, req);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)EMBED_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                     (long)(ep->timeout_ms ? ep->timeout_ms : EMBED_TIMEOUT_MS));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for timeouts */
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    CURLcode cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        snprintf(why, whysz, "the embedding endpoint %.200s did not answer: %s", ep->url,
                 cc == CURLE_WRITE_ERROR ? "the answer is larger than the limit"
                                         : curl_easy_strerror(cc));
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        snprintf(why, whysz, "the embedding endpoint %.200s answered HTTP %ld", ep->url, status);
        goto out;
    }
    j = json_loadb(resp.data ? resp.data : "", resp.len, 0, NULL);
    json_t *v = json_object_get(json_array_get(json_object_get(j, "data"), 0), "embedding");
    if (!json_is_array(v)) {
        snprintf(why, whysz,
                 "the embedding endpoint %.200s answered without data[0].embedding (is it an "
                 "OpenAI-compatible /v1/embeddings?)",
                 ep->url);
        goto out;
    }
    if (json_array_size(v) != dim) {
        snprintf(why, whysz,
                 "the embedding endpoint %.200s answered %zu dimensions; the collection's vectors "
                 "have %u",
                 ep->url, json_array_size(v), dim);
        goto out;
    }
    for (uint32_t i = 0; i < dim; i++) {
        json_t *x = json_array_get(v, i);
        if (!json_is_number(x) || !isfinite(json_number_value(x))) {
            snprintf(why, whysz,
                     "the embedding endpoint %.200s answered a value that is not a "
                     "finite number",
                     ep->url);
            goto out;
        }
        out[i] = (float)json_number_value(x);
    }
    rc = 0;
out:
    json_decref(j);
    json_decref(body);
    free(req);
    curl_slist_free_all(h);
    if (c)
        curl_easy_cleanup(c);
    cdn_buf_free(&resp);
    return rc;
}
