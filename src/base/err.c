/* err.c: status code names and the error record's setters.
 * Relies on libc's vsnprintf only. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>

int cdn_err_set(cdn_err_t *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = code;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *cdn_strerror(int code)
{
    switch (code) {
    case CDN_OK: return "success";
    case CDN_ERR_NOMEM: return "out of memory";
    case CDN_ERR_INVALID: return "invalid argument";
    case CDN_ERR_NOT_FOUND: return "not found";
    case CDN_ERR_EXISTS: return "already exists";
    case CDN_ERR_IO: return "input/output error";
    case CDN_ERR_CORRUPT: return "stored data is corrupt";
    case CDN_ERR_DENIED: return "permission denied";
    case CDN_ERR_LIMIT: return "size limit exceeded";
    case CDN_ERR_CONFLICT: return "conflicts with current state";
    case CDN_ERR_UNSUPPORTED: return "not supported";
    case CDN_ERR_INTERNAL: return "internal error";
    case CDN_ERR_UNAVAILABLE: return "an outside service did not answer";
    default: return "unknown error";
    }
}
