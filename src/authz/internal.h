/* internal.h: the in-memory structures shared by the authz source files (not for other layers).
 * Relies on authz.h, base/ and jansson. Every structure here is guarded by the model's rwlock. */
#ifndef CDN_AUTHZ_INTERNAL_H
#define CDN_AUTHZ_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "authz/authz.h"

/* A sorted set of small integer ids (subject, group or role indexes). */
typedef struct az_ids {
    uint32_t *v;
    uint32_t n, cap;
} az_ids_t;

int az_ids_add(az_ids_t *s, uint32_t id);  /* 0 or CDN_ERR_NOMEM; no-op when present */
void az_ids_del(az_ids_t *s, uint32_t id); /* no-op when absent */
bool az_ids_has(const az_ids_t *s, uint32_t id);
void az_ids_free(az_ids_t *s);

/* Name -> index map, open addressing with linear probing; keys are borrowed from the
 * entity tables (the entity owns its id string). */
typedef struct az_map {
    const char **keys;
    uint32_t *vals;
    uint32_t cap, n;
} az_map_t;

int az_map_put(az_map_t *mp, const char *key, uint32_t val);
void az_map_del(az_map_t *mp, const char *key);

/* ---- conditions (cond.c) ---- */
typedef struct az_cond az_cond_t;

/* Everything a condition may read, borrowed for one evaluation. */
typedef struct az_env {
    const char *subject_id;
    const char *subject_kind;
    const json_t *subject_attrs;
    const char *res_type;
    size_t res_type_len;
    const char *res_id;
    const json_t *res_attrs;
    const json_t *context;
    const char *scope_type, *scope_id;
} az_env_t;

/* Compiles a condition JSON tree. Returns 0, CDN_ERR_INVALID or CDN_ERR_NOMEM with the
 * message naming the problem. Free with az_cond_free. */
int az_cond_compile(const json_t *src, az_cond_t **out, cdn_err_t *err);
bool az_cond_eval(const az_cond_t *c, const az_env_t *env);
/* For a deny: true when the condition holds or cannot be decided (an operand is missing, in
 * three-valued logic: And and Or of an unknown stay unknown unless another branch settles
 * them, Not of it is unknown), so that a deny never lapses for want of an attribute. */
bool az_cond_eval_deny(const az_cond_t *c, const az_env_t *env);
void az_cond_free(az_cond_t *c);

/* ---- the model ---- */
enum { AZ_RES_ANY = 0, AZ_RES_EXACT, AZ_RES_PREFIX };
enum { AZ_KIND_USER = 0, AZ_KIND_SERVICE };
enum { AZ_TO_SUBJECT = 0, AZ_TO_GROUP };

typedef struct az_perm {
    char *resource;   /* pattern as written */
    uint32_t res_len; /* for PREFIX: bytes before the trailing '*' */
    uint8_t res_kind;
    bool any_action;  /* action "*" */
    bool deny;        /* "effect": "deny": a match refuses whatever else allows */
    char *action;     /* lowercase */
    az_cond_t *cond;  /* NULL: unconditional */
    json_t *cond_src; /* as given, for export */
    char *cond_text;  /* compact JSON, for decisions */
    /* An outside authorizer (authz/pdp.h) that decides what the permission allows once it
     * matches and its condition holds, or NULL. Decisions here answer such a match
     * PERMISSION_DELEGATED (not authorized); the public API asks the authorizer. */
    char *authorizer;
} az_perm_t;

typedef struct az_grant {
    bool windowed;    /* holds only from from_us (inclusive) until until_us (exclusive) */
    int64_t from_us;  /* INT64_MIN when the window has no start */
    int64_t until_us; /* INT64_MAX when it has no end */
    uint8_t to_kind;
    uint32_t to;
    int64_t role;     /* role index, or -1 for an inline permission */
    az_perm_t *perm;  /* inline permission when role < 0 (owned) */
    char *scope_type; /* NULL when unscoped */
    char *scope_id;
} az_grant_t;

typedef struct az_grants {
    az_grant_t **v;
    uint32_t n, cap;
} az_grants_t;

