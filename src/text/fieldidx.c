/* fieldidx.c: keyword hash -> roaring bitmap, numeric sorted arrays with an unsorted tail that
 * is merged when it grows, ISO-8601 dates, persistence. Relies on CRoaring and xxhash. */
#include "text/fieldidx.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/date.h"
#include "base/mem.h"

void fieldidx_init(fieldidx_t *fi)
{
    memset(fi, 0, sizeof *fi);
}

static void field_free(fieldidx_field_t *f)
{
    cdn_free(f->name);
    if (f->exists)
        roaring_bitmap_free(f->exists);
    for (size_t i = 0; i < f->nv; i++)
        roaring_bitmap_free(f->bms[i]);
    cdn_free(f->bms);
    cdn_free(f->vals);
    cdn_free(f->voff);
    cdn_free(f->vlen);
    cdn_free(f->hash);
    cdn_free(f->sorted);
    cdn_free(f->tail);
}

void fieldidx_destroy(fieldidx_t *fi)
{
    for (size_t i = 0; i < fi->n; i++)
        field_free(&fi->f[i]);
    cdn_free(fi->f);
    memset(fi, 0, sizeof *fi);
}

int fieldidx_find(const fieldidx_t *fi, const char *name, size_t *fno)
{
    for (size_t i = 0; i < fi->n; i++)
        if (!strcmp(fi->f[i].name, name)) {
            *fno = i;
            return CDN_OK;
        }
    return CDN_ERR_NOT_FOUND;
}

int fieldidx_add_field(fieldidx_t *fi, const char *name, fieldidx_kind_t kind, cdn_err_t *err)
{
    size_t fno;
    if (fieldidx_find(fi, name, &fno) == CDN_OK)
        return fi->f[fno].kind == kind
                   ? CDN_OK
                   : cdn_err_set(err, CDN_ERR_EXISTS,
                                 "field '%s' is already mapped with another type", name);
    if (cdn_grow((void **)&fi->f, &fi->cap, fi->n + 1, sizeof *fi->f))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory adding field '%s'", name);
    fieldidx_field_t *f = &fi->f[fi->n];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->name = cdn_strdup(name);
    f->exists = roaring_bitmap_create();
    if (!f->name || !f->exists) {
        field_free(f);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory adding field '%s'", name);
    }
    fi->n++;
    return CDN_OK;
}

static int is_kw(const fieldidx_field_t *f)
{
    return f->kind == FIELDIDX_KEYWORD || f->kind == FIELDIDX_BOOL;
}

static uint64_t vhash(const char *s, size_t n)
{
    return XXH64(s, n, 0xf1e1d);
}

static long value_find(const fieldidx_field_t *f, const char *v, size_t len)
{
    if (!f->hcap)
        return -1;
    size_t mask = f->hcap - 1;
    for (size_t h = vhash(v, len) & mask; f->hash[h]; h = (h + 1) & mask) {
        uint32_t i = f->hash[h] - 1;
        if (f->vlen[i] == len && !memcmp(f->vals + f->voff[i], v, len))
            return (long)i;
    }
    return -1;
}

static int value_rehash(fieldidx_field_t *f, size_t cap)
{
    uint32_t *h = cdn_calloc(cap, sizeof *h);
    if (!h)
        return CDN_ERR_NOMEM;
    for (size_t i = 0; i < f->nv; i++) {
        size_t s = vhash(f->vals + f->voff[i], f->vlen[i]) & (cap - 1);
        while (h[s])
            s = (s + 1) & (cap - 1);
        h[s] = (uint32_t)i + 1;
    }
    cdn_free(f->hash);
    f->hash = h;
    f->hcap = cap;
    return CDN_OK;
}

