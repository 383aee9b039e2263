/* api.h: what the public API's source files share: the handle and error conversion.
 * Relies on query/engine; private to src/api. */
#ifndef CDN_API_H
#define CDN_API_H

#include "authz/pdp.h"
#include "base/err.h"
#include "cordon.h"
#include "query/asof.h"
#include "query/audit.h"
#include "query/engine.h"

struct cordon {
    engine_t *e;
    audit_t *audit; /* the retrieval audit (always open: it also reads an older log) */
    asof_t *asof;   /* as-of questions and their cache of past models */
    pdp_t *pdp;     /* outside authorizers (never NULL once open; maybe none configured) */
};

/* Copies an internal error into the caller's record (if any) and returns rc. */
int api_ret(int rc, const cdn_err_t *in, cordon_error *err);

/* Checks that a subject is given and well formed. */
int api_check_subject(const cordon_subject *s, cdn_err_t *e);

/* Fills r's fields, metadata and ACL from a stored record obj ({"fields","metadata","allowed",
 * "denied"}); r's id, vector and revision are the caller's. */
int api_fill_record(json_t *obj, cordon_record *r);

/* Decides n requests (resources NULL: req's one) by the model after the revision the as-of
 * fields name (*rev receives it): api/asof.c, for cordon_is_authorized. */
int api_asof_decide(cordon_t *db, const authz_request_t *req, const char *const *resources,
                    size_t n, authz_decision_t *out, uint64_t *rev, cdn_err_t *e,
                    uint64_t as_of_revision, uint64_t as_of_us);

/* ---- Outside authorizers (api/pdp.c). ---- */

/* Whether name is a configured authorizer. */
int api_pdp_has(cordon_t *db, const char *name);
/* When collection coll delegates to an authorizer and the subject may do action on it in the
 * model: asks the authorizer and returns in *filter (free with cdn_free) the query object to
 * search with, user_filter (may be NULL) and the authorizer's answer together; info says who
 * answered. *filter NULL: search with user_filter as it is (no authorizer, or one that
 * allows every chunk). CDN_ERR_UNAVAILABLE when the authorizer fails: nothing may be read. */
int api_pdp_filter(cordon_t *db, const char *coll, const cordon_subject *s, const char *action,
                   const char *user_filter, char **filter, cordon_authorizer_info *info,
                   cdn_err_t *e);

/* Completes a decision the model delegated (reason PERMISSION_DELEGATED, authorizer named in
 * authorizer) by asking that authorizer about resource: out's authorized, reason and
 * authorizer. A service that fails gives AUTHORIZER_UNAVAILABLE, not an error. */
int api_pdp_check(cordon_t *db, const cordon_authz_request *req, const char *resource,
                  const char *authorizer, cordon_decision *out, cdn_err_t *e);

/* ---- The audit (api/audit.c). ---- */

/* Opens db->audit over dir/audit as opts says (NULL: not recording). */
int api_audit_open(cordon_t *db, const char *dir, const cordon_options *opts, cdn_err_t *e);
/* A caller and request id fit for a record (length, UTF-8): CDN_OK, INVALID or LIMIT. */
int api_audit_check(const char *caller, const char *request_id, cdn_err_t *e);
/* Record a finished search (o: its page of k hits from a collection of dim; sets
 * o->audit_seq), a get of id, and n decisions; each returns CDN_OK when the audit does not
 * record these. A failure means the event must not be answered. */
int api_audit_search(cordon_t *db, const char *coll, const cordon_subject *s, const cordon_query *q,
                     size_t k, uint32_t dim, cordon_result *o, cdn_err_t *e);
int api_audit_get(cordon_t *db, const char *coll, const cordon_subject *s, const char *id,
                  int found, uint64_t revision, uint64_t *seq, cdn_err_t *e);
int api_audit_decisions(cordon_t *db, const cordon_authz_request *req, const char *const *resources,
                        size_t n, cordon_decision *d, cdn_err_t *e);

#endif
