/* invidx.c: dictionary, postings with positions and block maxima, forward lists for deletes,
 * persistence. Relies on CRoaring, xxhash and textio.h. Writers are exclusive (caller's lock). */
#include "text/invidx.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/cmp.h"
#include "base/mem.h"

int invidx_init(invidx_t *ix)
{
    memset(ix, 0, sizeof *ix);
    ix->live = roaring_bitmap_create();
    ix->dead = roaring_bitmap_create();
    if (!ix->live || !ix->dead) {
        invidx_destroy(ix);
        return CDN_ERR_NOMEM;
    }
    return CDN_OK;
}

static void plist_free(invidx_plist_t *p)
{
    cdn_free(p->docs);
    cdn_free(p->tfs);
    cdn_free(p->poff);
    cdn_free(p->pos);
    cdn_free(p->bimp);
    if (p->rb)
        roaring_bitmap_free(p->rb);
}

void invidx_destroy(invidx_t *ix)
{
    for (uint32_t t = 0; t < ix->nterms; t++)
        plist_free(&ix->pl[t]);
    cdn_free(ix->pl);
    cdn_free(ix->terms);
    cdn_free(ix->term_off);
    cdn_free(ix->term_len);
    cdn_free(ix->hash);
    cdn_free(ix->dl);
    cdn_free(ix->fwd_off);
    cdn_free(ix->fwd_n);
    cdn_free(ix->fwd);
    if (ix->live)
        roaring_bitmap_free(ix->live);
    if (ix->dead)
        roaring_bitmap_free(ix->dead);
    memset(ix, 0, sizeof *ix);
}

static uint64_t term_hash(const char *s, size_t n)
{
    return XXH64(s, n, 0x5eed);
}

int invidx_lookup(const invidx_t *ix, const char *term, size_t len, uint32_t *tid)
{
    if (!ix->hcap)
        return CDN_ERR_NOT_FOUND;
    size_t mask = ix->hcap - 1;
    for (size_t h = term_hash(term, len) & mask;; h = (h + 1) & mask) {
        uint32_t v = ix->hash[h];
        if (!v)
            return CDN_ERR_NOT_FOUND;
        if (ix->term_len[v - 1] == len && !memcmp(ix->terms + ix->term_off[v - 1], term, len)) {
            *tid = v - 1;
            return CDN_OK;
        }
    }
}

const char *invidx_term(const invidx_t *ix, uint32_t tid, size_t *len)
{
    *len = ix->term_len[tid];
    return ix->terms + ix->term_off[tid];
}

static int rehash(invidx_t *ix, size_t cap)
{
    uint32_t *h = cdn_calloc(cap, sizeof *h);
    if (!h)
        return CDN_ERR_NOMEM;
    for (uint32_t t = 0; t < ix->nterms; t++) {
        size_t s = term_hash(ix->terms + ix->term_off[t], ix->term_len[t]) & (cap - 1);
        while (h[s])
            s = (s + 1) & (cap - 1);
        h[s] = t + 1;
    }
    cdn_free(ix->hash);
    ix->hash = h;
    ix->hcap = cap;
    return CDN_OK;
}

/* Finds or adds a term; 0 with *tid or NOMEM. */
static int term_intern(invidx_t *ix, const char *s, size_t n, uint32_t *tid)
{
    if (invidx_lookup(ix, s, n, tid) == CDN_OK)
        return CDN_OK;
    if ((ix->nterms + 1) * 2 > ix->hcap && rehash(ix, ix->hcap ? ix->hcap * 2 : 1024))
        return CDN_ERR_NOMEM;
    size_t cap = ix->term_cap;
    if (cdn_grow((void **)&ix->terms, &ix->terms_cap, ix->terms_len + n + 1, 1) ||
        cdn_grow((void **)&ix->term_off, &cap, ix->nterms + 1, sizeof(uint32_t)))
        return CDN_ERR_NOMEM;
    cap = ix->term_cap;
    if (cdn_grow((void **)&ix->term_len, &cap, ix->nterms + 1, sizeof(uint32_t)))
        return CDN_ERR_NOMEM;
    cap = ix->term_cap;
    if (cdn_grow((void **)&ix->pl, &cap, ix->nterms + 1, sizeof(invidx_plist_t)))
        return CDN_ERR_NOMEM;
    ix->term_cap = cap;
    uint32_t t = ix->nterms;
    memcpy(ix->terms + ix->terms_len, s, n);
    ix->term_off[t] = (uint32_t)ix->terms_len;
    ix->term_len[t] = (uint32_t)n;
    ix->terms_len += n;
    memset(&ix->pl[t], 0, sizeof ix->pl[t]);
    ix->nterms++;
    size_t mask = ix->hcap - 1;
    size_t h = term_hash(s, n) & mask;
    while (ix->hash[h])
        h = (h + 1) & mask;
    ix->hash[h] = t + 1;
    *tid = t;
    return CDN_OK;
}

