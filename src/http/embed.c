/* embed.c: text to vectors through an embedding endpoint that speaks the OpenAI
 * protocol (POST /v1/embeddings: what llama.cpp's server, Ollama, vLLM,
 * text-embeddings-inference and cordon's local embedder serve), with a connect and a total
 * timeout, a bounded response, and an error naming the endpoint for every failure: never a
 * silent fallback. Relies on base/httpc (libcurl) and jansson. */
#include "http/embed.h"
#include "base/buf.h"
#include "base/httpc.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

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
    char *req = NULL, what[256];
    long status = 0;
    int rc = -1, timed_out;
    json_t *j = NULL, *body = NULL, *input = n <= EMBED_BATCH_MAX ? json_array() : NULL;
    for (size_t i = 0; input && i < n; i++)
        if (json_array_append_new(input, json_string(texts[i])) != 0)
            break; /* out of memory, or a text that is not UTF-8: no body, said below */
    /* One text goes as a string, the form every endpoint of the protocol takes. */
    if (input && json_array_size(input) == n)
        body = json_pack("{s:O, s:s}", "input", n == 1 ? json_array_get(input, 0) : input, "model",
                         ep->model && ep->model[0] ? ep->model : "default");
    json_decref(input);
    if (!body || !(req = json_dumps(body, JSON_COMPACT))) {
        cdn_buf_init(&resp, 0);
        snprintf(why, whysz, "%s calling the embedding endpoint %.200s",
                 n > EMBED_BATCH_MAX ? "too many texts" : "out of memory (or a text not UTF-8)",
                 ep->url);
        goto out;
    }
    snprintf(what, sizeof what, "the embedding endpoint %.200s", ep->url);
    cdn_httpc_req_t hr = {.url = ep->url,
                          .body = req,
                          .connect_ms = EMBED_CONNECT_TIMEOUT_MS,
                          .total_ms = ep->timeout_ms ? ep->timeout_ms : EMBED_TIMEOUT_MS,
                          .max_answer = EMBED_RESPONSE_MAX,
                          .what = what};
    if (cdn_httpc_post(&hr, &status, &resp, &timed_out, why, whysz))
        goto out;
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
    cdn_buf_free(&resp);
    return rc;
}
