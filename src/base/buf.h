/* buf.h: a growable byte buffer with a hard maximum, for anything built from client input.
 * Relies on mem.h. The buffer owns its bytes; release them with cdn_buf_free. */
#ifndef CDN_BUF_H
#define CDN_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct cdn_buf {
    char *data; /* always NUL-terminated when len > 0 or after any append */
    size_t len;
    size_t cap;
    size_t max; /* appends that would pass this fail with CDN_ERR_LIMIT */
} cdn_buf_t;

/* Starts an empty buffer that will never hold more than max bytes (excluding the NUL). */
void cdn_buf_init(cdn_buf_t *b, size_t max);
/* Each returns 0, CDN_ERR_NOMEM or CDN_ERR_LIMIT; on failure the buffer is unchanged. */
int cdn_buf_append(cdn_buf_t *b, const void *p, size_t n);
int cdn_buf_puts(cdn_buf_t *b, const char *s);
int cdn_buf_printf(cdn_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal, quotes included, escaping as RFC 8259 asks. */
int cdn_buf_json_str(cdn_buf_t *b, const char *s);
void cdn_buf_free(cdn_buf_t *b);

#endif
