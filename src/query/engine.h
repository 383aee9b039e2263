/* engine.h: an open data directory: the store, the collections, the principal table and the
 * revision, with the locks that order writers and let searches run beside them.
 * Relies on store/, acl/ and query/collection. The public API (src/api) is a facade over it. */
#ifndef CDN_ENGINE_H
#define CDN_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "acl/acl.h"
#include "authz/authz.h"
#include "base/err.h"
#include "query/coll.h"
#include "store/store.h"

#define ENGINE_OBJECT_PERMS_MAX 16 /* distinct permissions chunks' objects may name */
#define ENGINE_SELF_MAX (AUTHZ_PRINCIPAL_MAX + 8) /* "service:<subject>" */

/* The ids of the objects the last subjects read (engine_reach.c). */
typedef struct engine_objcache engine_objcache_t;
int engine_objcache_new(engine_objcache_t **out);
void engine_objcache_free(engine_objcache_t *c);

typedef struct engine {
    char *dir;
    int dirlock; /* the directory's lock (store/dirlock.h), -1 when not taken */
    store_t *store;
    pthread_mutex_t write_lock;  /* one writer at a time, as LMDB allows */
    pthread_rwlock_t meta_lock;  /* the collection list and the principal table */
    pthread_rwlock_t model_gate; /* model writers hold it for writing while they change the
                                    model in memory; see engine_read_begin */
    acl_intern_t principals;
    /* The permissions chunks' objects name ("object:type:id#perm"): what a view of a subject
     * of the model gains objects for (engine_subject_resolve). Under meta_lock. */
    char object_perms[ENGINE_OBJECT_PERMS_MAX][64];
    size_t n_object_perms;
    engine_objcache_t *objcache;
    size_t principals_saved; /* principals [0, saved) are in the store; the rest were
                                interned by a write that failed and wait for the next */
    coll_t **colls;          /* sorted by name */
    /* Some collection has named an outside authorizer since the open (never cleared): until
     * then a search need not look its collection up for one (src/api/pdp.c). */
    _Atomic int any_delegated;
    size_t ncolls, colls_cap;
    uint32_t next_coll_id;
    _Atomic uint64_t revision; /* the last acknowledged revision */
    authz_model_t *model;      /* the permission model, replayed from STORE_MODEL_LOG */
    /* The log's size since its last whole-model record, and that record's size: a log that
     * outgrows the model is folded into one record (engine_model.c). Under write_lock. */
    uint64_t log_bytes, snapshot_bytes;
    /* Model writes since the history's last checkpoint of the whole model (engine_model.c).
     * Under write_lock. */
    uint32_t hist_since_snap;
    atomic_int model_broken;    /* memory got ahead of a failed commit: fail closed */
    uint64_t plan_exact_floats; /* planner threshold (0 = PLAN_EXACT_FLOATS) */
    int report_work;            /* results' candidates count work (cordon_options) */
} engine_t;

/* Opens the data directory dir, creating it if missing, unless must_exist: then a directory
 * without a database gives CDN_ERR_NOT_FOUND and nothing is created. Free with engine_close. */
int engine_open(const char *dir, uint64_t map_size, int must_exist, engine_t **out, cdn_err_t *err);
void engine_close(engine_t *e);
/* CDN_OK while every part can serve; else CDN_ERR_IO naming the first part that fails closed
 * until a reopen: the database (store_check), the permission model (a failed model commit), a
 * collection (its indexes missed a committed write). */
int engine_check(engine_t *e, cdn_err_t *err);

/* Finds a collection by name and takes a reference (release with coll_unref).
 * CDN_ERR_NOT_FOUND with a message naming it. */
int engine_coll_get(engine_t *e, const char *name, coll_t **out, cdn_err_t *err);

/* Takes (*c)'s read lock, first moving *c to the collection's current copy when a compaction
 * (compact.h) replaced it since the lookup: the store's row numbers are the new copy's from its
 * commit on. 0 with the lock held on *c (the caller owns *c's reference, as before), or
 * CDN_ERR_NOT_FOUND when the collection was dropped meanwhile (no lock held). */
int engine_coll_rdlock(engine_t *e, coll_t **c, cdn_err_t *err);
/* Puts new in old's place in the collection list (which takes a reference to new and drops
 * its reference to old). Under the writer lock. */
void engine_coll_replace(engine_t *e, coll_t *old, coll_t *new_c);

