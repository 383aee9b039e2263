/* embed.h: embedding text (a query's, or documents' at ingest) through an OpenAI-compatible
 * endpoint (embed.c).
 * Relies on nothing of the server; thread-safe. */
#ifndef CDN_HTTP_EMBED_H
#define CDN_HTTP_EMBED_H

#include <stddef.h>
#include <stdint.h>

#define EMBED_CONNECT_TIMEOUT_MS 2000
#define EMBED_TIMEOUT_MS 10000                /* total, when the endpoint names none */
#define EMBED_RESPONSE_MAX (64 * 1024 * 1024) /* bytes of an answer */
#define EMBED_BATCH_MAX 64                    /* texts in one request to the endpoint */

typedef struct embed_endpoint {
    const char *url;   /* e.g. http://127.0.0.1:8089/v1/embeddings */
    const char *model; /* sent as "model"; NULL = "default" */
    unsigned timeout_ms;
} embed_endpoint_t;

/* Embeds text into out (dim floats). 0, or -1 with a sentence naming the endpoint and what
 * went wrong in why (down, timed out, not 200, not the protocol, the wrong dimension). */
int embed_text(const embed_endpoint_t *ep, const char *text, uint32_t dim, float *out, char *why,
               size_t whysz);
/* Embeds n texts (at most EMBED_BATCH_MAX) in one request into out (n * dim floats, text i at
 * out + i * dim); returns as embed_text, all or nothing. */
int embed_texts(const embed_endpoint_t *ep, const char *const *texts, size_t n, uint32_t dim,
                float *out, char *why, size_t whysz);

#endif
