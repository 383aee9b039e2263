/* bench_text_data.h: BEIR-layout corpus loading for bench_text (corpus.jsonl, queries.jsonl,
 * qrels/test.tsv, use-lite fvecs) and the quality metrics nDCG@10 and recall@100. */
#ifndef CDN_BENCH_TEXT_DATA_H
#define CDN_BENCH_TEXT_DATA_H

#include <roaring/roaring.h>
#include <stddef.h>
#include <stdint.h>

typedef struct btd_qrel {
    uint32_t doc; /* internal doc index */
    int rel;
} btd_qrel_t;

typedef struct btd {
    size_t ndocs, nq;
    char **doc_id, **title, **text;
    char **q_id, **q_text;
    btd_qrel_t **qrels; /* per query, nqrels[q] entries */
    size_t *nqrels;
    float *dvec, *qvec; /* use-lite vectors (row = doc/query index), NULL when absent */
    uint32_t dim;
    int *dvec_ok, *qvec_ok;
} btd_t;

/* A generated corpus (labelled "generated"): n documents with the words of `cordon bench load`
 * (a Zipf law over 1,024 made-up words, bench_load_data.h) and nq queries of 2, 3 and 4 of the
 * commonest 256 words in turn; no judgements, no vectors. 0 or -1; free with btd_free. */
int btd_generate(size_t n, size_t nq, uint64_t seed, btd_t *d);

/* Loads dir; 0 or -1 with a message on stderr. Free with btd_free. */
int btd_load(const char *dir, btd_t *d);
void btd_free(btd_t *d);

/* nDCG@10 (linear gain, as pytrec_eval) and recall@100 of a ranking for query q, counting only
 * judged docs in readable (NULL = all). Returns 0 when the query has no readable judged
 * relevant doc (then it is left out of the mean). */
int btd_eval(const btd_t *d, size_t q, const uint32_t *ranked, size_t n,
             const roaring_bitmap_t *readable, double *ndcg10, double *recall100);

#endif
