/* authz.h: the permission model (subjects, nested groups, roles, permissions, grants,
 * conditions), is-authorized decisions, views and explanations. Relies on base/ and jansson.
 *
 * The model lives in memory. Every mutation is one JSON operation applied with authz_apply();
 * the engine facade persists the same op text and replays it on open (see
 * docs/internals/authz.md for the op vocabulary). All read functions may be called from many
 * threads while one thread applies ops; once authz_apply returns, every later read sees the
 * change (a writer-preferring rwlock guards the model, caches are keyed by revision). */
#ifndef CDN_AUTHZ_H
#define CDN_AUTHZ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Limits, enforced when an op is applied (too long -> CDN_ERR_LIMIT naming the field). */
#define AUTHZ_NAME_MAX 128      /* subject, group, role ids, scope type/id (bytes, with NUL) */
#define AUTHZ_PRINCIPAL_MAX 144 /* "service:" + name */
#define AUTHZ_RESOURCE_MAX 256  /* resource strings and patterns */
#define AUTHZ_ACTION_MAX 64
#define AUTHZ_COND_TEXT_MAX 1024 /* a condition as compact JSON */
#define AUTHZ_TENANTS_MAX 64     /* tenants a subject belongs to */
#define AUTHZ_REASON_NAME_MAX 48 /* authz_reason_name's longest string, NUL included, fits */

typedef struct authz_model authz_model_t;

/* Why a decision came out the way it did; authz_reason_name() gives the wire strings. */
typedef enum authz_reason {
    AUTHZ_PERMISSION_GRANTED_NO_CONDITION = 0,
    AUTHZ_PERMISSION_GRANTED_CONDITION_MET,
    AUTHZ_PERMISSION_FOUND_CONDITION_NOT_MET,
    AUTHZ_NO_MATCHING_PERMISSION_FOUND,
    AUTHZ_SUBJECT_NOT_FOUND,
    AUTHZ_INVALID_SCOPE,
    AUTHZ_INVALID_REQUEST,              /* resource not "type:id", or action empty/too long */
    AUTHZ_PERMISSION_DENIED_EXPLICITLY, /* a deny matched: it overrides every allow */
    /* Nothing allowed it but a permission delegated to an outside authorizer (its condition,
     * if any, holding): not authorized here; decision.authorizer names who must be asked. */
    AUTHZ_PERMISSION_DELEGATED,
    AUTHZ_REASON_COUNT
} authz_reason_t;

/* Cache use per request: the default reads and fills the decision cache; REFRESH skips the
 * lookup but still fills (what a miss costs); BYPASS neither reads nor writes it. */
typedef enum authz_cache_mode {
    AUTHZ_CACHE_USE = 0,
    AUTHZ_CACHE_REFRESH,
    AUTHZ_CACHE_BYPASS
} authz_cache_mode_t;

/* One is-authorized question. Strings and JSON are borrowed for the call only. */
typedef struct authz_request {
    const char *subject;          /* subject id (not "user:..."), required */
    const char *resource;         /* "type:id", e.g. "collection:hr-payroll" */
    const char *action;           /* compared case-insensitively */
    const json_t *context;        /* object or NULL: operands "context.*" */
    const json_t *resource_attrs; /* object or NULL: operands "resource.<attr>" */
    const char *scope_type;       /* both NULL = no scope; one without the other is */
    const char *scope_id;         /*   INVALID_SCOPE */
    authz_cache_mode_t cache;
} authz_request_t;

/* The answer. Every buffer is owned by the decision itself (copied out of the model under its
 * lock), so a decision stays valid after later ops; nothing to free. Strings are "" when
 * not applicable (no matching permission). */
