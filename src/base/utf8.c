/* utf8.c: a strict UTF-8 validator (RFC 3629) and a control-character scan.
 * Relies on nothing. */
#include "base/utf8.h"

int cdn_utf8_valid(const char *str, size_t n, size_t *bad_at)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t len;
        unsigned lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0)
                lo = 0xA0; /* no overlongs */
            if (c == 0xED)
                hi = 0x9F; /* no surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0)
                lo = 0x90;
            if (c == 0xF4)
                hi = 0x8F; /* at most U+10FFFF */
        } else {
            break;
        }
        if (i + len > n || s[i + 1] < lo || s[i + 1] > hi)
            break;
        size_t k = 2;
        while (k < len && s[i + k] >= 0x80 && s[i + k] <= 0xBF)
            k++;
        if (k < len)
            break;
        i += len;
    }
    if (i < n && bad_at)
        *bad_at = i;
    return i == n;
}

int cdn_utf8_has_control(const char *str, size_t n, size_t *at)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < 0x20 || s[i] == 0x7F || (s[i] == 0xC2 && i + 1 < n && s[i + 1] <= 0x9F)) {
            if (at)
                *at = i;
            return 1;
        }
    }
    return 0;
}
