/* es_json.c: a reply's JSON text written straight into the response buffer, byte for byte what
 * json_dumps(JSON_COMPACT | JSON_REAL_PRECISION(9)) writes, without its loop check (a snprintf
 * and a hash insert per container), its intermediate string and the copy of it. Relies on
 * http/es.h, jansson (the trees), base/buf and base/utf8. */
#include "base/utf8.h"
#include "http/es.h"

#include <stdio.h>
#include <string.h>

/* Containers deeper than this fail the write, so that es_reply leaves the tree to json_dumps
 * (which refuses a tree that holds itself). */
#define WRITE_DEPTH_MAX 2048

static const char *hex_escape(unsigned char c, char u[8])
{
    snprintf(u, 8, "\\u%04X", c);
    return u;
}

/* A string as jansson dumps it: quotes, the mandatory escapes, \uXXXX (upper-case hex) for
 * other control characters, everything else as it is; -1 for bytes that are not UTF-8, which
 * jansson refuses to dump. */
static int put_string(cdn_buf_t *b, const char *s, size_t n)
{
    size_t at, run = 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) {
            if (!cdn_utf8_valid(s, n, &at))
                return -1;
            break;
        }
    if (cdn_buf_append(b, "\"", 1))
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc;
        char u[8];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default: esc = hex_escape(c, u);
        }
        if (cdn_buf_append(b, s + run, i - run) || cdn_buf_puts(b, esc))
            return -1;
        run = i + 1;
    }
    return cdn_buf_append(b, s + run, n - run) || cdn_buf_append(b, "\"", 1) ? -1 : 0;
}

/* A real as jansson's jsonp_dtostr writes it: %.9g, ".0" when that reads as an integer, the
 * exponent without '+' and leading zeros. */
static int put_real(cdn_buf_t *b, double v)
{
    char s[40];
    int n = snprintf(s, sizeof s, "%.9g", v);
    if (n < 0 || (size_t)n >= sizeof s - 3)
        return -1;
    char *e = strchr(s, 'e');
    if (!e && !strchr(s, '.')) {
        memcpy(s + n, ".0", 3);
        n += 2;
    }
    if (e) {
        char *from = e + 1, *to = e + 1;
        if (*from == '-')
            to = ++from;
        else if (*from == '+')
            from++;
        while (*from == '0' && from[1])
            from++;
        memmove(to, from, strlen(from) + 1);
        n = (int)strlen(s);
    }
    return cdn_buf_append(b, s, (size_t)n) ? -1 : 0;
}

/* An integer in decimal, as "%lld" writes it. */
static int put_integer(cdn_buf_t *b, json_int_t v)
{
    char s[24], *p = s + sizeof s;
    /* in unsigned arithmetic, so that the most negative value has its magnitude too */
    unsigned long long m = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do
        *--p = (char)('0' + m % 10);
    while (m /= 10);
    if (v < 0)
        *--p = '-';
    return cdn_buf_append(b, p, (size_t)(s + sizeof s - p)) ? -1 : 0;
}

static int put(cdn_buf_t *b, json_t *j, unsigned depth)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        if (depth >= WRITE_DEPTH_MAX || cdn_buf_append(b, "{", 1))
            return -1;
        int first = 1;
        for (void *it = json_object_iter(j); it; it = json_object_iter_next(j, it)) {
            if ((!first && cdn_buf_append(b, ",", 1)) ||
                put_string(b, json_object_iter_key(it), json_object_iter_key_len(it)) ||
                cdn_buf_append(b, ":", 1) || put(b, json_object_iter_value(it), depth + 1))
                return -1;
            first = 0;
        }
        return cdn_buf_append(b, "}", 1) ? -1 : 0;
    }
    case JSON_ARRAY: {
        if (depth >= WRITE_DEPTH_MAX || cdn_buf_append(b, "[", 1))
            return -1;
        for (size_t i = 0, n = json_array_size(j); i < n; i++)
            if ((i && cdn_buf_append(b, ",", 1)) || put(b, json_array_get(j, i), depth + 1))
                return -1;
        return cdn_buf_append(b, "]", 1) ? -1 : 0;
    }
    case JSON_STRING: return put_string(b, json_string_value(j), json_string_length(j));
    case JSON_INTEGER: return put_integer(b, json_integer_value(j));
    case JSON_REAL: return put_real(b, json_real_value(j));
    case JSON_TRUE: return cdn_buf_puts(b, "true") ? -1 : 0;
    case JSON_FALSE: return cdn_buf_puts(b, "false") ? -1 : 0;
    case JSON_NULL: return cdn_buf_puts(b, "null") ? -1 : 0;
    }
    return -1;
}

int es_json_write(cdn_buf_t *b, json_t *j)
{
    size_t start = b->len;
    if (j && put(b, j, 0) == 0)
        return 0;
    b->len = start; /* as it was */
    if (b->data)
        b->data[start] = '\0';
    return -1;
}
