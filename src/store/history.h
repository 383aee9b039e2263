/* history.h: the history of permissions that as-of questions read: when each revision was
 * committed, every version of every chunk's ACL, every permission-model record (never folded)
 * and checkpoints of the whole model. Written inside the writes' own transactions, so the
 * history is exactly as durable as the data; read by query/asof.
 * Relies on store/store and xxhash. Values handed out point into the map (valid until the
 * transaction ends). */
#ifndef CDN_HISTORY_H
#define CDN_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* The revision current at time_us (the last committed at or before it): 0 with *rev set, or
 * CDN_ERR_NOT_FOUND when no revision was committed by then. */
int history_rev_at(store_txn_t *t, uint64_t time_us, uint64_t *rev);

/* The moment revision rev was committed (the first time at which it, or a later one, is
 * current): a bisection over the commit times, about 60 seeks. */
int history_time_of(store_txn_t *t, uint64_t rev, uint64_t *time_us);

/* Records chunk id's ACL as of revision rev: packed (acl/acl.h's layout, n u32 words), or
 * packed NULL for "deleted". */
int history_acl_put(store_txn_t *t, uint32_t coll, const char *id, uint64_t rev,
                    const uint32_t *packed, size_t n);
/* The chunk's ACL as it stood after revision rev: 0 with *packed (n words, not aligned: read
 * with memcpy) or *packed NULL when it was deleted then; CDN_ERR_NOT_FOUND when it did not
 * exist yet. */
int history_acl_at(store_txn_t *t, uint32_t coll, const char *id, uint64_t rev, const void **packed,
                   size_t *n);
/* Calls fn(ctx, rev) for each revision in (after, upto] at which chunk id's ACL was written
 * (a delete included), in order. */
typedef int (*history_rev_fn)(void *ctx, uint64_t rev);
int history_acl_versions(store_txn_t *t, uint32_t coll, const char *id, uint64_t after,
                         uint64_t upto, history_rev_fn fn, void *ctx);
/* Calls fn(ctx, id, packed, n) for each chunk of coll that existed after revision rev, with
 * its ACL then (chunk ids in no particular order). */
typedef int (*history_acl_fn)(void *ctx, const char *id, const void *packed, size_t n);
int history_acls_at(store_txn_t *t, uint32_t coll, uint64_t rev, history_acl_fn fn, void *ctx);

/* Collections' names: which collection (its id, fixed for its life) a name stood for at each
 * revision, so that questions about a collection dropped since, or dropped and created again
 * under the same name, read the chunks it held then. A drop keeps its chunks' history;
 * retention removes it once the drop is before the horizon. */
int history_coll_put(store_txn_t *t, const char *name, uint64_t rev, uint32_t id, int asserted);
int history_coll_drop(store_txn_t *t, const char *name, uint64_t rev, uint32_t id);
/* Calls fn(ctx, rev, id, asserted, live) for every version of name, oldest first (live 0: the
 * drop of collection id; asserted is then that collection's). */
typedef int (*history_coll_fn)(void *ctx, uint64_t rev, uint32_t id, int asserted, int live);
int history_coll_versions(store_txn_t *t, const char *name, history_coll_fn fn, void *ctx);
/* Whether the names' history was started (at the first open by a version that keeps it, with
 * every live collection as of that revision). */
int history_coll_start_get(store_txn_t *t, int *set);
int history_coll_start_set(store_txn_t *t, uint64_t rev);

/* The permission model's fragments (authz.h: one entity's part of a decision about a
 * subject), one version per revision that changed it: frag NULL for "deleted". kind is
 * AUTHZ_ENT_*'s letter. */
int history_ent_put(store_txn_t *t, char kind, const char *id, uint64_t rev, const char *frag);
/* The fragment of kind/id as it stood after rev: 0 with *frag (n bytes, not NUL-terminated)
 * or *frag NULL when it did not exist then; *vrev is the revision that wrote that version (0
 * when none did: the fragment is the same at every such rev). */
int history_ent_at(store_txn_t *t, char kind, const char *id, uint64_t rev, const char **frag,
                   size_t *n, uint64_t *vrev);
/* The first revision the fragments hold (META "hist_ent"): set once, when the history of
 * fragments starts (at the history's start, or when a directory kept without them is first
 * opened by a version that keeps them). */
/* Calls fn(ctx, rev, gone) for every version of entity kind/id, oldest first: the revision
 * that wrote it, and whether it was the entity's deletion. */
typedef int (*history_ver_fn)(void *ctx, uint64_t rev, int gone);
int history_ent_versions(store_txn_t *t, char kind, const char *id, history_ver_fn fn, void *ctx);
int history_ent_start_get(store_txn_t *t, uint64_t *rev, int *set);
int history_ent_start_set(store_txn_t *t, uint64_t rev);

/* Copies model log record rec (kind byte + JSON, n bytes) of revision rev, and a checkpoint:
 * the whole model's JSON after rev. */
int history_model_put(store_txn_t *t, uint64_t rev, const void *rec, size_t n);
int history_snap_put(store_txn_t *t, uint64_t rev, const char *json);
/* The last model record at or before rev: *mrev (0 and CDN_ERR_NOT_FOUND when none). */
int history_model_last(store_txn_t *t, uint64_t rev, uint64_t *mrev);
/* The last checkpoint at or before rev: 0 with *srev and the JSON (n bytes), or
 * CDN_ERR_NOT_FOUND. */
int history_snap_at(store_txn_t *t, uint64_t rev, uint64_t *srev, const char **json, size_t *n);
/* Calls fn for each model record with a revision in (after, upto], in order. */
int history_model_scan(store_txn_t *t, uint64_t after, uint64_t upto, store_iter_fn fn, void *ctx);

/* Retention: forgets what only states before revision horizon need. Each chunk keeps its
 * newest ACL version at or before the horizon and every later one; model records and
 * checkpoints before checkpoint (a checkpoint at or before the horizon, which the caller has
 * written if there was none) go, and commit times of revisions before the horizon; the
 * history then starts at the horizon. *removed counts the rows deleted. */
int history_prune(store_txn_t *t, uint64_t horizon, uint64_t checkpoint, uint64_t *removed);

/* The first revision the history holds (META "hist_start"): earlier states cannot be asked
 * about. */
int history_start_get(store_txn_t *t, uint64_t *rev, int *set);
int history_start_set(store_txn_t *t, uint64_t rev);

#endif
