/* fstats.h: BM25 statistics of one text field (documents N, average length, document
 * frequencies) over a set of documents, such as a subject's readable set.
 * Relies on invidx.h (postings, field lengths, live set) and CRoaring. */
#ifndef CDN_FSTATS_H
#define CDN_FSTATS_H

#include <roaring/roaring.h>
#include <stdint.h>

#include "text/invidx.h"

/* Statistics of ix restricted to a document set. Counting is done against whichever of the
 * set's documents or the others is smaller (`subtract` then says the count is taken off the
 * field's own), so cost follows min(readable, hidden), and a set covering every live document
 * costs nothing beyond the first intersection. */
typedef struct fstats {
    const invidx_t *ix;
    uint64_t n_docs; /* documents of the set with at least one term in the field */
    double avgdl;    /* their average field length (1 when there are none) */
    uint32_t *cnt;   /* sorted docs counted against (owned); NULL = the field's own */
    uint64_t n_cnt;
    roaring_bitmap_t *side;   /* the same docs as a bitmap (owned), for lists that have one */
    int subtract;             /* df = ix's df - |postings ∩ cnt| instead of |postings ∩ cnt| */
    struct fstats_memo *memo; /* the df counted so far (owned), when shared: fstats_memo_start */
} fstats_t;

/* Computes the statistics of ix over the documents of over (NULL = the whole field: its live
 * documents). 0 or CDN_ERR_NOMEM; release with fstats_free. */
int fstats_init(fstats_t *fs, const invidx_t *ix, const roaring_bitmap_t *over);
void fstats_free(fstats_t *fs);

/* Makes fstats_df keep what it counts, for statistics shared by many searches (fscache): a
 * term's df is then counted once (up to FSTATS_MEMO terms; later ones are counted each time).
 * Thread-safe. 0 or CDN_ERR_NOMEM. */
#define FSTATS_MEMO 256
int fstats_memo_start(fstats_t *fs);
/* Bytes fs holds (its sets, doc array and memo), for a cache's budget. */
size_t fstats_bytes(const fstats_t *fs);

/* Document frequency of term tid among the documents the statistics cover. */
uint64_t fstats_df(const fstats_t *fs, uint32_t tid);

#endif
