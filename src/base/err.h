/* err.h: status codes shared by every layer, and an error record that carries a message.
 * Relies on nothing; the numeric codes are the ones include/cordon.h publishes. */
#ifndef CDN_ERR_H
#define CDN_ERR_H

#include <stddef.h>

/* 0 is success; failures are negative. Keep in step with cordon_status in cordon.h. */
enum {
    CDN_OK = 0,
    CDN_ERR_NOMEM = -1,        /* an allocation failed */
    CDN_ERR_INVALID = -2,      /* the caller's input is malformed or out of range */
    CDN_ERR_NOT_FOUND = -3,    /* no such collection, chunk, subject, ... (or hidden) */
    CDN_ERR_EXISTS = -4,       /* the name is taken */
    CDN_ERR_IO = -5,           /* the operating system or LMDB refused a read or write */
    CDN_ERR_CORRUPT = -6,      /* stored data does not decode */
    CDN_ERR_DENIED = -7,       /* the subject may not do this */
    CDN_ERR_LIMIT = -8,        /* a documented size limit was exceeded */
    CDN_ERR_CONFLICT = -9,     /* the change contradicts the current state (e.g. a cycle) */
    CDN_ERR_UNSUPPORTED = -10, /* valid, but not implemented by this build */
    CDN_ERR_INTERNAL = -11,    /* a bug: an invariant did not hold */
    CDN_ERR_UNAVAILABLE = -12, /* an outside service the answer depends on did not answer */
};

#define CDN_ERR_MSG_MAX 256

/* An error with a human message that names the field, the problem and the fix.
 * Functions take a `cdn_err_t *err` that may be NULL when the caller wants only the code. */
typedef struct cdn_err {
    int code;
    char msg[CDN_ERR_MSG_MAX];
} cdn_err_t;

/* Records `code` and a printf-style message in err (if not NULL); returns code so that a
 * caller can write `return cdn_err_set(err, CDN_ERR_INVALID, "...")`. */
int cdn_err_set(cdn_err_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A static, never-NULL description of a status code. */
const char *cdn_strerror(int code);

#ifdef CDN_DEBUG
#include <stdio.h>
#include <stdlib.h>
#define CDN_ASSERT(c)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #c);              \
            abort();                                                                               \
        }                                                                                          \
    } while (0)
#else
#define CDN_ASSERT(c) ((void)0)
#endif

#endif
