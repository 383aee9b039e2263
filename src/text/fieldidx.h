/* fieldidx.h: metadata field index for filters: keyword/boolean values -> doc bitmaps, numeric
 * and date values in a sorted array (plus a small unsorted tail), per-field exists bitmaps.
 * Relies on CRoaring; deleted docs leave stale entries that callers mask with the live set. */
#ifndef CDN_FIELDIDX_H
#define CDN_FIELDIDX_H

#include <roaring/roaring.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "text/textio.h"

/* Values are stored in index files: never renumber. */
typedef enum fieldidx_kind {
    FIELDIDX_KEYWORD = 1,
    FIELDIDX_NUMBER = 2,
    FIELDIDX_DATE = 3, /* stored as epoch milliseconds */
    FIELDIDX_BOOL = 4, /* stored as the keywords "true" / "false" */
} fieldidx_kind_t;

typedef struct fieldidx_nv {
    double v;
    uint32_t doc;
} fieldidx_nv_t;

typedef struct fieldidx_field {
    char *name;
    fieldidx_kind_t kind;
    roaring_bitmap_t *exists;
    /* keyword / bool: value i is vals[voff[i] .. +vlen[i]) with bitmap bms[i] */
    char *vals;
    size_t vals_len, vals_cap;
    uint32_t *voff, *vlen;
    roaring_bitmap_t **bms;
    size_t nv, nv_cap;
    uint32_t *hash; /* open addressing: value index + 1 */
    size_t hcap;
    /* number / date */
    fieldidx_nv_t *sorted, *tail;
    size_t nsorted, sorted_cap, ntail, tail_cap;
} fieldidx_field_t;

typedef struct fieldidx {
    fieldidx_field_t *f;
    size_t n, cap;
} fieldidx_t;

void fieldidx_init(fieldidx_t *fi);
void fieldidx_destroy(fieldidx_t *fi);

/* Declares a field; 0, CDN_ERR_EXISTS (same name, other kind), CDN_ERR_NOMEM. Declaring the
 * same name and kind again is a no-op. */
int fieldidx_add_field(fieldidx_t *fi, const char *name, fieldidx_kind_t kind, cdn_err_t *err);
/* Index of a field by name: 0 with *fno, or CDN_ERR_NOT_FOUND. */
int fieldidx_find(const fieldidx_t *fi, const char *name, size_t *fno);

/* Adds one value for doc (a field may hold several). keyword/bool take bytes; number/date
 * take a double. Returns 0, CDN_ERR_INVALID (wrong kind for the call) or CDN_ERR_NOMEM. */
int fieldidx_add_keyword(fieldidx_t *fi, size_t fno, uint32_t doc, const char *v, size_t len);
int fieldidx_add_number(fieldidx_t *fi, size_t fno, uint32_t doc, double v);
/* Forgets doc in every exists bitmap; other entries are masked by the caller's live set. */
void fieldidx_delete(fieldidx_t *fi, uint32_t doc);

/* Each ORs the matching docs into out (which the caller owns). 0 or CDN_ERR_INVALID when the
 * field's kind does not support the operation. */
int fieldidx_term(const fieldidx_t *fi, size_t fno, const char *v, size_t len,
                  roaring_bitmap_t *out);
int fieldidx_prefix(const fieldidx_t *fi, size_t fno, const char *p, size_t len,
                    roaring_bitmap_t *out);
int fieldidx_range(const fieldidx_t *fi, size_t fno, double lo, int lo_incl, double hi, int hi_incl,
                   roaring_bitmap_t *out);
int fieldidx_exists(const fieldidx_t *fi, size_t fno, roaring_bitmap_t *out);
/* Keyword values between lo and hi (NULL: open) in byte order, as Elasticsearch orders keyword
 * terms; CDN_ERR_INVALID for other kinds. Linear in the field's distinct values. */
int fieldidx_keyword_range(const fieldidx_t *fi, size_t fno, const char *lo, int lo_incl,
                           const char *hi, int hi_incl, roaring_bitmap_t *out);

/* Parses a date as cdn_date_parse does (base/date.h: ISO-8601 forms, or numeric text as epoch
 * milliseconds) to whole epoch milliseconds; 0 or CDN_ERR_INVALID. */
int fieldidx_parse_date(const char *s, size_t len, double *ms);

/* Persistence (live docs only are kept: pass the live set). load: 0, CORRUPT or NOMEM. */
void fieldidx_save(const fieldidx_t *fi, const roaring_bitmap_t *live, textio_w_t *w);
int fieldidx_load(fieldidx_t *fi, textio_r_t *r);

#endif