static int grow_docs(invidx_t *ix, uint32_t doc)
{
    if (doc < ix->doc_cap)
        return CDN_OK;
    size_t need = (size_t)doc + 1, c1 = ix->doc_cap, c2 = ix->doc_cap, c3 = ix->doc_cap;
    if (cdn_grow((void **)&ix->dl, &c1, need, sizeof(uint32_t)) ||
        cdn_grow((void **)&ix->fwd_off, &c2, need, sizeof(uint32_t)) ||
        cdn_grow((void **)&ix->fwd_n, &c3, need, sizeof(uint32_t)))
        return CDN_ERR_NOMEM;
    size_t cap = c1 < c2 ? c1 : c2;
    cap = cap < c3 ? cap : c3;
    memset(ix->dl + ix->doc_cap, 0, (cap - ix->doc_cap) * sizeof(uint32_t));
    memset(ix->fwd_n + ix->doc_cap, 0, (cap - ix->doc_cap) * sizeof(uint32_t));
    memset(ix->fwd_off + ix->doc_cap, 0, (cap - ix->doc_cap) * sizeof(uint32_t));
    ix->doc_cap = cap;
    return CDN_OK;
}

void invidx_impact_add(invidx_impact_t *f, uint32_t tf, uint32_t dl)
{
    invidx_impact_t t[INVIDX_IMPACTS + 1];
    size_t n = 0, at = 0;
    for (size_t j = 0; j < INVIDX_IMPACTS && f[j].tf; j++) {
        if (f[j].tf >= tf && f[j].dl <= dl)
            return; /* already covered */
        if (!(tf >= f[j].tf && dl <= f[j].dl))
            t[n++] = f[j]; /* the entries the new one dominates go */
    }
    while (at < n && t[at].dl < dl)
        at++;
    memmove(t + at + 1, t + at, (n - at) * sizeof *t);
    t[at] = (invidx_impact_t){tf, dl};
    n++;
    if (n > INVIDX_IMPACTS) { /* merge the neighbours closest in dl (their tf rise with dl) */
        size_t m = 0;
        for (size_t j = 1; j + 1 < n; j++)
            if ((uint64_t)t[j + 1].dl * t[m].dl < (uint64_t)t[m + 1].dl * t[j].dl)
                m = j;
        t[m].tf = t[m + 1].tf;
        memmove(t + m + 1, t + m + 2, (n - m - 2) * sizeof *t);
        n--;
    }
    memcpy(f, t, n * sizeof *t);
    for (size_t j = n; j < INVIDX_IMPACTS; j++)
        f[j] = (invidx_impact_t){0, 0};
}

/* Rebuilds the list's bitmap from its docs (none below INVIDX_RB_MIN postings). */
static void plist_rebitmap(invidx_plist_t *p)
{
    if (p->rb)
        roaring_bitmap_free(p->rb);
    p->rb = p->n >= INVIDX_RB_MIN ? roaring_bitmap_of_ptr(p->n, p->docs) : NULL;
}

/* Recomputes the block bounds from posting `from` to the end; when from is 0, also the list's
 * bound (from every block) and its bitmap. */
