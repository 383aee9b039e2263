/* buf.c: bounded growable buffers.
 * Relies on mem.h and vsnprintf. */
#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdio.h>
#include <string.h>

void cdn_buf_init(cdn_buf_t *b, size_t max)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max;
}

static int reserve(cdn_buf_t *b, size_t extra)
{
    size_t need;
    if (extra > b->max || b->len > b->max - extra)
        return CDN_ERR_LIMIT;
    need = b->len + extra + 1;
    if (need <= b->cap)
        return CDN_OK;
    return cdn_grow((void **)&b->data, &b->cap, need, 1);
}

int cdn_buf_append(cdn_buf_t *b, const void *p, size_t n)
{
    int rc = reserve(b, n);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return CDN_OK;
}

int cdn_buf_puts(cdn_buf_t *b, const char *s)
{
    return cdn_buf_append(b, s, strlen(s));
}

int cdn_buf_printf(cdn_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    int n, rc;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return CDN_ERR_INVALID;
    rc = reserve(b, (size_t)n);
    if (rc)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return CDN_OK;
}

int cdn_buf_json_str(cdn_buf_t *b, const char *s)
{
    size_t start = b->len;
    int rc = cdn_buf_append(b, "\"", 1);
    while (rc == 0 && *s) {
        size_t run = 0; /* bytes that need no escape go in one append */
        while (s[run] && s[run] != '"' && s[run] != '\\' && (unsigned char)s[run] >= 0x20)
            run++;
        if (run) {
            rc = cdn_buf_append(b, s, run);
            s += run;
            continue;
        }
        unsigned char c = (unsigned char)*s++;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            rc = cdn_buf_append(b, esc, 2);
        } else {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            rc = cdn_buf_append(b, esc, 6);
        }
    }
    if (rc == 0)
        rc = cdn_buf_append(b, "\"", 1);
    if (rc) { /* leave the buffer as it was */
        b->len = start;
        if (b->data)
            b->data[start] = '\0';
    }
    return rc;
}

void cdn_buf_free(cdn_buf_t *b)
{
    cdn_free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
