/* bench_load_data.c: the generated documents, ACLs and bodies of `cordon bench load`
 * (bench_load_data.h). Words follow a Zipf law over 1,024 made-up words so that BM25 queries
 * hit from a handful to most documents. Relies on bench_gen, bench_util and base/buf. */
#include "bench_load_data.h"
#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOCAB 1024
/* Lengths vary, as real documents' do: equal lengths would give many equal BM25 scores. */
#define TITLE_WORDS_MIN 2
#define TITLE_WORDS_MAX 8
#define TEXT_WORDS_MIN 8
#define TEXT_WORDS_MAX 64
#define QUERY_RANKS 256 /* query words come from the 256 commonest */

static const char *const syllables[32] = {"ba",  "ce",  "di",  "fo",  "gu",  "ha",  "je",  "ki",
                                          "lo",  "mu",  "na",  "pe",  "qui", "ro",  "su",  "ta",
                                          "ve",  "wi",  "xo",  "yu",  "za",  "bre", "cla", "dro",
                                          "fli", "gra", "ple", "sto", "tri", "vo",  "zen", "kor"};

/* Word r: two or three syllables, unique for r below 1,024 * 32. */
static void word(unsigned r, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s%s", syllables[r % 32], syllables[(r / 32) % 32],
             r >= 1024 ? syllables[(r / 1024) % 32] : "");
}

/* Draws a rank from Zipf(1) over VOCAB words: the inverse of the harmonic CDF, approximately,
 * which is enough to give common and rare words. */
static unsigned zipf(uint64_t *s)
{
    double h = log((double)VOCAB) + 0.5772156649;
    double u = bench_rng_unit(s) * h;
    double r = exp(u - 0.5772156649) - 1;
    unsigned k = r < 0 ? 0 : (unsigned)r;
    return k >= VOCAB ? VOCAB - 1 : k;
}

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t s = a ^ (b * 0x9e3779b97f4a7c15ull);
    return bench_rng_next(&s);
}

int load_docs_init(load_docs_t *d, char prefix, size_t n, size_t batch, uint32_t dim,
                   double readable, uint64_t seed, const bench_gen_t *gen)
{
    memset(d, 0, sizeof *d);
    *d = (load_docs_t){prefix, n, batch, dim, readable, seed, gen, NULL};
    d->mask = calloc(n ? n : 1, sizeof *d->mask);
    if (!d->mask)
        return CORDON_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = mix(seed ^ 0xac1ull, i);
        for (int j = 0; j < LOAD_SUBJECTS; j++)
            if (bench_rng_unit(&s) < readable)
                d->mask[i] |= 1u << j;
    }
    return 0;
}

void load_docs_free(load_docs_t *d)
{
    free(d->mask);
    d->mask = NULL;
}

void load_subject_name(int s, int full, char *out, size_t cap)
{
    snprintf(out, cap, LOAD_PREFIX "%c%02d", full ? 'f' : 's', s);
}

void load_model_ops(char (*ops)[LOAD_OP_MAX])
{
    static const char grant[] =
        "{\"op\":\"grant\",\"to\":\"%s\",\"to_kind\":\"group\",\"permission\":"
        "{\"resource\":\"collection:*\",\"action\":\"*\"}}";
    char sub[32], grp[32];
    size_t n = 0;
    snprintf(ops[n++], LOAD_OP_MAX, "{\"op\":\"put_group\",\"id\":\"" LOAD_PREFIX "all\"}");
    snprintf(ops[n++], LOAD_OP_MAX, grant, LOAD_PREFIX "all");
    for (int s = 0; s < LOAD_SUBJECTS; s++)
        for (int full = 0; full < 2; full++) {
            load_subject_name(s, full, sub, sizeof sub);
            snprintf(grp, sizeof grp, full ? LOAD_PREFIX "all" : LOAD_PREFIX "g%02d", s);
            snprintf(ops[n++], LOAD_OP_MAX, "{\"op\":\"put_subject\",\"id\":\"%s\"}", sub);
            if (!full) {
                snprintf(ops[n++], LOAD_OP_MAX, "{\"op\":\"put_group\",\"id\":\"%s\"}", grp);
                snprintf(ops[n++], LOAD_OP_MAX, grant, grp);
            }
            snprintf(ops[n++], LOAD_OP_MAX,
                     "{\"op\":\"add_member\",\"group\":\"%s\",\"member\":\"%s\"}", grp, sub);
        }
}

