/* fstats.c: BM25 statistics of a text field over a document set, so that chunks a subject
 * cannot read change neither N, nor df, nor avgdl (DESIGN.md, "hidden equals missing").
 * Relies on invidx postings (sorted doc arrays) and CRoaring for the sets. */
#include "text/fstats.h"

#include <pthread.h>
#include <string.h>

#include "base/mem.h"

/* Document frequencies counted so far: an open-addressed table of term id + 1 (0: free slot),
 * twice the terms it keeps so probes stay short. */
typedef struct fstats_memo {
    pthread_mutex_t mu;
    uint32_t n;
    uint32_t key[2 * FSTATS_MEMO];
    uint64_t df[2 * FSTATS_MEMO];
} fstats_memo_t;

int fstats_memo_start(fstats_t *fs)
{
    if (fs->memo)
        return CDN_OK;
    fstats_memo_t *m = cdn_calloc(1, sizeof *m);
    if (!m)
        return CDN_ERR_NOMEM;
    pthread_mutex_init(&m->mu, NULL);
    fs->memo = m;
    return CDN_OK;
}

/* The slot of tid in m: its own, or the free one where it would go. Called with m->mu held. */
static size_t memo_slot(const fstats_memo_t *m, uint32_t tid)
{
    size_t mask = 2 * FSTATS_MEMO - 1, i = (tid * 2654435761u) & mask;
    while (m->key[i] && m->key[i] != tid + 1)
        i = (i + 1) & mask;
    return i;
}

size_t fstats_bytes(const fstats_t *fs)
{
    return sizeof *fs + (fs->memo ? sizeof *fs->memo : 0) + fs->n_cnt * sizeof *fs->cnt +
           (fs->side ? roaring_bitmap_size_in_bytes(fs->side) : 0);
}

/* The documents of s as a sorted array (caller frees) and the sum of their field lengths. An
 * array, not the bitmap: counting postings against it is a merge of two sorted arrays, about
 * three times faster than leapfrogging a roaring iterator (SciFact, 10% readable). */
static int to_array(const invidx_t *ix, const roaring_bitmap_t *s, uint32_t **out, uint64_t *n,
                    uint64_t *sum)
{
    *n = roaring_bitmap_get_cardinality(s);
    *sum = 0;
    if (!(*out = cdn_malloc((*n ? *n : 1) * sizeof **out)))
        return CDN_ERR_NOMEM;
    roaring_bitmap_to_uint32_array(s, *out);
    for (uint64_t i = 0; i < *n; i++)
        *sum += ix->dl[(*out)[i]];
    return CDN_OK;
}

int fstats_init(fstats_t *fs, const invidx_t *ix, const roaring_bitmap_t *over)
{
    memset(fs, 0, sizeof *fs);
    fs->ix = ix;
    fs->n_docs = ix->doc_count;
    fs->avgdl = invidx_avgdl(ix);
    if (!over)
        return CDN_OK;
    uint64_t n_in = roaring_bitmap_and_cardinality(ix->live, over), sum;
    if (n_in == ix->doc_count) /* the set holds the whole field: its own statistics */
        return CDN_OK;
    /* Count against the smaller side: the set's documents, or the field's others. */
    fs->subtract = n_in > ix->doc_count - n_in;
    roaring_bitmap_t *side =
        fs->subtract ? roaring_bitmap_andnot(ix->live, over) : roaring_bitmap_and(ix->live, over);
    if (!side)
        return CDN_ERR_NOMEM;
    int rc = to_array(ix, side, &fs->cnt, &fs->n_cnt, &sum);
    if (rc) {
        roaring_bitmap_free(side);
        return rc;
    }
    fs->side = side;
    if (fs->subtract)
        sum = ix->sum_dl - sum;
    fs->n_docs = n_in;
    /* The same expression as invidx_avgdl, so a set equal to the field scores identically. */
    fs->avgdl = n_in ? (double)sum / (double)n_in : 1.0;
    return CDN_OK;
}

void fstats_free(fstats_t *fs)
{
    if (fs->memo) {
        pthread_mutex_destroy(&fs->memo->mu);
        cdn_free(fs->memo);
        fs->memo = NULL;
    }
    cdn_free(fs->cnt);
    fs->cnt = NULL;
    if (fs->side)
        roaring_bitmap_free(fs->side);
    fs->side = NULL;
}

/* First index >= lo of a[0..n) holding a value >= x (n if none): galloping, then binary. */
static uint64_t gallop(const uint32_t *a, uint64_t n, uint64_t lo, uint32_t x)
{
    uint64_t step = 1, hi = lo;
    while (hi < n && a[hi] < x) {
        lo = hi + 1;
        hi += step;
        step *= 2;
    }
    if (hi > n)
        hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* |a ∩ b| of two sorted arrays: merged when close in size, else each element of the shorter
 * gallops into the longer (cost: the shorter's length times the log of the ratio). Dead
 * postings never match: the counted docs are live. */
static uint64_t count_common(const uint32_t *a, uint64_t na, const uint32_t *b, uint64_t nb)
{
    if (na > nb)
        return count_common(b, nb, a, na);
    uint64_t n = 0, i = 0, j = 0;
    if (nb <= 16 * na) { /* close in size: a branch-free merge beats galloping */
        while (i < na && j < nb) {
            uint32_t x = a[i], y = b[j];
            n += x == y;
            i += x <= y;
            j += y <= x;
        }
        return n;
    }
    for (; i < na && j < nb; i++) {
        j = gallop(b, nb, j, a[i]);
        n += j < nb && b[j] == a[i];
    }
    return n;
}

uint64_t fstats_df(const fstats_t *fs, uint32_t tid)
{
    const invidx_plist_t *pl = &fs->ix->pl[tid];
    if (!fs->cnt || pl->df == 0)
        return pl->df;
    fstats_memo_t *m = fs->memo;
    if (m) {
        pthread_mutex_lock(&m->mu);
        size_t i = memo_slot(m, tid);
        uint64_t df = m->df[i];
        int known = m->key[i] != 0;
        pthread_mutex_unlock(&m->mu);
        if (known)
            return df;
    }
    /* a long list has its docs as a bitmap: an intersection of bitmaps, not a merge */
    uint64_t n = pl->rb ? roaring_bitmap_and_cardinality(pl->rb, fs->side)
                        : count_common(pl->docs, pl->n, fs->cnt, fs->n_cnt);
    n = fs->subtract ? pl->df - n : n;
    if (m) {
        pthread_mutex_lock(&m->mu);
        size_t i = memo_slot(m, tid);
        if (!m->key[i] && m->n < FSTATS_MEMO) {
            m->key[i] = tid + 1;
            m->df[i] = n;
            m->n++;
        }
        pthread_mutex_unlock(&m->mu);
    }
    return n;
}
