/* embed.c: text to vectors through an embedding endpoint that speaks the OpenAI
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

/* Reads answer item i's embedding into out; 0, or -1 with why. */
static int read_vector(const embed_endpoint_t *ep, json_t *v, uint32_t dim, float *out, char *why,
                       size_t whysz)
{
    if (!json_is_array(v)) {
        snprintf(why, whysz,
                 "the embedding endpoint %.200s answered without data[].embedding (is it an "
                 "OpenAI-compatible /v1/embeddings?)",
                 ep->url);
        return -1;
    }
    if (json_array_size(v) != dim) {
        snprintf(why, whysz,
                 "the embedding endpoint %.200s answered %zu dimensions; the collection's vectors "
                 "have %u",
                 ep->url, json_array_size(v), dim);
        return -1;
    }
    for (uint32_t i = 0; i < dim; i++) {
        json_t *x = json_array_get(v, i);
        if (!json_is_number(x) || !isfinite(json_number_value(x))) {
            snprintf(why, whysz,
                     "the embedding endpoint %.200s answered a value that is not a "
                     "finite number",
                     ep->url);
            return -1;
        }
        out[i] = (float)json_number_value(x);
    }
    return 0;
}

int embed_text(const embed_endpoint_t *ep, const char *text, uint32_t dim, float *out, char *why,
               size_t whysz)
{
    return embed_texts(ep, &text, 1, dim, out, why, whysz);
}

int embed_texts(const embed_endpoint_t *ep, const char *const *texts, size_t n, uint32_t dim,
                float *out, char *why, size_t whysz)
{
    cdn_buf_t resp;
    char *req = NULL;
    long status = 0;
    int rc = -1;
    json_t *j = NULL, *body = NULL, *input = n <= EMBED_BATCH_MAX ? json_array() : NULL;
    for (size_t i = 0; input && i < n; i++)
        if (json_array_append_new(input, json_string(texts[i])) != 0)
            break; /* out of memory, or a text that is not UTF-8: no body, said below */
    /* One text goes as a string, the form every endpoint of the protocol takes. */
    if (input && json_array_size(input) == n)
        body = json_pack("{s:O, s:s}", "input", n == 1 ? json_array_get(input, 0) : input, "model",
                         ep->model && ep->model[0] ? ep->model : "default");
    json_decref(input);
    pthread_once(&curl_once, curl_setup);
    cdn_buf_init(&resp, EMBED_RESPONSE_MAX);
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (!c || !h || !body || !(req = json_dumps(body, JSON_COMPACT))) {
        snprintf(why, whysz, "%s calling the embedding endpoint %.200s",
                 n > EMBED_BATCH_MAX ? "too many texts" : "out of memory (or a text not UTF-8)",
                 ep->url);
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
    json_t *data = json_object_get(j, "data"), *item;
    size_t i;
    if (json_array_size(data) != n) {
        snprintf(why, whysz,
                 "the embedding endpoint %.200s answered %zu embeddings for %zu texts (is it an "
                 "OpenAI-compatible /v1/embeddings?)",
                 ep->url, json_array_size(data), n);
        goto out;
    }
    json_array_foreach(data, i, item)
    {
        /* An answer may name each item's place ("index"), as the protocol has it. */
        json_t *at = json_object_get(item, "index");
        size_t slot = json_is_integer(at) ? (size_t)json_integer_value(at) : i;
        if (slot >= n || (json_is_integer(at) && json_integer_value(at) < 0)) {
            snprintf(why, whysz,
                     "the embedding endpoint %.200s answered an item index out of range", ep->url);
            goto out;
        }
        if (read_vector(ep, json_object_get(item, "embedding"), dim, out + slot * dim, why, whysz))
            goto out;
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