size_t load_docs_readable(const load_docs_t *d, int s)
{
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        n += d->mask[i] >> s & 1;
    return n;
}

int load_docs_may_read(const load_docs_t *d, const char *id, size_t id_len, int s, int full)
{
    size_t i = 0;
    if (id_len < 2 || id_len > 20 || id[0] != d->prefix)
        return 0;
    for (size_t k = 1; k < id_len; k++) {
        if (id[k] < '0' || id[k] > '9')
            return 0;
        i = i * 10 + (size_t)(id[k] - '0');
    }
    if (i >= d->n || (id_len > 2 && id[1] == '0'))
        return 0;
    return full || (d->mask[i] >> s & 1);
}

static char *words(uint64_t *s, int n)
{
    char *out = malloc((size_t)n * 12 + 1), w[16];
    size_t at = 0;
    if (!out)
        return NULL;
    for (int k = 0; k < n; k++) {
        word(zipf(s), w, sizeof w);
        at += (size_t)snprintf(out + at, 13, "%s%s", k ? " " : "", w);
    }
    out[at] = '\0';
    return out;
}

void load_doc_words(uint64_t seed, size_t i, char **title, char **text)
{
    uint64_t s = mix(seed ^ 0x7e47ull, i);
    int nt = TITLE_WORDS_MIN + (int)(bench_rng_next(&s) % (TITLE_WORDS_MAX - TITLE_WORDS_MIN + 1));
    int nx = TEXT_WORDS_MIN + (int)(bench_rng_next(&s) % (TEXT_WORDS_MAX - TEXT_WORDS_MIN + 1));
    *title = words(&s, nt);
    *text = words(&s, nx);
}

int load_batch_make(const load_docs_t *d, size_t b, load_batch_t *out)
{
    size_t first = b * d->batch, n = first < d->n ? d->n - first : 0;
    bench_gen_t g = *d->gen; /* a private stream over the shared centres */
    memset(out, 0, sizeof *out);
    if (n > d->batch)
        n = d->batch;
    out->first = first;
    out->n = n;
    out->vectors = malloc((n ? n : 1) * d->dim * sizeof(float));
    out->ids = calloc(n ? n : 1, sizeof *out->ids);
    out->title = calloc(n ? n : 1, sizeof *out->title);
    out->text = calloc(n ? n : 1, sizeof *out->text);
    out->groups = calloc(n ? n : 1, sizeof *out->groups);
    out->allowed = calloc(n ? n : 1, sizeof *out->allowed);
    out->n_allowed = calloc(n ? n : 1, sizeof *out->n_allowed);
    out->metadata = calloc(n ? n : 1, sizeof *out->metadata);
    if (!out->vectors || !out->ids || !out->title || !out->text || !out->groups || !out->allowed ||
        !out->n_allowed || !out->metadata)
        return CORDON_ERR_NOMEM;
    g.s = mix(d->seed, first);
    bench_gen_rows_of(&g, out->vectors, n, NULL);
    for (size_t k = 0; k < n; k++) {
        size_t i = first + k;
        char meta[(LOAD_SUBJECTS + 1) * 20 + 32];
        size_t m = 0, at;
        snprintf(out->ids[k], sizeof out->ids[k], "%c%zu", d->prefix, i);
        load_doc_words(d->seed, i, &out->title[k], &out->text[k]);
        for (int j = 0; j < LOAD_SUBJECTS; j++)
            if (d->mask[i] >> j & 1)
                snprintf(out->groups[k][m++], sizeof out->groups[k][0], LOAD_PREFIX "g%02d", j);
        snprintf(out->groups[k][m++], sizeof out->groups[k][0], LOAD_PREFIX "all");
        at = (size_t)snprintf(meta, sizeof meta, "{\"allowed_groups\":[");
        for (size_t j = 0; j < m; j++) {
            out->allowed[k][j] = out->groups[k][j];
            at += (size_t)snprintf(meta + at, sizeof meta - at, "%s\"%s\"", j ? "," : "",
                                   out->groups[k][j]);
        }
        snprintf(meta + at, sizeof meta - at, "]}");
        out->n_allowed[k] = m;
        out->metadata[k] = strdup(meta);
        if (!out->title[k] || !out->text[k] || !out->metadata[k])
            return CORDON_ERR_NOMEM;
    }
    return 0;
}