static void plist_reblock(invidx_plist_t *p, const uint32_t *dl, uint32_t from)
{
    if (!from) {
        memset(p->limp, 0, sizeof p->limp);
        plist_rebitmap(p);
    }
    for (uint32_t b = from / INVIDX_BLOCK; b * INVIDX_BLOCK < p->n; b++) {
        invidx_impact_t *f = p->bimp + (size_t)b * INVIDX_IMPACTS;
        uint32_t end = (b + 1) * INVIDX_BLOCK < p->n ? (b + 1) * INVIDX_BLOCK : p->n;
        memset(f, 0, INVIDX_IMPACTS * sizeof *f);
        for (uint32_t i = b * INVIDX_BLOCK; i < end; i++)
            invidx_impact_add(f, p->tfs[i], dl[p->docs[i]]);
        for (size_t j = 0; !from && j < INVIDX_IMPACTS && f[j].tf; j++)
            invidx_impact_add(p->limp, f[j].tf, f[j].dl);
    }
}

static int plist_reserve(invidx_plist_t *p, uint32_t need)
{
    if (need <= p->cap)
        return CDN_OK;
    size_t cap = p->cap ? (size_t)p->cap * 2 : 4;
    while (cap < need)
        cap *= 2;
    size_t nb = (cap + INVIDX_BLOCK - 1) / INVIDX_BLOCK;
    uint32_t *a = cdn_realloc(p->docs, cap * 4);
    if (!a)
        return CDN_ERR_NOMEM;
    p->docs = a;
    if (!(a = cdn_realloc(p->tfs, cap * 4)))
        return CDN_ERR_NOMEM;
    p->tfs = a;
    if (!(a = cdn_realloc(p->poff, cap * 4)))
        return CDN_ERR_NOMEM;
    p->poff = a;
    invidx_impact_t *f = cdn_realloc(p->bimp, nb * INVIDX_IMPACTS * sizeof *f);
    if (!f)
        return CDN_ERR_NOMEM;
    p->bimp = f;
    p->cap = (uint32_t)cap;
    return CDN_OK;
}

/* Appends (or inserts in doc order) one posting with its positions. */
static int plist_add(invidx_plist_t *p, const uint32_t *dl, uint32_t doc, const uint32_t *pos,
                     uint32_t tf)
{
    if (plist_reserve(p, p->n + 1) ||
        cdn_grow((void **)&p->pos, &p->pos_cap, p->pos_len + (size_t)tf * 5, 1))
        return CDN_ERR_NOMEM;
    uint32_t at = p->n;
    if (p->n && p->docs[p->n - 1] > doc) {
        uint32_t lo = 0, hi = p->n;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (p->docs[mid] < doc)
                lo = mid + 1;
            else
                hi = mid;
        }
        at = lo;
        size_t k = (size_t)(p->n - at) * 4;
        memmove(p->docs + at + 1, p->docs + at, k);
        memmove(p->tfs + at + 1, p->tfs + at, k);
        memmove(p->poff + at + 1, p->poff + at, k);
    }
    p->docs[at] = doc;
    p->tfs[at] = tf;
    p->poff[at] = (uint32_t)p->pos_len;
    uint32_t prev = 0;
    for (uint32_t i = 0; i < tf; i++) {
        uint32_t v = pos[i] - prev;
        prev = pos[i];
        while (v >= 0x80) {
            p->pos[p->pos_len++] = (uint8_t)(v | 0x80);
            v >>= 7;
        }
        p->pos[p->pos_len++] = (uint8_t)v;
    }
    p->n++;
    p->df++;
    if (at == p->n - 1 && at % INVIDX_BLOCK)
        invidx_impact_add(p->bimp + (size_t)(at / INVIDX_BLOCK) * INVIDX_IMPACTS, tf, dl[doc]);
    else
        plist_reblock(p, dl, at ? at : 1); /* `at` 0 would rebuild the list's bound, not add */
    invidx_impact_add(p->limp, tf, dl[doc]);
    if (p->rb)
        roaring_bitmap_add(p->rb, doc);
    else if (p->n == INVIDX_RB_MIN)
        plist_rebitmap(p);
    return CDN_OK;
}

typedef struct tp {
    uint32_t tid, pos;
} tp_t;

