/* textio.h: a growable output byte vector and a bounds-checked reader with varints, shared by
 * the text layer's save and load code. Relies on mem.h; readers never read past their end. */
#ifndef CDN_TEXTIO_H
#define CDN_TEXTIO_H

#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "base/mem.h"

typedef struct textio_w {
    uint8_t *p;
    size_t len, cap;
    int failed; /* sticky: an allocation failed; check once at the end */
    /* Doc ids are written as map[doc] when map is set (a compaction's renumbering: one to one
     * on the live docs, in any order; writers of sorted lists sort them by the new ids); NULL
     * writes them as they are. */
    const uint32_t *map;
    uint32_t n_map;
} textio_w_t;

/* A doc id as the writer writes it (textio_w_t.map). A doc past the map is written as
 * UINT32_MAX, which no reader takes: the caller's map must cover every live doc. */
static inline uint32_t textio_doc(const textio_w_t *w, uint32_t doc)
{
    if (!w->map)
        return doc;
    return doc < w->n_map ? w->map[doc] : UINT32_MAX;
}

typedef struct textio_r {
    const uint8_t *p;
    size_t len, off;
    int bad; /* sticky: a read went past the end or a value was out of range */
} textio_r_t;

static inline void textio_put(textio_w_t *w, const void *src, size_t n)
{
    if (w->failed || cdn_grow((void **)&w->p, &w->cap, w->len + n, 1)) {
        w->failed = 1;
        return;
    }
    memcpy(w->p + w->len, src, n);
    w->len += n;
}

static inline void textio_put_var(textio_w_t *w, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    textio_put(w, b, n);
}

static inline void textio_put_f64(textio_w_t *w, double d)
{
    textio_put(w, &d, sizeof d);
}

static inline void textio_put_str(textio_w_t *w, const char *s, size_t n)
{
    textio_put_var(w, n);
    textio_put(w, s, n);
}

static inline uint64_t textio_get_var(textio_r_t *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->off >= r->len) {
            r->bad = 1;
            return 0;
        }
        uint8_t b = r->p[r->off++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    r->bad = 1;
    return 0;
}

/* A varint that must be <= max (a count or index); otherwise marks the reader bad. */
static inline uint64_t textio_get_lim(textio_r_t *r, uint64_t max)
{
    uint64_t v = textio_get_var(r);
    if (v > max) {
        r->bad = 1;
        return 0;
    }
    return v;
}

static inline const uint8_t *textio_get_bytes(textio_r_t *r, size_t n)
{
    if (r->bad || n > r->len - r->off) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *p = r->p + r->off;
    r->off += n;
    return p;
}

static inline double textio_get_f64(textio_r_t *r)
{
    double d = 0;
    const uint8_t *p = textio_get_bytes(r, sizeof d);
    if (p)
        memcpy(&d, p, sizeof d);
    return d;
}

#endif
