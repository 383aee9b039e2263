/* keys.h: the API keys of `cordon serve`: create, list, revoke, and verify id:secret pairs.
 * Relies on base/ and OpenSSL's libcrypto; the store is <data_dir>/keys.json (internals/keys.md).
 */
#ifndef CDN_HTTP_KEYS_H
#define CDN_HTTP_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define KEYS_ID_MAX 32     /* key ids: "k" + 16 hex chars; a caller-chosen id has at most 31 */
#define KEYS_SECRET_MAX 64 /* secrets as printed: 43 base64url chars of 32 random bytes */
#define KEYS_PRINCIPALS_MAX 64
/* Room for "ApiKey " and the base64 of the longest id:secret, with its NUL. */
#define KEYS_HEADER_MAX 144
/* The shortest secret keys_add takes (keys_create's have 43 characters). */
#define KEYS_SECRET_MIN 16

typedef struct keys keys_t;

typedef struct keys_spec { /* what a new key may do */
    const char *name;      /* a label, 1..64 printable chars (UTF-8, no control characters) */
    const char *subject;   /* subject of the permission model it acts as, or NULL */
    const char *const *principals;
    size_t n_principals; /* or asserted principals ("group:eng"), for asserted-principal
                            collections */
    int admin;           /* manages keys and indexes, writes everywhere */
    int run_as;          /* may act for another subject (es-security-runas-user) */
} keys_spec_t;

typedef struct keys_info {
    char id[KEYS_ID_MAX];
    char name[65];
    char subject[129]; /* "" when the key holds principals, or neither (an admin key) */
    char principals[KEYS_PRINCIPALS_MAX][145];
    size_t n_principals;
    int admin, run_as;
    int64_t created_ms; /* epoch ms */
} keys_info_t;

/* Opens the key store of a data directory, which must exist: reads <data_dir>/keys.json if it
 * is there (the file is created, mode 0600, by the first write). Returns CDN_OK, CDN_ERR_NOT_FOUND
 * (no such directory), CDN_ERR_INVALID (not a directory, path too long), CDN_ERR_IO,
 * CDN_ERR_CORRUPT (the message names the file) or CDN_ERR_NOMEM. Close with keys_close. */
int keys_open(const char *data_dir, keys_t **out, cdn_err_t *err);
void keys_close(keys_t *k);

/* Creates a key: a new id, a secret of 32 random bytes (getrandom) printed as 43 base64url
 * characters into secret, of which only a salted HMAC-SHA-256 is kept. Show the secret once;
 * it cannot be recovered. Returns CDN_OK with *info (if not NULL), CDN_ERR_INVALID or
 * CDN_ERR_LIMIT (the spec; the message names the field), CDN_ERR_IO, CDN_ERR_CORRUPT,
 * CDN_ERR_NOMEM. */
int keys_create(keys_t *k, const keys_spec_t *spec, keys_info_t *info, char secret[KEYS_SECRET_MAX],
                cdn_err_t *err);

/* Adds a key with a caller-chosen id and secret (CORDON_BOOTSTRAP_KEY=ID:SECRET); CDN_ERR_EXISTS if
 * the id exists with another secret, CDN_OK if identical. The id is 1..31 characters of
 * [A-Za-z0-9._-]; the secret 16..64 printable ASCII characters without spaces. "Identical" is
 * the id and secret: the stored key keeps its spec. A revoked id is never reused: adding it
 * again is CDN_ERR_EXISTS too (revocation must survive a restart with the same bootstrap key).
 * Other codes as keys_create. */
int keys_add(keys_t *k, const char *id, const char *secret, const keys_spec_t *spec,
             cdn_err_t *err);

/* The live keys (never revoked ones), oldest first; *out is NULL when *n is 0. Sees other
 * processes' changes as keys_verify does. cdn_free(*out). CDN_OK, CDN_ERR_IO, CDN_ERR_CORRUPT,
 * CDN_ERR_NOMEM. */
int keys_list(keys_t *k, keys_info_t **out, size_t *n, cdn_err_t *err); /* cdn_free(*out) */

/* Revokes a key for good; CDN_ERR_NOT_FOUND if unknown (or already revoked), else as
 * keys_create. */
int keys_revoke(keys_t *k, const char *id, cdn_err_t *err);

/* How many live keys there are, after a best-effort reload (the last table read when the file
 * cannot be read). */
size_t keys_count(keys_t *k);

/* Checks id:secret; CDN_OK and *info, or CDN_ERR_DENIED (unknown id, wrong secret, revoked: the
 * same code and message). Thread-safe; sees keys created or revoked by another process (e.g. the
 * CLI while the server runs) on the next call: stat the file and reload when its (inode, size,
 * mtime_ns) changed. CDN_ERR_IO or CDN_ERR_CORRUPT when the file cannot be read: the caller
 * denies then too. */
int keys_verify(keys_t *k, const char *id, const char *secret, keys_info_t *info, cdn_err_t *err);

/* Parses an Authorization header value: "ApiKey <base64(id:secret)>" (what Elasticsearch clients
 * send), "Bearer <base64(id:secret)>" or "Bearer <id>:<secret>" (also "Basic base64(id:secret)").
 * Schemes are case-insensitive; base64 may be standard or URL-safe, padded or not. CDN_OK, or
 * CDN_ERR_INVALID if malformed (then id and secret are empty strings). */
int keys_parse_authorization(const char *value, char id[KEYS_ID_MAX],
                             char secret[KEYS_SECRET_MAX + 1]);

/* Writes the Authorization header value "ApiKey <base64(id:secret)>" into out (KEYS_HEADER_MAX
 * bytes). CDN_OK, or CDN_ERR_INVALID when id or secret is too long. */
int keys_header_value(const char *id, const char *secret, char out[KEYS_HEADER_MAX]);

#endif
