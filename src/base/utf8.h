/* utf8.h: validation of UTF-8 text from callers, so that nothing stored can fail to encode
 * as JSON later. Relies on nothing. */
#ifndef CDN_UTF8_H
#define CDN_UTF8_H

#include <stddef.h>

/* 1 when s[0..n) is well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF);
 * otherwise 0 with *bad_at set to the offset of the first bad byte. */
int cdn_utf8_valid(const char *s, size_t n, size_t *bad_at);

/* 1 when s[0..n) holds a control character: C0 (below 0x20), DEL, or C1 (U+0080..U+009F).
 * Assumes s is valid UTF-8. */
int cdn_utf8_has_control(const char *s, size_t n, size_t *at);

#endif
