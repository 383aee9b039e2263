/* invidx.h: the inverted index of one text field: dictionary, postings (doc ids, term
 * frequencies, varint positions, per-block maxima for pruning), field lengths, deletes.
 * Relies on CRoaring for the field's live-document set and on textio.h for persistence. */
#ifndef CDN_INVIDX_H
#define CDN_INVIDX_H

#include <roaring/roaring.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "text/analyzer.h"
#include "text/textio.h"

#define INVIDX_BLOCK 128   /* postings per block for block-max upper bounds */
#define INVIDX_IMPACTS 4   /* (tf, dl) pairs kept per block and per list */
#define INVIDX_RB_MIN 4096 /* postings from which a list keeps its docs as a bitmap too */

/* A bound on BM25 scores of a set of postings whatever k1, b and avgdl are: every posting
 * (tf, dl) of the set is dominated by one entry (tf' >= tf and dl' <= dl). The entries are the
 * set's Pareto frontier, sorted by dl; where it has more than INVIDX_IMPACTS points neighbours
 * are merged into one that dominates both (the larger tf, the smaller dl). Unused: tf 0. The
 * largest score over the entries bounds every posting's, and stays close to the true maximum,
 * where the pair (largest tf, smallest dl) of different postings is far above it. */
typedef struct invidx_impact {
    uint32_t tf, dl;
} invidx_impact_t;

/* The postings of one term, sorted by doc id. Deleted documents' postings stay until the list
 * is compacted (when a quarter of it is dead); readers skip them through the live set. */
typedef struct invidx_plist {
    uint32_t *docs;
    uint32_t *tfs;
    uint32_t *poff;                       /* byte offset of posting i's positions in pos */
    uint8_t *pos;                         /* per posting: tf varints, gaps between positions */
    invidx_impact_t *bimp;                /* per block INVIDX_IMPACTS entries: the block's bound */
    invidx_impact_t limp[INVIDX_IMPACTS]; /* the whole list's bound */
    /* The docs of a list of at least INVIDX_RB_MIN postings (dead ones included) as a bitmap,
     * so that counting them in a document set is a bitmap intersection (fstats); NULL below
     * that, or when it could not be allocated (counting then merges the arrays). */
    roaring_bitmap_t *rb;
    uint32_t n, cap;
    uint32_t df; /* live postings */
    size_t pos_len, pos_cap;
} invidx_plist_t;

typedef struct invidx {
    /* dictionary: term bytes in `terms`, open-addressing hash of term id + 1 */
    char *terms;
    size_t terms_len, terms_cap;
    uint32_t *term_off, *term_len;
    uint32_t nterms;
    size_t term_cap;
    uint32_t *hash;
    size_t hcap;
    invidx_plist_t *pl;
    /* documents: field length and forward term list by doc id */
    uint32_t *dl;
    uint32_t *fwd_off, *fwd_n;
    size_t doc_cap;
    uint32_t *fwd;
    size_t fwd_len, fwd_cap;
    roaring_bitmap_t *live; /* live docs with at least one term in this field */
    roaring_bitmap_t *dead; /* deleted docs whose postings may remain */
    uint64_t doc_count;     /* cardinality of live */
    uint64_t sum_dl;        /* total length over live docs */
    uint64_t dead_postings; /* postings of deleted docs still stored */
    uint64_t gen;           /* changes with every add, delete and compaction (caches' stamp) */
} invidx_t;

/* Cursor over one posting list. */
typedef struct invidx_cursor {
    const invidx_plist_t *pl;
    uint32_t i;
} invidx_cursor_t;

#define INVIDX_END UINT32_MAX

/* Starts an empty index; 0 or CDN_ERR_NOMEM. Release with invidx_destroy. */
int invidx_init(invidx_t *ix);
void invidx_destroy(invidx_t *ix);

/* Adds doc's terms (from analysis; positions as given). A doc with zero tokens is not indexed.
 * Returns 0, CDN_ERR_EXISTS (doc already live in this field: delete it first) or NOMEM; after
 * NOMEM doc may be live with some of its terms, and invidx_delete takes back what went in. */
int invidx_add(invidx_t *ix, uint32_t doc, const analyzer_tokens_t *toks);
/* Removes doc (no-op if absent); its postings become dead until compaction. 0 or NOMEM. */
int invidx_delete(invidx_t *ix, uint32_t doc);
/* Number of dead postings still stored (0 means readers need no live-set check). */
uint64_t invidx_dead_postings(const invidx_t *ix);
/* Drops every dead posting now (e.g. after a bulk delete); the dead set is then empty. */
void invidx_compact(invidx_t *ix);

/* Looks a term up; 0 with *tid, or CDN_ERR_NOT_FOUND. */
int invidx_lookup(const invidx_t *ix, const char *term, size_t len, uint32_t *tid);
/* Term bytes of tid (not NUL-terminated) and their length. */
const char *invidx_term(const invidx_t *ix, uint32_t tid, size_t *len);

/* BM25 statistics: average field length over live docs (1 when empty). */
double invidx_avgdl(const invidx_t *ix);

static inline uint32_t invidx_cur_doc(const invidx_cursor_t *c)
{
    return c->i < c->pl->n ? c->pl->docs[c->i] : INVIDX_END;
}
/* Adds posting (tf, dl) to the bound f (INVIDX_IMPACTS entries). */
void invidx_impact_add(invidx_impact_t *f, uint32_t tf, uint32_t dl);

/* Moves c to the first posting with doc >= target (galloping); returns its doc or INVIDX_END.*/
uint32_t invidx_cur_seek(invidx_cursor_t *c, uint32_t target);
/* Decodes the positions of the current posting into out (capacity >= its tf). */
void invidx_cur_positions(const invidx_cursor_t *c, uint32_t *out);

/* Appends ix to w / reads it back from r (not re-analyzing). invidx_load returns 0,
 * CDN_ERR_CORRUPT or CDN_ERR_NOMEM; on failure ix is left destroyed. */
void invidx_save(const invidx_t *ix, textio_w_t *w);
int invidx_load(invidx_t *ix, textio_r_t *r);

#endif
