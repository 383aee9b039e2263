/* fstats.c: BM25 statistics of a text field over a document set, so that chunks a subject
 * cannot read change neither N, nor df, nor avgdl (DESIGN.md, "hidden equals missing").
 * Relies on invidx postings (sorted doc arrays) and CRoaring for the sets. */
#include "text/fstats.h"

#include <string.h>

/* Sum of field lengths over the documents of s (all live in the field). Reads the set in
 * batches: one iterator call per 256 documents instead of one per document. */
static uint64_t sum_lengths(const invidx_t *ix, const roaring_bitmap_t *s)
{
    uint32_t buf[256], got;
    uint64_t sum = 0;
    roaring_uint32_iterator_t it;
    roaring_init_iterator(s, &it);
    while ((got = roaring_read_uint32_iterator(&it, buf, 256)) > 0)
        for (uint32_t i = 0; i < got; i++)
            sum += ix->dl[buf[i]];
    return sum;
}

int fstats_init(fstats_t *fs, const invidx_t *ix, const roaring_bitmap_t *over)
{
    memset(fs, 0, sizeof *fs);
    fs->ix = ix;
    fs->n_docs = ix->doc_count;
    fs->avgdl = invidx_avgdl(ix);
    if (!over)
        return CDN_OK;
    roaring_bitmap_t *in = roaring_bitmap_and(ix->live, over);
    if (!in)
        return CDN_ERR_NOMEM;
    uint64_t n_in = roaring_bitmap_get_cardinality(in), sum;
    if (n_in == ix->doc_count) { /* the set holds the whole field: its own statistics */
        roaring_bitmap_free(in);
        return CDN_OK;
    }
    if (n_in <= ix->doc_count - n_in) {
        fs->cnt = in;
        sum = sum_lengths(ix, in);
    } else { /* most of the field: count the few documents outside instead */
        roaring_bitmap_free(in);
        if (!(fs->cnt = roaring_bitmap_andnot(ix->live, over)))
            return CDN_ERR_NOMEM;
        fs->subtract = 1;
        sum = ix->sum_dl - sum_lengths(ix, fs->cnt);
    }
    fs->n_docs = n_in;
    /* The same expression as invidx_avgdl, so a set equal to the field scores identically. */
    fs->avgdl = n_in ? (double)sum / (double)n_in : 1.0;
    return CDN_OK;
}

void fstats_free(fstats_t *fs)
{
    if (fs->cnt)
        roaring_bitmap_free(fs->cnt);
    fs->cnt = NULL;
}

/* |postings(tid) ∩ s|: the posting cursor and the set leapfrog each other, so the cost is
 * bounded by the smaller of the two (dead postings are never in s: s holds live docs). */
static uint64_t count_in(const invidx_plist_t *pl, const roaring_bitmap_t *s)
{
    invidx_cursor_t c = {pl, 0};
    roaring_uint32_iterator_t it;
    uint64_t n = 0;
    roaring_init_iterator(s, &it);
    uint32_t d = invidx_cur_doc(&c);
    while (d != INVIDX_END && it.has_value) {
        if (it.current_value < d &&
            !roaring_move_uint32_iterator_equalorlarger(&it, d))
            break;
        if (it.current_value == d) {
            n++;
            c.i++;
            d = invidx_cur_doc(&c);
        } else {
            d = invidx_cur_seek(&c, it.current_value);
        }
    }
    return n;
}

uint64_t fstats_df(const fstats_t *fs, uint32_t tid)
{
    const invidx_plist_t *pl = &fs->ix->pl[tid];
    if (!fs->cnt || pl->df == 0)
        return pl->df;
    uint64_t n = count_in(pl, fs->cnt);
    return fs->subtract ? pl->df - n : n;
}
