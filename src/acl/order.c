/* order.c: an order of a collection's rows by their ACLs (acl_order_rows), for the compaction
 * that numbers the live rows so that the rows a group may read lie in runs (query/compact.c).
 * Relies on acl.h (the index's entries and bitmaps), base/cmp.h, base/mem.h and glibc's qsort_r.
 *
 * Why by ACL and not by vector. Rows keep the numbers they were written with, so a group whose
 * chunks arrived among everyone else's has its rows scattered over every file: a scan of them
 * reads one cache line a row, each its own miss. Numbered together they are read as streams
 * (at 1M x 384 a subject reading a fifth, far from its question: 0.71 ms p50 against 1.3 - 2.1,
 * docs/benchmarks.md, "Readable rows in runs"). Neighbourhoods of the vectors do not follow the
 * groups (there only half of a row's nearest rows share its division), so the order comes from
 * the ACLs themselves: larger groups first, so nested groups nest in the order too. */
#include "acl/acl.h"

#include <stdlib.h>
#include <string.h>

#include "base/cmp.h"
#include "base/mem.h"

/* What the comparators read. */
typedef struct order_ctx {
    const uint64_t *rows;  /* by principal: rows it allows */
    const uint32_t *keys;  /* per entry: its allowed ranks ascending, then its denied ones */
    const uint32_t *off;   /* by entry: where its key starts in keys */
    const uint32_t *n_al;  /* by entry: allowed principals */
    const uint32_t *n_den; /* by entry: denied principals */
} order_ctx_t;

/* Principals by rows allowed, most first, then by id. */
static int cmp_principal(const void *pa, const void *pb, void *arg)
{
    const order_ctx_t *c = arg;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    if (c->rows[a] != c->rows[b])
        return c->rows[a] > c->rows[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int cmp_seq(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb)
{
    for (uint32_t i = 0; i < na && i < nb; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return na < nb ? -1 : na > nb;
}

/* Entries by key: allowed ranks, then denied ranks, then entry number (keys may tie when two
 * ACLs differ only in repeats). */
static int cmp_entry(const void *pa, const void *pb, void *arg)
{
    const order_ctx_t *c = arg;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const uint32_t *ka = c->keys + c->off[a], *kb = c->keys + c->off[b];
    int d = cmp_seq(ka, c->n_al[a], kb, c->n_al[b]);
    if (!d)
        d = cmp_seq(ka + c->n_al[a], c->n_den[a], kb + c->n_al[b], c->n_den[b]);
    return d ? d : (a < b ? -1 : a > b);
}

/* rank[p]: p's place among the principals (cmp_principal); 0 or CDN_ERR_NOMEM. */
static int rank_principals(const acl_index_t *x, uint32_t np, uint32_t *rank)
{
    uint64_t *rows = cdn_malloc((np ? np : 1) * sizeof *rows);
    uint32_t *by = cdn_malloc((np ? np : 1) * sizeof *by);
    int rc = rows && by ? CDN_OK : CDN_ERR_NOMEM;
    if (rc == CDN_OK) {
        for (uint32_t p = 0; p < np; p++) {
            rows[p] = acl_index_principal_rows(x, p);
            by[p] = p;
        }
        order_ctx_t c = {.rows = rows};
        qsort_r(by, np, sizeof *by, cmp_principal, &c);
        for (uint32_t i = 0; i < np; i++)
            rank[by[i]] = i;
    }
    cdn_free(rows);
    cdn_free(by);
    return rc;
}

/* Each used entry's key into keys (grown as needed), where it starts in off[e] and how many
 * allowed and denied principals it has in n_al[e] and n_den[e]; rep[e] is a row holding entry
 * e, UINT32_MAX for an entry no kept row holds. */
static int build_keys(const acl_index_t *x, const uint32_t *rank, uint32_t np, const uint32_t *rep,
                      uint32_t span, uint32_t *off, uint32_t *n_al, uint32_t *n_den,
                      uint32_t **keys, size_t *cap)
{
    uint32_t buf[2 + ACL_MAX_PRINCIPALS];
    size_t len = 0;
    for (uint32_t e = 0; e <= span; e++) {
        off[e] = (uint32_t)len;
        n_al[e] = n_den[e] = 0;
        if (rep[e] == UINT32_MAX)
            continue;
        size_t w = acl_index_get(x, rep[e], buf, sizeof buf / sizeof buf[0]);
        if (w < 2 || w > sizeof buf / sizeof buf[0])
            continue; /* no ACL (entry 0): the empty key, first */
        if (cdn_grow((void **)keys, cap, len + w, sizeof **keys))
            return CDN_ERR_NOMEM;
        for (size_t i = 2; i < w; i++) /* an id past the ranked ones ranks after all of them */
            (*keys)[len + i - 2] = buf[i] < np ? rank[buf[i]] : np + (buf[i] - np);
        n_al[e] = buf[0];
        n_den[e] = buf[1];
        qsort(*keys + len, buf[0], sizeof **keys, cdn_cmp_u32);
        qsort(*keys + len + buf[0], buf[1], sizeof **keys, cdn_cmp_u32);
        len += w - 2;
    }
    return CDN_OK;
}

int acl_order_rows(const acl_index_t *x, uint32_t *map, uint32_t n)
{
    uint32_t span = acl_index_entry_span(x), np = acl_index_principal_span(x), used = 0;
    size_t ne = (size_t)span + 1, cap = 0;
    uint32_t *rank = cdn_malloc((np ? np : 1) * sizeof *rank);
    uint32_t *rep = cdn_malloc(ne * sizeof *rep), *ent = cdn_malloc(ne * sizeof *ent);
    uint32_t *arr = cdn_malloc(3 * ne * sizeof *arr), *start = cdn_calloc(ne + 1, sizeof *start);
    uint32_t *keys = NULL;
    int rc = rank && rep && ent && arr && start ? rank_principals(x, np, rank) : CDN_ERR_NOMEM;
    order_ctx_t c = {.off = arr, .n_al = arr + ne, .n_den = arr + 2 * ne};
    if (rc == CDN_OK) {
        memset(rep, 0xff, ne * sizeof *rep);
        for (uint32_t r = 0; r < n; r++) {
            uint32_t e = acl_index_entry_of(x, r);
            if (map[r] != ACL_ORDER_GONE && e <= span && rep[e] == UINT32_MAX)
                rep[e] = r, ent[used++] = e;
        }
        rc = build_keys(x, rank, np, rep, span, arr, arr + ne, arr + 2 * ne, &keys, &cap);
    }
    if (rc == CDN_OK) {
        c.keys = keys;
        qsort_r(ent, used, sizeof *ent, cmp_entry, &c);
        uint32_t *place = rep; /* by entry: its place in the order (rep is done with) */
        for (uint32_t i = 0; i < used; i++)
            place[ent[i]] = i;
        for (uint32_t r = 0; r < n; r++) /* rows per place, then where each place starts */
            if (map[r] != ACL_ORDER_GONE)
                start[place[acl_index_entry_of(x, r)] + 1]++;
        for (uint32_t i = 0; i < used; i++)
            start[i + 1] += start[i];
        for (uint32_t r = 0; r < n; r++) /* in row order: an ACL's rows keep theirs */
            if (map[r] != ACL_ORDER_GONE)
                map[r] = start[place[acl_index_entry_of(x, r)]]++;
    }
    cdn_free(rank);
    cdn_free(rep);
    cdn_free(ent);
    cdn_free(arr);
    cdn_free(start);
    cdn_free(keys);
    return rc;
}
