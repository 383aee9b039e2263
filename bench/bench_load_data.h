/* bench_load_data.h: the documents, permissions and queries of `cordon bench load`: generated
 * chunks (clustered vectors from bench_gen, title and text from a small Zipf vocabulary), the
 * ACL of every chunk kept in memory so that results are checked without the server, and the
 * request bodies (_bulk NDJSON, knn, match, hybrid searches) and C API chunks built from them.
 * Relies on bench_gen, bench_util, base/buf and cordon.h. */
#ifndef CDN_BENCH_LOAD_DATA_H
#define CDN_BENCH_LOAD_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "bench_gen.h"
#include "cordon.h"

#define LOAD_SUBJECTS 32 /* subjects reading the --readable share; as many read everything */
#define LOAD_QUERIES 256
#define LOAD_PREFIX "load-"

/* A set of generated documents: ids PREFIX<i> for i below n. Document i's vector, words and ACL
 * depend only on the set's seed, i and the batch size, so any thread (or the C API) can build
 * any batch again. */
typedef struct load_docs {
    char prefix;  /* the id's first letter: 'c' for the searched corpus, 'b' for bulk */
    size_t n;     /* documents */
    size_t batch; /* documents a batch; vectors are drawn a batch at a time */
    uint32_t dim;
    double readable; /* share of the documents each partial subject reads */
    uint64_t seed;
    const bench_gen_t *gen; /* the shared centres (read only) */
    uint32_t *mask;         /* n entries: bit s = subject s may read the document */
} load_docs_t;

/* Draws the ACL masks. 0 or CORDON_ERR_NOMEM; free with load_docs_free either way. */
int load_docs_init(load_docs_t *d, char prefix, size_t n, size_t batch, uint32_t dim,
                   double readable, uint64_t seed, const bench_gen_t *gen);
void load_docs_free(load_docs_t *d);

/* Subject names: partial subject s ("load-s07") is in group "load-g07"; full subject s
 * ("load-f07") in "load-all", which every document names. */
void load_subject_name(int s, int full, char *out, size_t cap);

/* The permission model, one operation (JSON) per entry: the subjects, their groups, and every
 * group granted everything on every collection. Fills ops (LOAD_MODEL_OPS entries). */
#define LOAD_MODEL_OPS (LOAD_SUBJECTS * 6 + 2)
#define LOAD_OP_MAX 192
void load_model_ops(char (*ops)[LOAD_OP_MAX]);

/* Readable documents of partial subject s. */
size_t load_docs_readable(const load_docs_t *d, int s);

/* 1 when the hit id may be shown to subject s (full: a full subject): an id of this set whose
 * ACL names s's group. Any other id is a leak. */
int load_docs_may_read(const load_docs_t *d, const char *id, size_t id_len, int s, int full);

/* The documents of batch b in a form both paths take. */
typedef struct load_batch {
    size_t first, n;
    float *vectors;       /* n x dim */
    char (*ids)[24];      /* n */
    char **title, **text; /* n strings each (owned) */
    char (*groups)[LOAD_SUBJECTS + 1][16];
    const char *(*allowed)[LOAD_SUBJECTS + 1];
    size_t *n_allowed;
    char **metadata; /* {"allowed_groups":[...]}, what the server stores beside the text */
} load_batch_t;

/* Builds batch b (documents b * batch onwards). 0 or CORDON_ERR_NOMEM; free with
 * load_batch_free either way. */
int load_batch_make(const load_docs_t *d, size_t b, load_batch_t *out);
void load_batch_free(load_batch_t *bt);

/* The batch as a _bulk body (an index action and a source per document) appended to out. */
int load_batch_ndjson(const load_docs_t *d, const load_batch_t *bt, cdn_buf_t *out);

/* The batch as chunks for cordon_put, pointing into bt: chunks and fields have bt->n and
 * 2 x bt->n entries. */
void load_batch_chunks(const load_batch_t *bt, uint32_t dim, cordon_chunk *chunks,
                       cordon_field *fields);

/* Document i's title and text of a set drawn with seed (malloc'd, NULL when out of memory;
 * the caller frees both). */
void load_doc_words(uint64_t seed, size_t i, char **title, char **text);

/* Query i's words ("w1 w2") for match and hybrid searches; load_query_terms draws n words
 * (the first two are load_query_words'). */
void load_query_words(uint64_t seed, size_t i, char *out, size_t cap);
void load_query_terms(uint64_t seed, size_t i, int n, char *out, size_t cap);

/* Appends a float of a unit vector (|v| <= 1) with 6 decimals: the NDJSON's and the query
 * bodies' number format. */
int load_buf_unit(cdn_buf_t *b, float v);

#endif
