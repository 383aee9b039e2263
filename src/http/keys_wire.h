/* keys_wire.h: how API keys travel: base64 and hex, the characters ids and secrets may hold,
 * and the Authorization header forms (keys_parse_authorization in keys.h). Relies on nothing. */
#ifndef CDN_HTTP_KEYS_WIRE_H
#define CDN_HTTP_KEYS_WIRE_H

#include <stddef.h>

/* The base64 alphabets: standard (headers) and URL-safe (printed secrets). */
extern const char keys_wire_b64_std[];
extern const char keys_wire_b64_url[];

/* Encodes n bytes into out (room for 4 * ceil(n / 3) + 1), with '=' padding if pad; returns the
 * length written. */
size_t keys_wire_b64_encode(const unsigned char *p, size_t n, const char *alphabet, int pad,
                            char *out);
/* Decodes standard or URL-safe base64, padded or not, into out (at most max bytes). Strict:
 * padding only at the end and only as much as the length needs, unused bits zero. Returns the
 * decoded length, or -1. */
long keys_wire_b64_decode(const char *s, size_t n, unsigned char *out, size_t max);

/* Lowercase hex of n bytes into out (2n + 1); and back: 0, or -1 unless s is exactly 2n hex
 * digits. */
void keys_wire_hex_encode(const unsigned char *p, size_t n, char *out);
int keys_wire_hex_decode(const char *s, unsigned char *out, size_t n);

/* 1 when id is 1..KEYS_ID_MAX-1 characters of [A-Za-z0-9._-]. */
int keys_wire_id_valid(const char *id);
/* 1 when s[0..n) is printable ASCII without spaces: what fits in every header form. */
int keys_wire_secret_chars_valid(const char *s, size_t n);

#endif
