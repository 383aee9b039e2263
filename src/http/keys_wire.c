/* keys_wire.c: see keys_wire.h; also keys_parse_authorization and keys_header_value of keys.h.
 * Relies on libc, and OPENSSL_cleanse so that decoded secrets do not linger on the stack. */
#include "http/keys_wire.h"
#include "http/keys.h"

#include <openssl/crypto.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

const char keys_wire_b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const char keys_wire_b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t keys_wire_b64_encode(const unsigned char *p, size_t n, const char *alpha, int pad, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[o++] = alpha[v >> 18];
        out[o++] = alpha[v >> 12 & 63];
        out[o++] = alpha[v >> 6 & 63];
        out[o++] = alpha[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
        out[o++] = alpha[v >> 18];
        out[o++] = alpha[v >> 12 & 63];
        if (i + 1 < n)
            out[o++] = alpha[v >> 6 & 63];
        else if (pad)
            out[o++] = '=';
        if (pad)
            out[o++] = '=';
    }
    out[o] = '\0';
    return o;
}

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

long keys_wire_b64_decode(const char *s, size_t n, unsigned char *out, size_t max)
{
    size_t o = 0, pad = 0;
    uint32_t acc = 0;
    int bits = 0;
    while (n && s[n - 1] == '=' && pad < 2) {
        n--;
        pad++;
    }
    if (n % 4 == 1 || (pad && (n + pad) % 4))
        return -1;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value(s[i]);
        if (v < 0)
            return -1;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o == max)
                return -1;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return acc ? -1 : (long)o; /* leftover bits must be zero: one text per byte string */
}

void keys_wire_hex_encode(const unsigned char *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

int keys_wire_hex_decode(const char *s, unsigned char *out, size_t n)
{
    if (strlen(s) != 2 * n)
        return -1;
    for (size_t i = 0; i < 2 * n; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return -1;
        out[i / 2] = (unsigned char)(i % 2 ? out[i / 2] | v : v << 4);
    }
    return 0;
}

int keys_wire_id_valid(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n >= KEYS_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

int keys_wire_secret_chars_valid(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~')
            return 0;
    return 1;
}

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* Splits "id:secret" (n bytes, maybe not NUL-terminated) into the two buffers. */
static int split_pair(const char *p, size_t n, char id[KEYS_ID_MAX],
                      char secret[KEYS_SECRET_MAX + 1])
{
    const char *colon = memchr(p, ':', n);
    if (!colon)
        return CDN_ERR_INVALID;
    size_t il = (size_t)(colon - p), sl = n - il - 1;
    if (il == 0 || il >= KEYS_ID_MAX || sl == 0 || sl > KEYS_SECRET_MAX ||
        !keys_wire_secret_chars_valid(colon + 1, sl))
        return CDN_ERR_INVALID;
    memcpy(id, p, il);
    id[il] = '\0';
    if (!keys_wire_id_valid(id))
        return CDN_ERR_INVALID;
    memcpy(secret, colon + 1, sl);
    secret[sl] = '\0';
    return CDN_OK;
}

static int scheme_is(const char *s, size_t n, const char *name)
{
    return strlen(name) == n && strncasecmp(s, name, n) == 0;
}

int keys_parse_authorization(const char *value, char id[KEYS_ID_MAX],
                             char secret[KEYS_SECRET_MAX + 1])
{
    /* the longest id:secret, and its base64 */
    enum { PAIR_MAX = KEYS_ID_MAX - 1 + 1 + KEYS_SECRET_MAX, TOKEN_MAX = (PAIR_MAX + 2) / 3 * 4 };
    unsigned char raw[PAIR_MAX];
    int rc = CDN_ERR_INVALID;
    id[0] = secret[0] = '\0';
    if (!value)
        return CDN_ERR_INVALID;
    const char *s = value, *end = value + strlen(value);
    while (s < end && is_ows(*s))
        s++;
    while (end > s && is_ows(end[-1]))
        end--;
    const char *scheme = s;
    while (s < end && !is_ows(*s))
        s++;
    size_t slen = (size_t)(s - scheme);
    while (s < end && is_ows(*s))
        s++;
    size_t tlen = (size_t)(end - s);
    if (tlen == 0 || tlen > TOKEN_MAX || memchr(s, ' ', tlen) || memchr(s, '\t', tlen))
        return CDN_ERR_INVALID;
    int bearer = scheme_is(scheme, slen, "Bearer");
    if (bearer && memchr(s, ':', tlen))
        rc = split_pair(s, tlen, id, secret); /* base64 has no ':' */
    else if (bearer || scheme_is(scheme, slen, "ApiKey") || scheme_is(scheme, slen, "Basic")) {
        long n = keys_wire_b64_decode(s, tlen, raw, sizeof raw);
        if (n > 0)
            rc = split_pair((const char *)raw, (size_t)n, id, secret);
        OPENSSL_cleanse(raw, sizeof raw);
    }
    if (rc) {
        OPENSSL_cleanse(secret, KEYS_SECRET_MAX + 1);
        id[0] = '\0';
    }
    return rc;
}

int keys_header_value(const char *id, const char *secret, char out[KEYS_HEADER_MAX])
{
    char pair[KEYS_ID_MAX + 1 + KEYS_SECRET_MAX + 1];
    size_t il = strlen(id), sl = strlen(secret);
    out[0] = '\0';
    if (il >= KEYS_ID_MAX || sl > KEYS_SECRET_MAX)
        return CDN_ERR_INVALID;
    memcpy(pair, id, il);
    pair[il] = ':';
    memcpy(pair + il + 1, secret, sl);
    memcpy(out, "ApiKey ", 7);
    keys_wire_b64_encode((const unsigned char *)pair, il + 1 + sl, keys_wire_b64_std, 1, out + 7);
    OPENSSL_cleanse(pair, sizeof pair);
    return CDN_OK;
}