typedef struct authz_decision {
    bool authorized;
    bool cached; /* answered from the decision cache */
    authz_reason_t reason;
    uint64_t revision; /* model revision the decision read */
    /* authz_authorize_view: the counter of authz_model_count_changes, read under the same lock
     * (0 without one): the caller's revision of a state that holds this model. */
    uint64_t counted;
    char resource[AUTHZ_RESOURCE_MAX];    /* matched permission's resource pattern */
    char action[AUTHZ_ACTION_MAX];        /* matched permission's action (lowercase) */
    char condition[AUTHZ_COND_TEXT_MAX];  /* its condition as compact JSON, "" if none */
    char role[AUTHZ_NAME_MAX];            /* role that carried it, "" for a direct grant */
    char granted_to[AUTHZ_PRINCIPAL_MAX]; /* "user:alice", "group:eng", ... */
    char authorizer[64];                  /* the matched permission's authorizer, or "" */
} authz_decision_t;

/* A subject's principals at one revision: sorted, unique, e.g. "group:eng", "role:auditor",
 * "user:alice". Shared and reference counted; release with authz_view_release. */
typedef struct authz_view {
    uint64_t revision;
    size_t n;
    const char *const *principals;
    /* internal below */
    _Atomic long refs_;
} authz_view_t;

/* Explanation of one chunk for one subject. */
typedef enum authz_explain_kind {
    AUTHZ_EXPLAIN_ALLOWED = 0, /* `principal` is in the view and allowed */
    AUTHZ_EXPLAIN_DENIED,      /* `principal` is in the view and denied (deny overrides) */
    AUTHZ_EXPLAIN_NO_MATCH,    /* no allowed principal is in the view */
    AUTHZ_EXPLAIN_NO_ACL,      /* the chunk allows nobody (fail closed) */
    AUTHZ_EXPLAIN_SUBJECT_NOT_FOUND,
    AUTHZ_EXPLAIN_OTHER_TENANT, /* the chunk belongs to a tenant the subject is not in */
    AUTHZ_EXPLAIN_LABEL_DENIED  /* it carries a label the model denies the subject */
} authz_explain_kind_t;

typedef struct authz_explanation {
    bool readable;
    authz_explain_kind_t kind;
    char principal[AUTHZ_PRINCIPAL_MAX]; /* normalized principal that decided, or "" */
    uint64_t revision;
    char message[256]; /* one readable sentence */
} authz_explanation_t;

/* ---- model lifecycle (model.c) ---- */

/* Creates an empty model at revision 0. Returns 0 or CDN_ERR_NOMEM. Free with
 * authz_model_free. */
int authz_model_new(authz_model_t **out, cdn_err_t *err);
/* Frees the model; views handed out earlier stay valid until released. NULL is a no-op. */
void authz_model_free(authz_model_t *m);
/* A new model holding a deep copy of src's state (no caches, no change counter), read under
 * src's read lock. Returns 0, CDN_ERR_NOMEM or CDN_ERR_INTERNAL (src is broken). */
int authz_model_clone(authz_model_t *src, authz_model_t **out, cdn_err_t *err);
/* Calls fn with each subject id until it returns non-zero (then returned), under the model's
 * read lock: fn must not call back into m. */
typedef int (*authz_subject_fn)(void *ctx, const char *id);
int authz_subjects(authz_model_t *m, authz_subject_fn fn, void *ctx);
/* The revision: bumped once by every successful authz_apply / authz_import. */
uint64_t authz_model_revision(authz_model_t *m);
/* Makes every successful authz_apply / authz_import also add 1 to *counter while it installs
 * the change, under the model's write lock: whoever reads the changed model then reads the
 * moved counter too (the engine's revision names exactly the model a search used). NULL stops
 * it. Call before the model is shared between threads. */
void authz_model_count_changes(authz_model_t *m, _Atomic uint64_t *counter);

/* ---- mutations (ops.c, json.c) ---- */