typedef struct az_subject {
    char *id; /* NULL when deleted (index never reused until import) */
    uint8_t kind;
    json_t *attrs;
    json_t *tenants; /* sorted array of unique tenant names, or NULL for none */
    az_ids_t groups; /* direct */
    az_ids_t all;    /* transitive, kept current by every membership op */
    az_grants_t grants;
} az_subject_t;

typedef struct az_group {
    char *id;
    json_t *attrs;     /* an object kept for callers (an identity provider's names), or NULL */
    az_ids_t parents;  /* groups this one is a direct member of */
    az_ids_t children; /* direct member groups */
    az_ids_t subjects; /* direct member subjects */
    az_ids_t anc;      /* transitive ancestors, excluding itself */
    az_grants_t grants;
} az_group_t;

typedef struct az_role {
    char *id;
    az_perm_t *perms;
    uint32_t nperms;
} az_role_t;

typedef struct az_state {
    az_subject_t *subjects;
    uint32_t nsubjects, capsubjects;
    az_group_t *groups;
    uint32_t ngroups, capgroups;
    az_role_t *roles;
    uint32_t nroles, caproles;
    az_map_t subject_map, group_map, role_map;
    bool windows;           /* some grant has a validity window: decisions depend on the time */
    bool denies;            /* some permission is a deny: a decision scans every grant */
    struct rb_state *rebac; /* relationship schema and tuples (rebac.h), or NULL */
} az_state_t;

/* One decision-cache slot, written by readers under a per-slot sequence lock. */
typedef struct az_dslot {
    _Atomic uint64_t seq;
    _Atomic uint64_t k0, k1, rev;
    _Atomic uint64_t word; /* authorized | reason << 1 | valid << 8 */
    _Atomic uintptr_t perm, grant;
} az_dslot_t;

#define AZ_DCACHE_SLOTS 16384

/* Names of entities, each its kind letter (AUTHZ_ENT_*) then its id, owned. */
typedef struct az_names {
    char **v;
    uint32_t n, cap;
} az_names_t;

struct authz_model {
    pthread_rwlock_t lock;
    az_state_t *st;
    _Atomic uint64_t revision;
    _Atomic uint64_t *changes;      /* a caller's counter each successful change moves, or NULL */
    bool broken;                    /* an op ran out of memory half way: fail closed */
    _Atomic(authz_view_t *) *views; /* per subject index, current revision only */
    uint32_t nviews;
    _Atomic uint32_t views_cached;
    /* The decision cache, allocated by the first check that may use it (a model that is only
     * written, exported or copied never pays its megabyte); never for a slice. */
    bool dcache_wanted;
    _Atomic(az_dslot_t *) dcache;
    int64_t at_us;      /* authz_model_set_time: the moment windows are judged at, 0 = now */
    bool track;         /* authz_model_track: record what each change touches */
    az_names_t touched; /* since the last authz_changes; written by writers only */
};

/* model.c */
/* A new empty model, with or without the decision cache: 0 or CDN_ERR_NOMEM. */
int az_model_alloc(bool decision_cache, authz_model_t **out);
az_state_t *az_state_new(void);
void az_state_free(az_state_t *st);
/* A deep copy of s (the caller holds the model's lock): 0 or CDN_ERR_NOMEM (clone.c). */
int az_state_clone(const az_state_t *s, az_state_t **out);
void az_perm_clear(az_perm_t *p);
void az_grant_free(az_grant_t *g);
bool az_subject_get(const az_state_t *st, const char *id, uint32_t *idx);
/* Subject by id, or by its principal name "user:<id>" / "service:<id>" (kind must match). */
bool az_subject_find(const az_state_t *st, const char *name, uint32_t *idx);
bool az_group_get(const az_state_t *st, const char *id, uint32_t *idx);
bool az_role_get(const az_state_t *st, const char *id, uint32_t *idx);
/* The subject's view (stype/sid NULL, or a scope) for a caller holding the read lock: what
 * authz_view does inside its lock (model_view.c). Same return codes. */
int az_view_get_locked(authz_model_t *m, const char *subject_id, const char *stype, const char *sid,
                       authz_view_t **out, cdn_err_t *err);
/* Drops every cached view; called by writers under the write lock after a change. */
void az_model_views_drop(authz_model_t *m);
/* Installs a new state (import) under the write lock; frees the old one. */
void az_model_swap(authz_model_t *m, az_state_t *st);