static int value_intern(fieldidx_field_t *f, const char *v, size_t len, size_t *idx)
{
    long at = value_find(f, v, len);
    if (at >= 0) {
        *idx = (size_t)at;
        return CDN_OK;
    }
    if ((f->nv + 1) * 2 > f->hcap && value_rehash(f, f->hcap ? f->hcap * 2 : 64))
        return CDN_ERR_NOMEM;
    size_t c1 = f->nv_cap, c2 = f->nv_cap, c3 = f->nv_cap;
    if (cdn_grow((void **)&f->vals, &f->vals_cap, f->vals_len + len + 1, 1) ||
        cdn_grow((void **)&f->voff, &c1, f->nv + 1, sizeof(uint32_t)) ||
        cdn_grow((void **)&f->vlen, &c2, f->nv + 1, sizeof(uint32_t)) ||
        cdn_grow((void **)&f->bms, &c3, f->nv + 1, sizeof(roaring_bitmap_t *)))
        return CDN_ERR_NOMEM;
    f->nv_cap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    roaring_bitmap_t *b = roaring_bitmap_create();
    if (!b)
        return CDN_ERR_NOMEM;
    memcpy(f->vals + f->vals_len, v, len);
    f->voff[f->nv] = (uint32_t)f->vals_len;
    f->vlen[f->nv] = (uint32_t)len;
    f->bms[f->nv] = b;
    f->vals_len += len;
    size_t mask = f->hcap - 1, h = vhash(v, len) & mask;
    while (f->hash[h])
        h = (h + 1) & mask;
    f->hash[h] = (uint32_t)f->nv + 1;
    *idx = f->nv++;
    return CDN_OK;
}

int fieldidx_add_keyword(fieldidx_t *fi, size_t fno, uint32_t doc, const char *v, size_t len)
{
    fieldidx_field_t *f = &fi->f[fno];
    size_t idx;
    if (!is_kw(f))
        return CDN_ERR_INVALID;
    if (value_intern(f, v, len, &idx))
        return CDN_ERR_NOMEM;
    roaring_bitmap_add(f->bms[idx], doc);
    roaring_bitmap_add(f->exists, doc);
    return CDN_OK;
}

static int cmp_nv(const void *a, const void *b)
{
    const fieldidx_nv_t *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return x->doc < y->doc ? -1 : x->doc > y->doc;
}

/* Merges the sorted tail into the sorted array (writer side only). */
static int merge_tail(fieldidx_field_t *f)
{
    qsort(f->tail, f->ntail, sizeof *f->tail, cmp_nv);
    size_t n = f->nsorted + f->ntail;
    fieldidx_nv_t *m = cdn_malloc((n ? n : 1) * sizeof *m);
    if (!m)
        return CDN_ERR_NOMEM;
    size_t i = 0, j = 0, k = 0;
    while (i < f->nsorted || j < f->ntail)
        m[k++] = (j >= f->ntail || (i < f->nsorted && cmp_nv(&f->sorted[i], &f->tail[j]) <= 0))
                     ? f->sorted[i++]
                     : f->tail[j++];
    cdn_free(f->sorted);
    f->sorted = m;
    f->nsorted = f->sorted_cap = n;
    f->ntail = 0;
    return CDN_OK;
}

int fieldidx_add_number(fieldidx_t *fi, size_t fno, uint32_t doc, double v)
{
    fieldidx_field_t *f = &fi->f[fno];
    if (is_kw(f) || isnan(v))
        return CDN_ERR_INVALID;
    if (cdn_grow((void **)&f->tail, &f->tail_cap, f->ntail + 1, sizeof *f->tail))
        return CDN_ERR_NOMEM;
    f->tail[f->ntail++] = (fieldidx_nv_t){v, doc};
    roaring_bitmap_add(f->exists, doc);
    if (f->ntail > 256 + f->nsorted / 8)
        return merge_tail(f);
    return CDN_OK;
}

void fieldidx_delete(fieldidx_t *fi, uint32_t doc)
{
    for (size_t i = 0; i < fi->n; i++)
        roaring_bitmap_remove(fi->f[i].exists, doc);
}

int fieldidx_term(const fieldidx_t *fi, size_t fno, const char *v, size_t len,
                  roaring_bitmap_t *out)
{
    const fieldidx_field_t *f = &fi->f[fno];
    if (!is_kw(f)) {
        double d;
        char tmp[64];
        if (len >= sizeof tmp)
            return CDN_ERR_INVALID;
        memcpy(tmp, v, len);
        tmp[len] = 0;
        char *end;
        if (f->kind == FIELDIDX_DATE) {
            if (fieldidx_parse_date(v, len, &d))
                return CDN_ERR_INVALID;
        } else {
            d = strtod(tmp, &end);
            if (end == tmp || *end)
                return CDN_ERR_INVALID;
        }
        return fieldidx_range(fi, fno, d, 1, d, 1, out);
    }
    long i = value_find(f, v, len);
    if (i >= 0)
        roaring_bitmap_or_inplace(out, f->bms[i]);
    return CDN_OK;
}