/* Applies one op document (see docs/internals/authz.md), e.g.
 * {"op":"add_member","group":"eng","member":"alice","member_kind":"subject"}.
 * Validates everything first: on any error the model is unchanged. Returns 0,
 * CDN_ERR_INVALID (malformed op or condition), CDN_ERR_NOT_FOUND (unknown subject, group,
 * role, membership or grant), CDN_ERR_CONFLICT (group cycle; the message names it),
 * CDN_ERR_LIMIT (a name too long), CDN_ERR_NOMEM (then the model refuses reads with
 * CDN_ERR_INTERNAL until the next successful authz_import: fail closed). */
int authz_apply(authz_model_t *m, const char *op_json, cdn_err_t *err);
/* Same, with an already parsed op (borrowed). */
int authz_apply_json(authz_model_t *m, const json_t *op, cdn_err_t *err);
/* Applies the operations of the array ops (borrowed) in order, all or none, as one change (one
 * revision): they run on a private copy of the model, which replaces it only when each one
 * succeeded; the first that fails is named ("ops[3]: ...") and the model is unchanged. Costs
 * a copy of the model; callers serialise their writes (a write landing meanwhile is lost). */
int authz_apply_batch(authz_model_t *m, const json_t *ops, cdn_err_t *err);

/* Replaces the whole model by the document (same shape as authz_export writes), atomically:
 * on error the model is unchanged. Bumps the revision once. Same codes as authz_apply. */
int authz_import(authz_model_t *m, const char *doc_json, cdn_err_t *err);
/* Writes the whole model as one JSON document (deterministic: sorted by id) to *json_out,
 * which the caller frees with cdn_free. Returns 0, CDN_ERR_NOMEM or CDN_ERR_INTERNAL. */
int authz_export(authz_model_t *m, char **json_out, cdn_err_t *err);

/* ---- decisions (check.c) ---- */

/* Decides one request. Returns 0 whenever a decision was made, including the deny reasons
 * SUBJECT_NOT_FOUND, INVALID_SCOPE and INVALID_REQUEST (then err also carries a message);
 * CDN_ERR_INVALID only for NULL arguments, CDN_ERR_INTERNAL when the model is broken.
 * Unconditional grants win over conditional ones. */
int authz_is_authorized(authz_model_t *m, const authz_request_t *req, authz_decision_t *out,
                        cdn_err_t *err);
/* Decides n requests for one subject that differ only in resource: req->resource is ignored
 * and resources[i] used; out must hold n decisions. Returns as authz_is_authorized. */
int authz_is_authorized_batch(authz_model_t *m, const authz_request_t *req,
                              const char *const *resources, size_t n, authz_decision_t *out,
                              cdn_err_t *err);
/* Decides req and, when it is authorized, takes the subject's view (as authz_view) in the
 * same read of the model, so the decision and the view are of one revision (*view's revision
 * equals out->revision). *view is NULL when not authorized; release it with
 * authz_view_release. Returns as authz_is_authorized, or CDN_ERR_NOMEM from the view. */
int authz_authorize_view(authz_model_t *m, const authz_request_t *req, authz_decision_t *out,
                         authz_view_t **view, cdn_err_t *err);
/* Lists the actions the subject may do on req->resource (req->action ignored), conditions
 * evaluated against the request's context: sorted, unique, lowercase; "*" when a permission
 * allows any action. *actions_out is freed with authz_actions_free. Returns 0,
 * CDN_ERR_NOT_FOUND (unknown subject), CDN_ERR_INVALID, CDN_ERR_NOMEM. */
int authz_list_actions(authz_model_t *m, const authz_request_t *req, char ***actions_out,
                       size_t *n_out, cdn_err_t *err);
void authz_actions_free(char **actions, size_t n);
/* The wire name of a reason, e.g. "PERMISSION_GRANTED_NO_CONDITION"; never NULL. */
const char *authz_reason_name(authz_reason_t r);

/* ---- views and explanations (model_view.c; authz_view_release in model.c) ---- */