/* ops.c: a new entity called id at *idx, zeroed but for its id (its name in the map):
 * 0 or CDN_ERR_NOMEM, and then nothing changed. */
int az_subject_add(az_state_t *st, const char *id, uint32_t *idx);
int az_group_add(az_state_t *st, const char *id, uint32_t *idx);
int az_role_add(az_state_t *st, const char *id, uint32_t *idx);
/* Reads a grant's "valid" object ({"from"?: date, "until"?: date}, base/date.h's forms) into
 * g: 0 or CDN_ERR_INVALID naming `what`. NULL or JSON null: no window. */
int az_window_parse(const json_t *valid, az_grant_t *g, const char *what, cdn_err_t *err);
/* True when g holds at moment now_us (always, for a grant without a window). */
static inline bool az_grant_active(const az_grant_t *g, int64_t now_us)
{
    return !g->windowed || (now_us >= g->from_us && now_us < g->until_us);
}
/* The moment a decision on m judges windows at: its set time, or now (0 when the state has no
 * window, so that no clock is read). */
int64_t az_model_now(const authz_model_t *m);
/* Writes us as RFC 3339 UTC ("2026-12-01T10:00:00Z", with .ffffff when it has a fraction) to
 * out (at least 40 bytes). */
void az_time_text(int64_t us, char *out, size_t cap);
/* Appends g (owned by gs from then on): 0 or CDN_ERR_NOMEM (g still the caller's). */
int az_grants_push(az_grants_t *gs, az_grant_t *g);

/* ops.c: the op vocabulary, applied to a state. `st` may be a private state (import). */
int az_state_apply(az_state_t *st, const json_t *op, cdn_err_t *err);
/* Validates and builds a permission from {"resource","action","condition"?}; `field` names
 * it in messages. */
int az_perm_build(const json_t *src, const char *field, az_perm_t *out, cdn_err_t *err);
/* Checks an id: 1..AUTHZ_NAME_MAX-1 bytes, no ':' nor control characters nor spaces. */
int az_name_check(const char *s, const char *field, cdn_err_t *err);

/* encode.c: encoders shared by export (json.c) and the fragments (track.c). */
json_t *az_perm_json(const az_perm_t *p);
int az_grants_json(const az_state_t *st, const az_grants_t *gs, const char *to, const char *to_kind,
                   json_t *arr);

/* model.c: lists of entity names. 0 or CDN_ERR_NOMEM each. */
int az_names_add(az_names_t *t, char kind, const char *id);
void az_names_free(az_names_t *t);
int az_names_move(az_names_t *dst, az_names_t *src); /* appends src's and frees it */

/* track.c: the entities a change touches. 0 or CDN_ERR_NOMEM each. */
/* The entities op may change in st (before it is applied): those it names, the direct members
 * of a group it deletes, the holders of a role it deletes. */
int az_touch_op(az_names_t *t, const az_state_t *st, const json_t *op);
int az_touch_all(az_names_t *t, const az_state_t *st); /* every live entity of st */

/* graph.c: membership structure kept flattened. */
int az_graph_add_member(az_state_t *st, uint32_t group, uint32_t member, int member_is_group,
                        cdn_err_t *err);
int az_graph_remove_member(az_state_t *st, uint32_t group, uint32_t member, int member_is_group);
int az_graph_delete_group(az_state_t *st, uint32_t group);
void az_graph_delete_subject(az_state_t *st, uint32_t subject);
/* For a state built in one go (a slice): az_graph_link records a direct edge without
 * flattening anything, and az_graph_flatten then computes every group's ancestors and every
 * subject's groups once (CDN_ERR_CORRUPT when the edges make a cycle, CDN_ERR_NOMEM). */
int az_graph_link(az_state_t *st, uint32_t group, uint32_t member, int member_is_group);
int az_graph_flatten(az_state_t *st);

/* Case-insensitive copy to lowercase; false when it does not fit. */
bool az_lower(const char *in, char *out, size_t cap);
/* Resource pattern matching: exact, "*", or a trailing-'*' prefix. */
bool az_perm_matches_resource(const az_perm_t *p, const char *res, size_t res_len);

#endif
