/* enc.h: the compact byte form in which the ACL index stores packed ACLs, and its decoder.
 * Relies on nothing but stdint; the decoder is inline because every search hit runs it. */
#ifndef CDN_ACL_ENC_H
#define CDN_ACL_ENC_H

#include <stddef.h>
#include <stdint.h>

/* A packed ACL [n_allowed, n_denied, allowed ids..., denied ids...] is stored as LEB128 varints:
 * n_allowed, n_denied, then each id as its difference from the previous id of its list (the
 * first from 0), modulo 2^32. The write path sorts each list and drops repeats, so differences
 * are small and positive: the permissions benchmark's 7 principals (ids below 2,300) take 11
 * to 13 bytes, 12.7 on average. Any order still comes back exactly (a step down costs 5 bytes).
 * The form is a one-to-one function of the words, so the index compares and hashes bytes; and
 * it is prefix-free (the counts say how many varints follow, each varint ends itself). */

/* Longest varint of a uint32. */
#define ACL_ENC_VARINT_MAX 5

/* Bytes enough to encode packed: 2 + n_allowed + n_denied varints. */
static inline size_t acl_enc_bound(const uint32_t *packed)
{
    return ((size_t)2 + packed[0] + packed[1]) * ACL_ENC_VARINT_MAX;
}

/* Writes packed's byte form to out (acl_enc_bound(packed) bytes of room); returns its size. */
size_t acl_enc_write(const uint32_t *packed, uint8_t *out);

/* The size of the byte form starting at enc. */
size_t acl_enc_size(const uint8_t *enc);

/* Reads a byte form id by id: n[0] allowed ids, then n[1] denied ones, each from
 * acl_dec_next. */
typedef struct acl_dec {
    const uint8_t *p; /* the next varint */
    uint32_t n[2];    /* allowed, denied */
} acl_dec_t;

static inline const uint8_t *acl_enc_varint_get(const uint8_t *p, uint32_t *v)
{
    uint32_t r = 0;
    for (unsigned s = 0;; s += 7) {
        r |= (uint32_t)(*p & 0x7f) << s;
        if (!(*p++ & 0x80))
            break;
    }
    *v = r;
    return p;
}

static inline void acl_dec_open(acl_dec_t *d, const uint8_t *enc)
{
    d->p = acl_enc_varint_get(acl_enc_varint_get(enc, &d->n[0]), &d->n[1]);
}

/* The next id; prev is the id this call returned last for the same list, 0 for its first. */
static inline uint32_t acl_dec_next(acl_dec_t *d, uint32_t prev)
{
    uint32_t v;
    d->p = acl_enc_varint_get(d->p, &v);
    return prev + v; /* modulo 2^32, as written */
}

#endif