static int cmp_tp(const void *a, const void *b)
{
    const tp_t *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Drops every stored posting of doc (used when a deleted id comes back). */
static void purge_doc(invidx_t *ix, uint32_t doc);

int invidx_add(invidx_t *ix, uint32_t doc, const analyzer_tokens_t *toks)
{
    if (doc == INVIDX_END)
        return CDN_ERR_INVALID;
    ix->gen++;
    if (roaring_bitmap_contains(ix->live, doc))
        return CDN_ERR_EXISTS;
    if (!toks->n)
        return CDN_OK;
    if (roaring_bitmap_contains(ix->dead, doc))
        purge_doc(ix, doc);
    if (grow_docs(ix, doc))
        return CDN_ERR_NOMEM;
    tp_t *v = cdn_malloc(toks->n * sizeof *v);
    uint32_t *pos = cdn_malloc(toks->n * sizeof *pos);
    int rc = v && pos ? CDN_OK : CDN_ERR_NOMEM;
    for (size_t i = 0; i < toks->n && !rc; i++) {
        rc = term_intern(ix, toks->pool + toks->tok[i].off, toks->tok[i].len, &v[i].tid);
        v[i].pos = toks->tok[i].pos;
    }
    if (rc)
        goto out;
    qsort(v, toks->n, sizeof *v, cmp_tp);
    ix->dl[doc] = (uint32_t)toks->n;
    size_t nuniq = 0;
    for (size_t i = 0; i < toks->n; i++)
        nuniq += i == 0 || v[i].tid != v[i - 1].tid;
    if (cdn_grow((void **)&ix->fwd, &ix->fwd_cap, ix->fwd_len + nuniq, sizeof(uint32_t))) {
        rc = CDN_ERR_NOMEM;
        goto out;
    }
    ix->fwd_off[doc] = (uint32_t)ix->fwd_len;
    ix->fwd_n[doc] = 0;
    for (size_t i = 0; i < toks->n && !rc;) {
        size_t j = i;
        while (j < toks->n && v[j].tid == v[i].tid) {
            pos[j - i] = v[j].pos;
            j++;
        }
        rc = plist_add(&ix->pl[v[i].tid], ix->dl, doc, pos, (uint32_t)(j - i));
        if (rc == CDN_OK) { /* the forward list names exactly the lists that hold doc */
            ix->fwd[ix->fwd_len++] = v[i].tid;
            ix->fwd_n[doc]++;
        }
        i = j;
    }
    /* Live even when a list could not take it: the caller's invidx_delete then takes back the
     * postings that went in, through the forward list. */
    roaring_bitmap_add(ix->live, doc);
    ix->doc_count++;
    ix->sum_dl += toks->n;
out:
    cdn_free(v);
    cdn_free(pos);
    return rc;
}

/* Rewrites p keeping only postings of live docs (positions repacked). */
static void plist_compact(invidx_plist_t *p, invidx_t *ix)
{
    uint32_t before = p->n;
    uint32_t w = 0;
    size_t pw = 0;
    uint8_t *npos = cdn_malloc(p->pos_len ? p->pos_len : 1);
    if (!npos)
        return; /* compaction is an optimisation; dead postings stay filtered */
    for (uint32_t i = 0; i < p->n; i++) {
        if (!roaring_bitmap_contains(ix->live, p->docs[i]))
            continue;
        size_t s = p->poff[i], e = s;
        for (uint32_t k = 0; k < p->tfs[i]; k++) {
            while (p->pos[e] & 0x80)
                e++;
            e++;
        }
        memcpy(npos + pw, p->pos + s, e - s);
        p->docs[w] = p->docs[i];
        p->tfs[w] = p->tfs[i];
        p->poff[w] = (uint32_t)pw;
        pw += e - s;
        w++;
    }
    cdn_free(p->pos);
    p->pos = npos;
    p->pos_len = pw;
    p->pos_cap = p->pos_len ? p->pos_len : 1;
    p->n = w;
    ix->dead_postings -= before - w;
    plist_reblock(p, ix->dl, 0);
}

int invidx_delete(invidx_t *ix, uint32_t doc)
{
    if (!roaring_bitmap_contains(ix->live, doc))
        return CDN_OK;
    ix->gen++;
    roaring_bitmap_remove(ix->live, doc);
    roaring_bitmap_add(ix->dead, doc);
    ix->doc_count--;
    ix->sum_dl -= ix->dl[doc];
    ix->dead_postings += ix->fwd_n[doc];
    for (uint32_t k = 0; k < ix->fwd_n[doc]; k++) {
        invidx_plist_t *p = &ix->pl[ix->fwd[ix->fwd_off[doc] + k]];
        p->df--;
        if (p->n - p->df > p->n / 4 + 8)
            plist_compact(p, ix);
    }
    return CDN_OK;
}

static void purge_doc(invidx_t *ix, uint32_t doc)
{
    for (uint32_t k = 0; k < ix->fwd_n[doc]; k++)
        plist_compact(&ix->pl[ix->fwd[ix->fwd_off[doc] + k]], ix);
    ix->fwd_n[doc] = 0;
    roaring_bitmap_remove(ix->dead, doc);
}

uint64_t invidx_dead_postings(const invidx_t *ix)
{
    return ix->dead_postings;
}

void invidx_compact(invidx_t *ix)
{
    ix->gen++;
    for (uint32_t t = 0; t < ix->nterms && ix->dead_postings; t++)
        if (ix->pl[t].n != ix->pl[t].df)
            plist_compact(&ix->pl[t], ix);
    if (!ix->dead_postings)
        roaring_bitmap_clear(ix->dead);
}

double invidx_avgdl(const invidx_t *ix)
{
    return ix->doc_count ? (double)ix->sum_dl / (double)ix->doc_count : 1.0;
}

/* Postings a seek counts before it gallops. */
#define SEEK_SCAN 32

uint32_t invidx_cur_seek(invidx_cursor_t *c, uint32_t target)
{
    const invidx_plist_t *p = c->pl;
    uint32_t i = c->i;
    if (i >= p->n || p->docs[i] >= target)
        return i < p->n ? p->docs[i] : INVIDX_END;
    /* A short count first: a seek to the next allowed doc or the next candidate usually lands
     * within a few dozen postings, where counting the smaller ones (branch-free, in cache lines
     * read in order) beats galloping's scattered probes. */
    if (i + SEEK_SCAN <= p->n) {
        const uint32_t *d = p->docs + i;
        uint32_t below = 0;
        for (size_t j = 0; j < SEEK_SCAN; j++)
            below += d[j] < target;
        if (below < SEEK_SCAN) {
            c->i = i + below;
            return p->docs[c->i];
        }
        i += SEEK_SCAN - 1;
    }
    uint32_t step = 1, lo = i, hi = i + 1;
    while (hi < p->n && p->docs[hi] < target) {
        lo = hi;
        step *= 2;
        hi = i + step;
    }
    if (hi > p->n)
        hi = p->n;
    while (lo < hi) { /* invariant: docs[lo] < target or lo == first candidate */
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->docs[mid] < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    c->i = lo;
    return lo < p->n ? p->docs[lo] : INVIDX_END;
}

void invidx_cur_positions(const invidx_cursor_t *c, uint32_t *out)
{
    const invidx_plist_t *p = c->pl;
    const uint8_t *b = p->pos + p->poff[c->i];
    uint32_t prev = 0;
    for (uint32_t k = 0; k < p->tfs[c->i]; k++) {
        uint32_t v = 0;
        int shift = 0;
        while (*b & 0x80) {
            v |= (uint32_t)(*b++ & 0x7f) << shift;
            shift += 7;
        }
        v |= (uint32_t)*b++ << shift;
        prev += v;
        out[k] = prev;
    }
}

/* Sorts ord[0..n), each (written doc id << 32 | what it came from), by written id when the
 * writer renumbers docs: a compaction's map may number them in any order, and the file keeps
 * every list ascending. Without a map the ids are written as they are, already in order. */
static void order_written(const textio_w_t *w, uint64_t *ord, size_t n)
{
    if (w->map)
        qsort(ord, n, sizeof *ord, cdn_cmp_u64);
}

/* The positions of posting i of p, written as one byte string. */
static void put_positions(const invidx_plist_t *p, uint32_t i, textio_w_t *w)
{
    size_t s = p->poff[i], e = s;
    for (uint32_t k = 0; k < p->tfs[i]; k++) {
        while (p->pos[e] & 0x80)
            e++;
        e++;
    }
    textio_put_str(w, (const char *)p->pos + s, e - s);
}

/* Format: live doc count, (doc gap, length) pairs; term count; per term: bytes, live posting
 * count, then per posting doc gap, tf, position bytes length and bytes. Dead postings are
 * dropped; forward lists and block maxima are rebuilt on load. Docs go out under w's ids. */
void invidx_save(const invidx_t *ix, textio_w_t *w)
{
    size_t cap = 0, n = 0;
    uint64_t *ord = NULL;
    if (cdn_grow((void **)&ord, &cap, roaring_bitmap_get_cardinality(ix->live) + 1, sizeof *ord)) {
        w->failed = 1;
        return;
    }
    textio_put_var(w, ix->doc_count);
    roaring_uint32_iterator_t it;
    for (roaring_init_iterator(ix->live, &it); it.has_value; roaring_advance_uint32_iterator(&it))
        ord[n++] = (uint64_t)textio_doc(w, it.current_value) << 32 | it.current_value;
    order_written(w, ord, n);
    uint32_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t doc = (uint32_t)(ord[i] >> 32);
        textio_put_var(w, doc - prev);
        textio_put_var(w, ix->dl[(uint32_t)ord[i]]);
        prev = doc;
    }
    uint32_t nlive = 0;
    for (uint32_t t = 0; t < ix->nterms; t++)
        nlive += ix->pl[t].df > 0;
    textio_put_var(w, nlive);
    for (uint32_t t = 0; t < ix->nterms && !w->failed; t++) {
        const invidx_plist_t *p = &ix->pl[t];
        if (!p->df)
            continue;
        if (cdn_grow((void **)&ord, &cap, (size_t)p->n + 1, sizeof *ord)) {
            w->failed = 1;
            break;
        }
        textio_put_str(w, ix->terms + ix->term_off[t], ix->term_len[t]);
        textio_put_var(w, p->df);
        n = 0;
        for (uint32_t i = 0; i < p->n; i++)
            if (roaring_bitmap_contains(ix->live, p->docs[i]))
                ord[n++] = (uint64_t)textio_doc(w, p->docs[i]) << 32 | i;
        order_written(w, ord, n);
        prev = 0;
        for (size_t k = 0; k < n; k++) {
            uint32_t doc = (uint32_t)(ord[k] >> 32), i = (uint32_t)ord[k];
            textio_put_var(w, doc - prev);
            prev = doc;
            textio_put_var(w, p->tfs[i]);
            put_positions(p, i, w);
        }
    }
    cdn_free(ord);
}

static int load_postings(invidx_t *ix, textio_r_t *r, uint32_t t, uint32_t n)
{
    invidx_plist_t *p = &ix->pl[t];
    if (plist_reserve(p, n))
        return CDN_ERR_NOMEM;
    uint32_t doc = 0;
    for (uint32_t i = 0; i < n && !r->bad; i++) {
        uint64_t gap = textio_get_var(r);
        if ((i && !gap) || doc + gap >= ix->doc_cap || !ix->dl[doc + gap])
            return CDN_ERR_CORRUPT;
        doc += (uint32_t)gap;
        uint32_t tf = (uint32_t)textio_get_lim(r, ix->dl[doc]);
        size_t pl = (size_t)textio_get_lim(r, (uint64_t)tf * 5);
        const uint8_t *b = textio_get_bytes(r, pl);
        if (!b || !tf || cdn_grow((void **)&p->pos, &p->pos_cap, p->pos_len + pl, 1))
            return r->bad || !tf ? CDN_ERR_CORRUPT : CDN_ERR_NOMEM;
        /* the bytes must hold exactly tf varints, or positions would be read past them */
        uint32_t ends = 0;
        for (size_t k = 0; k < pl; k++)
            ends += !(b[k] & 0x80);
        if (ends != tf || (b[pl - 1] & 0x80))
            return CDN_ERR_CORRUPT;
        memcpy(p->pos + p->pos_len, b, pl);
        p->docs[i] = doc;
        p->tfs[i] = tf;
        p->poff[i] = (uint32_t)p->pos_len;
        p->pos_len += pl;
        if (cdn_grow((void **)&ix->fwd, &ix->fwd_cap, ix->fwd_len + 1, sizeof(uint32_t)))
            return CDN_ERR_NOMEM;
        ix->fwd_len++;    /* slot only: build_forward fills fwd per doc */
        ix->fwd_n[doc]++; /* count now, offsets assigned in build_forward */
    }
    p->n = p->df = n;
    return r->bad ? CDN_ERR_CORRUPT : CDN_OK;
}

/* Forward lists: after loading, fwd holds term ids in posting order; rebuild it per doc. */
static int build_forward(invidx_t *ix)
{
    uint32_t *f = cdn_malloc((ix->fwd_len ? ix->fwd_len : 1) * sizeof *f);
    if (!f)
        return CDN_ERR_NOMEM;
    size_t off = 0;
    for (size_t d = 0; d < ix->doc_cap; d++) {
        ix->fwd_off[d] = (uint32_t)off;
        off += ix->fwd_n[d];
        ix->fwd_n[d] = 0;
    }
    for (uint32_t t = 0; t < ix->nterms; t++) {
        invidx_plist_t *p = &ix->pl[t];
        for (uint32_t i = 0; i < p->n; i++) {
            uint32_t d = p->docs[i];
            f[ix->fwd_off[d] + ix->fwd_n[d]++] = t;
        }
        plist_reblock(p, ix->dl, 0);
    }
    cdn_free(ix->fwd);
    ix->fwd = f;
    ix->fwd_cap = ix->fwd_len ? ix->fwd_len : 1;
    return CDN_OK;
}

static int load_body(invidx_t *ix, textio_r_t *r)
{
    uint64_t ndocs = textio_get_lim(r, r->len);
    uint32_t doc = 0;
    for (uint64_t i = 0; i < ndocs && !r->bad; i++) {
        uint64_t gap = textio_get_var(r);
        uint64_t len = textio_get_lim(r, UINT32_MAX);
        if ((i && !gap) || doc + gap >= INVIDX_END || !len)
            return CDN_ERR_CORRUPT;
        doc += (uint32_t)gap;
        if (grow_docs(ix, doc))
            return CDN_ERR_NOMEM;
        ix->dl[doc] = (uint32_t)len;
        roaring_bitmap_add(ix->live, doc);
        ix->doc_count++;
        ix->sum_dl += len;
    }
    uint64_t nterms = textio_get_lim(r, r->len);
    for (uint64_t t = 0; t < nterms && !r->bad; t++) {
        size_t n = (size_t)textio_get_lim(r, r->len);
        const uint8_t *s = textio_get_bytes(r, n);
        uint32_t tid;
        if (!s)
            return CDN_ERR_CORRUPT;
        if (invidx_lookup(ix, (const char *)s, n, &tid) == CDN_OK)
            return CDN_ERR_CORRUPT; /* a term twice */
        if (term_intern(ix, (const char *)s, n, &tid))
            return CDN_ERR_NOMEM;
        uint32_t np = (uint32_t)textio_get_lim(r, ix->doc_count);
        if (!np)
            return CDN_ERR_CORRUPT;
        int rc = load_postings(ix, r, tid, np);
        if (rc)
            return rc;
    }
    if (r->bad)
        return CDN_ERR_CORRUPT;
    /* every doc's term count must agree with its length bound: at least one term each */
    for (size_t d = 0; d < ix->doc_cap; d++)
        if (!ix->dl[d] != !ix->fwd_n[d])
            return CDN_ERR_CORRUPT;
    return build_forward(ix);
}

int invidx_load(invidx_t *ix, textio_r_t *r)
{
    int rc = invidx_init(ix);
    if (rc)
        return rc;
    rc = load_body(ix, r);
    if (rc)
        invidx_destroy(ix);
    return rc;
}