/* The subject's view: "user:<id>" or "service:<id>", "group:<g>" for every group it belongs
 * to transitively, "role:<r>" for every role granted without scope to it or to one of its
 * groups. Cached per subject until the next op. Returns 0, CDN_ERR_NOT_FOUND (unknown
 * subject: fail closed), CDN_ERR_NOMEM, CDN_ERR_INTERNAL. Release *out with
 * authz_view_release. */
int authz_view(authz_model_t *m, const char *subject_id, authz_view_t **out, cdn_err_t *err);
/* Same, but roles granted within scope (scope_type, scope_id) are included too (never
 * cached). */
int authz_view_scoped(authz_model_t *m, const char *subject_id, const char *scope_type,
                      const char *scope_id, authz_view_t **out, cdn_err_t *err);
void authz_view_release(authz_view_t *v);
/* The subject's attributes as compact JSON with sorted keys (*json NULL when it has none; free
 * with cdn_free). 0, CDN_ERR_NOT_FOUND, CDN_ERR_NOMEM or CDN_ERR_INTERNAL. */
int authz_subject_attrs(authz_model_t *m, const char *subject_id, char **json, cdn_err_t *err);
/* True when the (already normalized) principal is in the view: binary search. */
bool authz_view_has(const authz_view_t *v, const char *principal);

/* Explains whether a chunk with these ACL lists is readable by the subject: denied principals
 * override allowed ones; an empty allowed list is readable by nobody. The lists are the names
 * the chunk's ACL index holds: a chunk of a tenant names "tenant:T:<principal>", its labels
 * are denied "label:L" (likewise qualified); acl_view_canon checks them first. Returns 0 (the
 * answer is in *out, including SUBJECT_NOT_FOUND), CDN_ERR_INVALID or CDN_ERR_LIMIT for a malformed
 * ACL name, CDN_ERR_NOMEM. */
int authz_explain(authz_model_t *m, const char *subject_id, const char *const *chunk_allowed,
                  size_t n_allowed, const char *const *chunk_denied, size_t n_denied,
                  authz_explanation_t *out, cdn_err_t *err);

/* ---- the history's fragments and slices (track.c, slice.c) ---- */

/* A fragment is the part of the model a decision about one subject reads from one entity:
 * a subject's kind, attributes, direct groups and grants; a group's direct parents and grants;
 * a role's permissions (compact JSON, docs/internals/authz.md). */
#define AUTHZ_ENT_SUBJECT 's'
#define AUTHZ_ENT_GROUP 'g'
#define AUTHZ_ENT_ROLE 'r'

/* Grants may carry a validity window ("valid": {"from", "until"}): they hold only inside it,
 * for decisions and views alike, judged at the current time, or at the moment set here (a
 * private model rebuilt for a past question; 0 goes back to the clock). Not for a shared
 * model: set it before any read. */
void authz_model_set_time(authz_model_t *m, int64_t at_us);
/* True when some grant of the model has a validity window (its decisions depend on time). */
bool authz_model_has_windows(authz_model_t *m);

/* Makes every later change record the entities it touches (or stops it), for authz_changes.
 * Call before the model is shared between threads. */
void authz_model_track(authz_model_t *m, bool on);
/* Calls fn with each entity touched since the last call (all: every live entity instead),
 * once each, with its fragment now, or fragment NULL when it does not exist (deleted); then
 * forgets them. fn must not call back into m. Callers serialise it with their changes.
 * Returns 0, fn's non-zero, CDN_ERR_NOMEM or CDN_ERR_INTERNAL (broken model). */
typedef int (*authz_change_fn)(void *ctx, char kind, const char *id, const char *fragment);
int authz_changes(authz_model_t *m, bool all, authz_change_fn fn, void *ctx, cdn_err_t *err);

