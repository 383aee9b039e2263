/* es_vecscan.c: reads a document line's dense_vector member into floats without a JSON tree:
 * a scan of the top-level object that skips the other members, and a JSON number reader.
 * Relies on libc (strtod for the numbers the exact shortcut cannot convert). */
#include "http/es_vecscan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Powers of ten a double holds exactly. */
static const double exact_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The longest number token handed to strtod; longer ones are declined. */
#define NUMBER_TOKEN_MAX 64

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && is_ws(*p))
        p++;
    return p;
}

/* p at an opening quote: the byte after the closing one, or NULL. *escaped: a backslash in it. */
static const char *skip_string(const char *p, const char *end, int *escaped)
{
    *escaped = 0;
    for (p++; p < end; p++) {
        if (*p == '\\') {
            *escaped = 1;
            if (++p == end)
                return NULL;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

/* Skips one value without checking it (the JSON parser that reads the line later does). */
static const char *skip_value(const char *p, const char *end)
{
    int escaped;
    size_t depth = 0;
    if (p < end && *p == '"')
        return skip_string(p, end, &escaped);
    if (p < end && (*p == '{' || *p == '[')) {
        while (p < end) {
            if (*p == '"') {
                if (!(p = skip_string(p, end, &escaped)))
                    return NULL;
                continue;
            }
            if (*p == '{' || *p == '[')
                depth++;
            else if ((*p == '}' || *p == ']') && --depth == 0)
                return p + 1;
            p++;
        }
        return NULL;
    }
    const char *s = p;
    while (p < end && !is_ws(*p) && *p != ',' && *p != '}' && *p != ']')
        p++;
    return p > s ? p : NULL;
}

/* Reads the JSON number at *pp into *out as strtod would, and moves *pp past it. A number of
 * up to 19 significant digits whose scale is a power of ten a double holds exactly is one
 * correctly rounded multiplication or division (Clinger's fast path); any other goes to
 * strtod. An integer (no fraction, no exponent) of 19 digits or more is declined: a JSON
 * parser may refuse it as too big. */
static int read_number(const char **pp, const char *end, double *out)
{
    const char *p = *pp, *start = p;
    uint64_t m = 0;
    int neg = 0, sig = 0, int_digits = 0, lost = 0, is_int = 1;
    long scale = 0;
    if (p < end && *p == '-')
        neg = 1, p++;
    if (p == end || !is_digit(*p) || (*p == '0' && p + 1 < end && is_digit(p[1])))
        return -1;
    for (; p < end && is_digit(*p); p++, int_digits++) {
        if (m == 0 && *p == '0')
            continue;
        if (sig < 19)
            m = m * 10 + (uint64_t)(*p - '0'), sig++;
        else
            lost = 1, scale++;
    }
    if (p < end && *p == '.') {
        is_int = 0;
        if (++p == end || !is_digit(*p))
            return -1;
        for (; p < end && is_digit(*p); p++) {
            if (m == 0 && *p == '0') {
                scale--;
                continue;
            }
            if (sig < 19)
                m = m * 10 + (uint64_t)(*p - '0'), sig++, scale--;
            else
                lost = 1;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        long e = 0;
        int eneg = 0;
        is_int = 0;
        if (++p < end && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        if (p == end || !is_digit(*p))
            return -1;
        for (; p < end && is_digit(*p); p++)
            if (e < 100000)
                e = e * 10 + (*p - '0');
        scale += eneg ? -e : e;
    }
    if (is_int && int_digits >= 19)
        return -1;
    double d;
    if (m == 0) {
        d = 0;
        neg = neg && !is_int; /* the integer -0 is the integer 0 */
    } else if (!lost && m <= ((uint64_t)1 << 53) && scale >= -22 && scale <= 22) {
        d = scale >= 0 ? (double)m * exact_pow10[scale] : (double)m / exact_pow10[-scale];
    } else {
        char tok[NUMBER_TOKEN_MAX + 1];
        size_t n = (size_t)(p - start);
        if (n > NUMBER_TOKEN_MAX)
            return -1;
        memcpy(tok, start, n);
        tok[n] = '\0';
        d = strtod(tok, NULL);
        neg = 0; /* the token carries its sign */
    }
    *out = neg ? -d : d;
    *pp = p;
    return 0;
}

/* p at '[': reads dim numbers into out; the byte after ']' or NULL. */
static const char *read_array(const char *p, const char *end, uint32_t dim, float *out,
                              double *sumsq)
{
    uint32_t n = 0;
    double s = 0;
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']')
        return NULL; /* empty: never dim values */
    for (;;) {
        double d;
        if (n == dim || read_number(&p, end, &d) || !isfinite(d) || fabs(d) > 3.4e38)
            return NULL;
        out[n++] = (float)d;
        s += d * d;
        p = skip_ws(p, end);
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            continue;
        }
        if (p < end && *p == ']' && n == dim) {
            *sumsq = s;
            return p + 1;
        }
        return NULL;
    }
}

int es_vecscan(const char *line, size_t len, const char *field, uint32_t dim, float *out,
               es_vecscan_t *at)
{
    const char *p = line, *end = line + len;
    size_t flen = field ? strlen(field) : 0;
    if (!flen || !dim || strchr(field, '.'))
        return -1;
    p = skip_ws(p, end);
    if (p == end || *p != '{')
        return -1;
    p = skip_ws(p + 1, end);
    while (p < end && *p == '"') {
        int escaped;
        const char *key = p + 1, *kend = skip_string(p, end, &escaped);
        if (!kend)
            return -1;
        int match = !escaped && (size_t)(kend - 1 - key) == flen && !memcmp(key, field, flen);
        p = skip_ws(kend, end);
        if (p == end || *p != ':')
            return -1;
        p = skip_ws(p + 1, end);
        if (match) {
            const char *after =
                p < end && *p == '[' ? read_array(p, end, dim, out, &at->sumsq) : NULL;
            if (!after)
                return -1;
            at->start = (size_t)(p - line);
            at->end = (size_t)(after - line);
            return 0;
        }
        if (!(p = skip_value(p, end)))
            return -1;
        p = skip_ws(p, end);
        if (p == end || *p != ',')
            return -1; /* the end of the object, or a line the scan cannot follow */
        p = skip_ws(p + 1, end);
    }
    return -1;
}
