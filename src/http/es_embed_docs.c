/* es_embed_docs.c: embedding documents at ingest. An index created with
 * index.cordon.embed_documents (and an embedding_url) fills the vector of every document that
 * arrives without one from its text: the values of index.cordon.embed_fields, or of every text
 * field of the mapping, one a line, cut at ES_EMBED_TEXT_MAX bytes. The texts of a request go
 * to the endpoint EMBED_BATCH_MAX at a time; when a call fails, each document it carried fails
 * with the endpoint's reason (never stored without the vector it was meant to have), and the
 * others go on. Relies on http/embed.h, http/es_paths.h and jansson. */
#include "base/buf.h"
#include "base/mem.h"
#include "http/embed.h"
#include "http/es_mapping.h"
#include "http/es_paths.h"

#include <stdio.h>
#include <string.h>

/* Appends value's text (a string, or the strings of an array) to b, a line each. */
static void add_text(cdn_buf_t *b, json_t *v)
{
    size_t i;
    json_t *x;
    if (json_is_string(v)) {
        if (b->len)
            cdn_buf_puts(b, "\n");
        cdn_buf_append(b, json_string_value(v), json_string_length(v));
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x) add_text(b, x);
    }
}

/* Cuts b to at most max bytes, at the start of a UTF-8 character. */
static void cut_utf8(cdn_buf_t *b, size_t max)
{
    if (b->len <= max)
        return;
    size_t n = max;
    while (n > 0 && ((unsigned char)b->data[n] & 0xC0) == 0x80)
        n--;
    b->len = n;
    b->data[n] = '\0';
}

/* The text to embed for source, or NULL when it has none (then it stays without a vector). */
static char *text_of(const es_index_t *ix, json_t *source)
{
    cdn_buf_t b;
    cdn_buf_init(&b, ES_EMBED_TEXT_MAX + 4096);
    if (json_is_array(ix->embed_fields)) {
        size_t i;
        json_t *f;
        json_array_foreach(ix->embed_fields, i, f) if (json_is_string(f))
            add_text(&b, es_path_get(source, json_string_value(f)));
    } else {
        for (size_t i = 0; i < ix->info.n_text_fields; i++)
            add_text(&b, es_path_get(source, ix->info.text_fields[i]));
    }
    cut_utf8(&b, ES_EMBED_TEXT_MAX);
    if (!b.len) {
        cdn_buf_free(&b);
        return NULL;
    }
    return b.data; /* owned by the caller, freed with cdn_free */
}

/* Embeds texts[0..n) (the documents at), setting each one's vector; a failed call marks them. */
static void embed_batch(const es_index_t *ix, json_t *const *sources, const size_t *at,
                        char **texts, size_t n, unsigned char *failed, char *why, size_t whysz)
{
    embed_endpoint_t ep = {ix->embed_url, ix->embed_model, ix->embed_timeout_ms};
    float *v = cdn_malloc(n * ix->info.dim * sizeof *v);
    char reason[512] = "out of memory embedding documents";
    int rc =
        v ? embed_texts(&ep, (const char *const *)texts, n, ix->info.dim, v, reason, sizeof reason)
          : -1;
    for (size_t i = 0; i < n; i++) {
        json_t *vec = rc ? NULL : json_array();
        for (uint32_t d = 0; vec && d < ix->info.dim; d++)
            json_array_append_new(vec, json_real(v[i * ix->info.dim + d]));
        if (!vec || es_path_set(sources[at[i]], ix->vector_field, vec) != 0) {
            failed[at[i]] = 1;
            snprintf(why, whysz, "%s", reason);
        }
    }
    cdn_free(v);
}

size_t es_embed_sources(const es_index_t *ix, json_t *const *sources, size_t n,
                        unsigned char *failed, char *why, size_t whysz)
{
    char *texts[EMBED_BATCH_MAX];
    size_t at[EMBED_BATCH_MAX], k = 0, nfailed = 0;
    if (!ix->embed_documents || !ix->embed_url || !ix->vector_field || !ix->info.dim)
        return 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && !failed[i] && sources[i]) {
            json_t *have = es_path_get(sources[i], ix->vector_field);
            char *t = have && !json_is_null(have) ? NULL : text_of(ix, sources[i]);
            if (t) {
                texts[k] = t;
                at[k++] = i;
            }
        }
        if (k && (k == EMBED_BATCH_MAX || i == n)) {
            embed_batch(ix, sources, at, texts, k, failed, why, whysz);
            for (size_t j = 0; j < k; j++)
                cdn_free(texts[j]);
            k = 0;
        }
    }
    for (size_t i = 0; i < n; i++)
        nfailed += failed[i];
    return nfailed;
}