/* Creates a collection and, when attrs_json is not NULL, its attrs, in one commit: no reader
 * and no restart sees the one without the other. */
int engine_coll_create(engine_t *e, const coll_config_t *cfg, const char *attrs_json,
                       cdn_err_t *err);
int engine_coll_drop(engine_t *e, const char *name, cdn_err_t *err);

/* Changes a collection after creation, in one durable write: attrs_json (a JSON object the
 * caller keeps with it; NULL = keep), text fields and metadata fields to index from now on
 * (n_meta names with textidx kinds; fields already there with the same kind are skipped). A
 * new field's
 * values are indexed from every live row at once, under the collection's write lock (the cost
 * of one text index rebuild). */
int engine_coll_update(engine_t *e, const char *name, const char *attrs_json,
                       const char *const *text_names, size_t n_text, const char *const *meta_names,
                       const int *meta_kinds, size_t n_meta, cdn_err_t *err);
/* The collection's attrs JSON ("{}" when none were set); *json is freed with cdn_free. */
int engine_coll_attrs(engine_t *e, const char *name, char **json, cdn_err_t *err);

/* Turns principal names (as a subject presents them) into sorted unique ids; names that no
 * chunk ever named are left out, since they open nothing. A search calls it under the
 * collection's read lock: every principal the ACLs it reads name is interned by then (writers
 * intern before they apply), so a deny naming a principal new to the engine is never missed.
 * *ids is freed with cdn_free. */
int engine_view_ids(engine_t *e, const char *const *names, size_t n, uint32_t **ids, size_t *nids,
                    cdn_err_t *err);

/* ---- The permission model (query/engine_model.c). ---- */

/* Applies one model log record to m: kind 'O' (an op), 'B' (a JSON array applied as one) or
 * 'I' (a whole model), text its JSON. For replays of the log and of the history. */
int engine_model_record_apply(authz_model_t *m, char kind, const char *text, cdn_err_t *err);
/* Writes, in write transaction t, the fragments (authz_changes) of the entities the model's
 * changes touched since the last call, or of every entity with all, as versions of rev. */
int engine_fragments_put(engine_t *e, store_txn_t *t, bool all, uint64_t rev, cdn_err_t *err);
/* Replays the model log inside read transaction t (at open). */
int engine_model_load(engine_t *e, store_txn_t *t, cdn_err_t *err);
/* Applies one model operation (authz op JSON) and persists it; *rev is the new revision. */
int engine_model_apply(engine_t *e, const char *op_json, uint64_t *rev, cdn_err_t *err);
/* Replaces the whole model with doc (authz export format) and persists it. */
int engine_model_import(engine_t *e, const char *doc_json, uint64_t *rev, cdn_err_t *err);
/* Applies a JSON array of model operations as one change, all or none, and persists it. */
int engine_model_apply_batch(engine_t *e, const char *ops_json, uint64_t *rev, cdn_err_t *err);

/* Reads of the model, as authz/ answers them, refused with CDN_ERR_INTERNAL once the model in
 * memory got ahead of a failed commit (it holds a change nothing stored): fail closed. */
int engine_model_export(engine_t *e, char **json, cdn_err_t *err);
/* Notes the permission of an object principal just interned (any other name: nothing), under
 * meta_lock for writing. 0, or CDN_ERR_LIMIT past ENGINE_OBJECT_PERMS_MAX permissions. */
int engine_object_perm_note(engine_t *e, const char *name);
/* Relationship questions (authz_rebac_*), failing closed like every read of the model. */
int engine_rebac_check(engine_t *e, const char *subject, const char *permission, const char *object,
                       bool *allowed, uint64_t *rev, cdn_err_t *err);
/* resources 1: lookup-resources (a subject, b type, c permission); 0: lookup-subjects (a
 * object, b permission, c subject type). */
int engine_rebac_lookup(engine_t *e, int resources, const char *a, const char *b, const char *c,
                        authz_name_fn fn, void *ctx, uint64_t *rev, cdn_err_t *err);
int engine_rebac_expand(engine_t *e, const char *object, const char *permission, char **json,
                        cdn_err_t *err);
/* n requests that differ only in resource (resources NULL: the one request); out holds n. */
int engine_is_authorized(engine_t *e, const authz_request_t *req, const char *const *resources,
                         size_t n, authz_decision_t *out, cdn_err_t *err);