/* A slice: the model of one subject built from fragments, asked for one at a time.
 * authz_slice_need gives the next entity it needs (1, *kind and *id valid until the next
 * give) or 0 when it has them all; authz_slice_give hands that entity's fragment (NULL: it
 * did not exist). authz_slice_model then builds a model holding the subject, the groups above
 * it, their grants and the roles those name: its decisions, views and explanations for that
 * subject are the whole model's. Errors: CDN_ERR_NOMEM, CDN_ERR_CORRUPT (a fragment that does
 * not parse, or fragments that contradict each other), CDN_ERR_LIMIT (more than 4,096
 * entities). */
typedef struct authz_slice authz_slice_t;
int authz_slice_new(const char *subject_id, authz_slice_t **out, cdn_err_t *err);
int authz_slice_need(authz_slice_t *s, char *kind, const char **id);
int authz_slice_give(authz_slice_t *s, const char *fragment, size_t n, cdn_err_t *err);
/* Same, with the fragment already parsed, borrowed: it must stay valid until the slice is
 * freed. The slice only reads it and the model built keeps nothing of it, so one parsed
 * fragment may serve many slices on many threads. */
int authz_slice_give_json(authz_slice_t *s, json_t *frag, cdn_err_t *err);
int authz_slice_model(authz_slice_t *s, authz_model_t **out, cdn_err_t *err);
void authz_slice_free(authz_slice_t *s);

/* ---- relationships (rebac_*.c; the language: docs/internals/rebac.md) ---- */

/* The schema and tuples are written by the ops put_schema and write_tuples (authz_apply) and
 * travel with export and import. Each question reads one revision (*revision, may be NULL).
 * Subjects and objects are "type:id"; a cycle in the tuples counts as no path. Errors:
 * CDN_ERR_NOT_FOUND (no schema yet), CDN_ERR_INVALID (a name the schema lacks),
 * CDN_ERR_LIMIT (more than 64 nested relations), CDN_ERR_NOMEM. */
int authz_rebac_check(authz_model_t *m, const char *subject, const char *permission,
                      const char *object, bool *allowed, uint64_t *revision, cdn_err_t *err);
/* Calls fn, under the model's read lock (fn must not call back into m), with the id of each
 * object of type that subject holds permission on, once, in no order, until it returns
 * non-zero (then returned). No ceiling on the count. */
typedef int (*authz_name_fn)(void *ctx, const char *name);
int authz_rebac_lookup_resources(authz_model_t *m, const char *subject, const char *type,
                                 const char *permission, authz_name_fn fn, void *ctx,
                                 uint64_t *revision, cdn_err_t *err);
/* For searches: calls fn with "type:id#perm" for each object of any type on which subject holds
 * one of the permissions perms (each a relation or permission name), under the model's read lock
 * (*revision, may be NULL, is the revision read). 0 (nothing when there is no schema or the
 * subject's type is not in it), fn's non-zero, CDN_ERR_NOMEM or CDN_ERR_INTERNAL. */
int authz_rebac_objects(authz_model_t *m, const char *subject, const char *const *perms,
                        size_t nperms, authz_name_fn fn, void *ctx, uint64_t *revision);
/* Calls fn with "type:id" of each subject of subject_type holding permission on object, once,
 * sorted by when the store first saw them ("type:*" for a wildcard). */
int authz_rebac_lookup_subjects(authz_model_t *m, const char *object, const char *permission,
                                const char *subject_type, authz_name_fn fn, void *ctx,
                                uint64_t *revision, cdn_err_t *err);
/* The tree of why, as compact JSON in *json_out (free with cdn_free): nodes
 * {"node": "type:id#rel", "subjects": [...], "usersets": [...]} for relations,
 * {"node", "expression": {"operation": "union"|"intersection"|"exclusion", "children"}} or
 * {"arrow": REL, "children"} for permissions, {"node", "cycle": true} where a cycle closes. */
int authz_rebac_expand(authz_model_t *m, const char *object, const char *permission,
                       char **json_out, cdn_err_t *err);

#endif