void load_batch_free(load_batch_t *bt)
{
    for (size_t k = 0; k < bt->n; k++) {
        if (bt->title)
            free(bt->title[k]);
        if (bt->text)
            free(bt->text[k]);
        if (bt->metadata)
            free(bt->metadata[k]);
    }
    free(bt->vectors);
    free(bt->ids);
    free(bt->title);
    free(bt->text);
    free(bt->groups);
    free(bt->allowed);
    free(bt->n_allowed);
    free(bt->metadata);
    memset(bt, 0, sizeof *bt);
}

int load_buf_unit(cdn_buf_t *b, float v)
{
    char s[16];
    size_t n = 0;
    long q = lrint((double)v * 1e6);
    if (q < 0) {
        s[n++] = '-';
        q = -q;
    }
    if (q > 1000000)
        q = 1000000;
    s[n++] = (char)('0' + q / 1000000);
    s[n++] = '.';
    for (long div = 100000; div; div /= 10)
        s[n++] = (char)('0' + (q / div) % 10);
    return cdn_buf_append(b, s, n);
}

int load_batch_ndjson(const load_docs_t *d, const load_batch_t *bt, cdn_buf_t *out)
{
    int rc = 0;
    for (size_t k = 0; !rc && k < bt->n; k++) {
        const float *v = bt->vectors + k * d->dim;
        rc = cdn_buf_printf(out,
                            "{\"index\":{\"_id\":\"%s\"}}\n{\"title\":\"%s\",\"text\":\"%s\","
                            "\"allowed_groups\":[",
                            bt->ids[k], bt->title[k], bt->text[k]);
        for (size_t j = 0; !rc && j < bt->n_allowed[k]; j++)
            rc = cdn_buf_printf(out, "%s\"%s\"", j ? "," : "", bt->allowed[k][j]);
        rc = rc ? rc : cdn_buf_puts(out, "],\"vector\":[");
        for (uint32_t j = 0; !rc && j < d->dim; j++) {
            if (j)
                rc = cdn_buf_append(out, ",", 1);
            rc = rc ? rc : load_buf_unit(out, v[j]);
        }
        rc = rc ? rc : cdn_buf_puts(out, "]}\n");
    }
    return rc;
}

void load_batch_chunks(const load_batch_t *bt, uint32_t dim, cordon_chunk *chunks,
                       cordon_field *fields)
{
    for (size_t k = 0; k < bt->n; k++) {
        fields[2 * k] = (cordon_field){"title", bt->title[k]};
        fields[2 * k + 1] = (cordon_field){"text", bt->text[k]};
        chunks[k] = (cordon_chunk){.id = bt->ids[k],
                                   .vector = bt->vectors + k * dim,
                                   .fields = &fields[2 * k],
                                   .n_fields = 2,
                                   .metadata_json = bt->metadata[k],
                                   .allowed = bt->allowed[k],
                                   .n_allowed = bt->n_allowed[k]};
    }
}

void load_query_terms(uint64_t seed, size_t i, int n, char *out, size_t cap)
{
    uint64_t s = mix(seed ^ 0x9e7ull, i);
    size_t at = 0;
    char w[16];
    out[0] = '\0';
    for (int k = 0; k < n && at + 16 < cap; k++) {
        word((unsigned)(bench_rng_next(&s) % QUERY_RANKS), w, sizeof w);
        at += (size_t)snprintf(out + at, cap - at, "%s%s", k ? " " : "", w);
    }
}

void load_query_words(uint64_t seed, size_t i, char *out, size_t cap)
{
    load_query_terms(seed, i, 2, out, cap);
}
