/* api.h: what the public API's source files share: the handle and error conversion.
 * Relies on query/engine; private to src/api. */
#ifndef CDN_API_H
#define CDN_API_H

#include "base/err.h"
#include "cordon.h"
#include "query/engine.h"

struct cordon {
    engine_t *e;
};

/* Copies an internal error into the caller's record (if any) and returns rc. */
int api_ret(int rc, const cdn_err_t *in, cordon_error *err);

/* Checks that a subject is given and well formed. */
int api_check_subject(const cordon_subject *s, cdn_err_t *e);

/* Fills r's fields, metadata and ACL from a stored record obj ({"fields","metadata","allowed",
 * "denied"}); r's id, vector and revision are the caller's. */
int api_fill_record(json_t *obj, cordon_record *r);

#endif