int fieldidx_prefix(const fieldidx_t *fi, size_t fno, const char *p, size_t len,
                    roaring_bitmap_t *out)
{
    const fieldidx_field_t *f = &fi->f[fno];
    if (!is_kw(f))
        return CDN_ERR_INVALID;
    for (size_t i = 0; i < f->nv; i++)
        if (f->vlen[i] >= len && !memcmp(f->vals + f->voff[i], p, len))
            roaring_bitmap_or_inplace(out, f->bms[i]);
    return CDN_OK;
}

/* a - b over bytes, the shorter first when one is a prefix of the other: the order of
 * Elasticsearch's keyword terms (UTF-8 bytes). */
static int bytes_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

int fieldidx_keyword_range(const fieldidx_t *fi, size_t fno, const char *lo, int lo_incl,
                           const char *hi, int hi_incl, roaring_bitmap_t *out)
{
    const fieldidx_field_t *f = &fi->f[fno];
    size_t lol = lo ? strlen(lo) : 0, hil = hi ? strlen(hi) : 0;
    if (f->kind != FIELDIDX_KEYWORD)
        return CDN_ERR_INVALID;
    for (size_t i = 0; i < f->nv; i++) { /* values are not kept in order: each is compared */
        const char *v = f->vals + f->voff[i];
        int a = lo ? bytes_cmp(v, f->vlen[i], lo, lol) : 1,
            b = hi ? bytes_cmp(v, f->vlen[i], hi, hil) : -1;
        if ((lo_incl ? a >= 0 : a > 0) && (hi_incl ? b <= 0 : b < 0))
            roaring_bitmap_or_inplace(out, f->bms[i]);
    }
    return CDN_OK;
}

static int in_range(double v, double lo, int lo_incl, double hi, int hi_incl)
{
    return (lo_incl ? v >= lo : v > lo) && (hi_incl ? v <= hi : v < hi);
}

int fieldidx_range(const fieldidx_t *fi, size_t fno, double lo, int lo_incl, double hi, int hi_incl,
                   roaring_bitmap_t *out)
{
    const fieldidx_field_t *f = &fi->f[fno];
    if (is_kw(f))
        return CDN_ERR_INVALID;
    size_t a = 0, b = f->nsorted;
    while (a < b) { /* first entry with v >= lo */
        size_t m = a + (b - a) / 2;
        if (f->sorted[m].v < lo)
            a = m + 1;
        else
            b = m;
    }
    for (size_t i = a; i < f->nsorted && f->sorted[i].v <= hi; i++)
        if (in_range(f->sorted[i].v, lo, lo_incl, hi, hi_incl))
            roaring_bitmap_add(out, f->sorted[i].doc);
    for (size_t i = 0; i < f->ntail; i++)
        if (in_range(f->tail[i].v, lo, lo_incl, hi, hi_incl))
            roaring_bitmap_add(out, f->tail[i].doc);
    return CDN_OK;
}

int fieldidx_exists(const fieldidx_t *fi, size_t fno, roaring_bitmap_t *out)
{
    roaring_bitmap_or_inplace(out, fi->f[fno].exists);
    return CDN_OK;
}

int fieldidx_parse_date(const char *s, size_t len, double *ms)
{
    double v;
    if (cdn_date_parse(s, len, CDN_DATE_EPOCH_MS_TEXT, &v) != CDN_OK)
        return CDN_ERR_INVALID;
    *ms = floor(v); /* whole milliseconds, the precision of Elasticsearch's date type */
    return CDN_OK;
}

static void put_bitmap(textio_w_t *w, const roaring_bitmap_t *b, const roaring_bitmap_t *live)
{
    roaring_bitmap_t *x = roaring_bitmap_and(b, live);
    if (x && w->map) { /* renumbered: the same docs under their new ids */
        roaring_bitmap_t *m = roaring_bitmap_create();
        roaring_uint32_iterator_t it;
        for (roaring_init_iterator(x, &it); m && it.has_value; roaring_advance_uint32_iterator(&it))
            roaring_bitmap_add(m, textio_doc(w, it.current_value));
        roaring_bitmap_free(x);
        x = m;
    }
    if (!x) {
        w->failed = 1;
        return;
    }
    size_t n = roaring_bitmap_portable_size_in_bytes(x);
    char *buf = cdn_malloc(n ? n : 1);
    if (!buf) {
        w->failed = 1;
    } else {
        roaring_bitmap_portable_serialize(x, buf);
        textio_put_str(w, buf, n);
    }
    cdn_free(buf);
    roaring_bitmap_free(x);
}