int engine_view(engine_t *e, const char *subject_id, authz_view_t **out, cdn_err_t *err);
int engine_subject_attrs(engine_t *e, const char *subject_id, char **json, cdn_err_t *err);
int engine_explain(engine_t *e, const char *subject_id, const char *const *allowed, size_t na,
                   const char *const *denied, size_t nd, authz_explanation_t *out, cdn_err_t *err);

/* Who is asking, as the caller names it: a subject of the permission model (subject_id), or
 * principals asserted by a trusted caller (subject_id NULL). Borrowed for the call. */
typedef struct engine_asker {
    const char *subject_id;
    const char *const *principals;
    size_t n;
} engine_asker_t;

/* Who is asking, resolved at one revision of the model: the decision that the subject may do
 * the action and its view come from one read of the model. */
typedef struct engine_subject {
    const char *const *principals; /* borrowed from the caller or from view */
    size_t n;
    authz_view_t *view; /* non-NULL when resolved from the model */
    /* The objects the subject reads (from the relationship tuples, when chunks name objects),
     * as ids of the principals "object:type:id#perm" (and their tenant-qualified forms), owned,
     * sorted: the principal table's first object_gen names judged (engine_reach.c).
     * objects_stale: the tuples were read at another revision than the view (start over). */
    uint32_t *object_ids;
    size_t n_object_ids, object_gen;
    char self[ENGINE_SELF_MAX]; /* the subject as the tuples name it */
    int with_objects, objects_stale;
    /* What the view answered, to ask again (engine_subject_current); borrowed. */
    const coll_t *c;
    const char *subject_id, *action;
} engine_subject_t;

/* Resolves who for an action on collection c. With a subject_id the model decides: an unknown
 * subject or a missing permission gives CDN_ERR_NOT_FOUND worded like a missing collection
 * (hidden equals missing), and so do asserted principals on a collection that takes only
 * subjects of the model. Release with engine_subject_release. */
int engine_subject_resolve(engine_t *e, const coll_t *c, const engine_asker_t *who,
                           const char *action, engine_subject_t *out, cdn_err_t *err);
void engine_subject_release(engine_subject_t *s);
/* The ids a resolved subject's principals and objects reach (engine_view_ids and the objects),
 * sorted, unique, owned by the caller: what a search unions, read under the collection's lock.
 * Objects interned since the subject was resolved are judged here. */
int engine_subject_ids(engine_t *e, const engine_subject_t *s, uint32_t **ids, size_t *n,
                       cdn_err_t *err);
/* Adds the objects a subject resolved from the model reads (engine_reach.c); the caller
 * releases s on failure. */
int engine_objects_add(engine_t *e, engine_subject_t *s, cdn_err_t *err);

/* ---- One permission state per request (query/engine_model.c). ----
 *
 * A request reads the model (decision and view) first, then the collection's ACLs under its
 * read lock. Those two reads form one state only if no model write landed in between: a
 * request must never pair a view from before a membership change with ACLs from after a later
 * ACL change. So a request checks, still under the collection's read lock and after its last
 * read of the ACLs, that the model is at the view's revision, or else that the subject is
 * still authorized with the same view (engine_subject_current: the ACLs cannot change while
 * the lock is held, so the answer is that of the state at the check); if not, it drops what it
 * computed and starts over. After ENGINE_READ_TRIES attempts it holds the
 * model gate for reading across the next one, which model writers take for writing around
 * their change in memory, so a request cannot starve under a stream of model writes; chunk
 * writes never take the gate, so searches do not wait for bulk loads. */
#define ENGINE_READ_TRIES 4

typedef struct engine_read {
    int attempt;
    int gated; /* holds e->model_gate for reading */
} engine_read_t;

/* Starts attempt r->attempt (0 first): takes the gate when the attempt calls for it. */
void engine_read_begin(engine_t *e, engine_read_t *r);
/* True when s's decision and view are still those of the model's current state (always for
 * asserted principals): the same revision, or, when the model moved, the same decision and
 * principals asked again. Call under the collection's read lock, after the last ACL read.
 * *rev, the revision the request read under that lock, becomes that of the state the answer
 * is then of when the model moved (the model now, the ACLs read): a later revision, never an
 * earlier one, so the revision names the state the answer holds. */
int engine_subject_current(engine_t *e, const engine_subject_t *s, uint64_t *rev);
/* Ends the attempt (releases the gate); returns 1 when another attempt must run. */
int engine_read_end(engine_t *e, engine_read_t *r, int current);

#endif