static roaring_bitmap_t *get_bitmap(textio_r_t *r)
{
    size_t n = (size_t)textio_get_lim(r, r->len);
    const uint8_t *p = textio_get_bytes(r, n);
    if (!p)
        return NULL;
    roaring_bitmap_t *b = roaring_bitmap_portable_deserialize_safe((const char *)p, n);
    if (!b || roaring_bitmap_portable_size_in_bytes(b) != n) {
        if (b)
            roaring_bitmap_free(b);
        r->bad = 1;
        return NULL;
    }
    return b;
}

void fieldidx_save(const fieldidx_t *fi, const roaring_bitmap_t *live, textio_w_t *w)
{
    textio_put_var(w, fi->n);
    for (size_t i = 0; i < fi->n; i++) {
        const fieldidx_field_t *f = &fi->f[i];
        textio_put_str(w, f->name, strlen(f->name));
        textio_put_var(w, (uint64_t)f->kind);
        put_bitmap(w, f->exists, live);
        if (is_kw(f)) {
            textio_put_var(w, f->nv);
            for (size_t v = 0; v < f->nv; v++) {
                textio_put_str(w, f->vals + f->voff[v], f->vlen[v]);
                put_bitmap(w, f->bms[v], live);
            }
            continue;
        }
        size_t n = 0;
        for (size_t k = 0; k < f->nsorted + f->ntail; k++) {
            const fieldidx_nv_t *e = k < f->nsorted ? &f->sorted[k] : &f->tail[k - f->nsorted];
            n += roaring_bitmap_contains(live, e->doc);
        }
        textio_put_var(w, n);
        for (size_t k = 0; k < f->nsorted + f->ntail; k++) {
            const fieldidx_nv_t *e = k < f->nsorted ? &f->sorted[k] : &f->tail[k - f->nsorted];
            if (roaring_bitmap_contains(live, e->doc)) {
                textio_put_f64(w, e->v);
                textio_put_var(w, textio_doc(w, e->doc));
            }
        }
    }
}

static int load_field(fieldidx_t *fi, textio_r_t *r)
{
    size_t n = (size_t)textio_get_lim(r, 4096);
    const uint8_t *s = textio_get_bytes(r, n);
    char name[4097];
    if (!s)
        return CDN_ERR_CORRUPT;
    memcpy(name, s, n);
    name[n] = 0;
    uint64_t kind = textio_get_var(r);
    if (kind < FIELDIDX_KEYWORD || kind > FIELDIDX_BOOL || memchr(name, 0, n))
        return CDN_ERR_CORRUPT;
    size_t fno;
    if (fieldidx_find(fi, name, &fno) == CDN_OK)
        return CDN_ERR_CORRUPT;
    int rc = fieldidx_add_field(fi, name, (fieldidx_kind_t)kind, NULL);
    if (rc)
        return rc;
    fieldidx_field_t *f = &fi->f[fi->n - 1];
    roaring_bitmap_t *ex = get_bitmap(r);
    if (!ex)
        return CDN_ERR_CORRUPT;
    roaring_bitmap_free(f->exists);
    f->exists = ex;
    uint64_t count = textio_get_lim(r, r->len);
    for (uint64_t k = 0; k < count && !r->bad; k++) {
        if (is_kw(f)) {
            size_t vl = (size_t)textio_get_lim(r, r->len);
            const uint8_t *v = textio_get_bytes(r, vl);
            size_t idx;
            if (!v || value_find(f, (const char *)v, vl) >= 0)
                return CDN_ERR_CORRUPT;
            if (value_intern(f, (const char *)v, vl, &idx))
                return CDN_ERR_NOMEM;
            roaring_bitmap_t *b = get_bitmap(r);
            if (!b)
                return CDN_ERR_CORRUPT;
            roaring_bitmap_free(f->bms[idx]);
            f->bms[idx] = b;
        } else {
            double v = textio_get_f64(r);
            uint64_t doc = textio_get_lim(r, UINT32_MAX);
            if (isnan(v) || r->bad)
                return CDN_ERR_CORRUPT;
            if (fieldidx_add_number(fi, fi->n - 1, (uint32_t)doc, v))
                return CDN_ERR_NOMEM;
        }
    }
    return r->bad ? CDN_ERR_CORRUPT : CDN_OK;
}

int fieldidx_load(fieldidx_t *fi, textio_r_t *r)
{
    fieldidx_init(fi);
    uint64_t n = textio_get_lim(r, 65536);
    int rc = r->bad ? CDN_ERR_CORRUPT : CDN_OK;
    for (uint64_t i = 0; i < n && !rc; i++)
        rc = load_field(fi, r);
    if (rc)
        fieldidx_destroy(fi);
    return rc;
}
