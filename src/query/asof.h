/* asof.h: questions about the past: whether a subject could read a chunk, or do an action,
 * after a given revision or at a given moment (transaction time), from the permission history
 * the writes keep (store/history.h). Live searches never come here: the live state stays the
 * fast path, and the history is read only by these questions.
 * Relies on query/engine and store/history. The model of a past revision is rebuilt from the
 * history's last checkpoint before it and the records after (at most HIST_SNAP_EVERY), and
 * the last few rebuilt are kept for the next questions. Safe from many threads.
 * docs/internals/asof.md. */
#ifndef CDN_ASOF_H
#define CDN_ASOF_H

#include <stddef.h>
#include <stdint.h>

#include "authz/authz.h"
#include "base/err.h"
#include "query/engine.h"

typedef struct asof asof_t;

#define ASOF_CACHE 16 /* models kept: rebuilt ones and checkpoints */

int asof_open(engine_t *e, asof_t **out, cdn_err_t *err);
void asof_close(asof_t *a);

/* The revision a question is about: rev itself (0: the one current at time_us, microseconds
 * since 1970). CDN_ERR_NOT_FOUND when the history does not reach back that far (it starts
 * when the data directory started keeping it), CDN_ERR_INVALID for a revision or a time not
 * yet reached. */
int asof_revision(asof_t *a, uint64_t rev, uint64_t time_us, uint64_t *out, cdn_err_t *err);

/* The first revision the history holds. */
int asof_start(asof_t *a, uint64_t *rev, cdn_err_t *err);

/* Grants with a validity window (authz.h) are judged at moment at_us of the questions below
 * (valid time), or, when it is 0, at the moment revision rev was committed. */

typedef enum asof_reason {
    ASOF_READABLE = 0,     /* principal is in the view and allowed */
    ASOF_DENIED,           /* principal is in the view and denied (deny overrides) */
    ASOF_NO_MATCH,         /* no allowed principal is in the view */
    ASOF_NO_ACL,           /* the chunk allowed nobody */
    ASOF_NO_CHUNK,         /* the chunk did not exist then */
    ASOF_NO_PERMISSION,    /* the subject did not hold the action on the collection then */
    ASOF_SUBJECT_NOT_FOUND /* no such subject in the model then */
} asof_reason_t;

typedef struct asof_answer {
    int readable;
    asof_reason_t reason;
    char principal[AUTHZ_PRINCIPAL_MAX]; /* the view principal that decided, or "" */
} asof_answer_t;

/* Could who read chunk id of collection coll (by name: the collection the name stood for
 * then, one dropped since included) after revision rev, with action ("read" for a get,
 * "search" for a search's hits) on "collection:<coll>" for a subject of the model? Asserted
 * principals are judged by the ACL alone. */
int asof_check(asof_t *a, const char *coll, const engine_asker_t *who, const char *action,
               const char *id, uint64_t rev, uint64_t at_us, asof_answer_t *out, cdn_err_t *err);

/* Calls fn with each chunk id of coll that who could read after rev (in no particular order)
 * until fn returns non-zero; *n counts them. */
typedef int (*asof_id_fn)(void *ctx, const char *id);
int asof_readable(asof_t *a, const char *coll, const engine_asker_t *who, const char *action,
                  uint64_t rev, uint64_t at_us, asof_id_fn fn, void *ctx, size_t *n,
                  cdn_err_t *err);

/* Who could read chunk id at some revision in [r1, r2]: calls fn with each subject of the
 * model and the first revision of the range at which it could (with action on the
 * collection), once each. The states asked are r1's and those after each model change and
 * each write of the chunk's ACL in the range: at most ASOF_RANGE_POINTS_MAX, else
 * CDN_ERR_LIMIT. *n counts the subjects. */
#define ASOF_RANGE_POINTS_MAX 4096
typedef int (*asof_reader_fn)(void *ctx, const char *subject, uint64_t first_rev);
int asof_readers(asof_t *a, const char *coll, const char *id, const char *action, uint64_t r1,
                 uint64_t r2, asof_reader_fn fn, void *ctx, size_t *n, cdn_err_t *err);

/* is-authorized as the model stood after rev (req as authz_is_authorized takes it). */
int asof_is_authorized(asof_t *a, const authz_request_t *req, uint64_t rev, uint64_t at_us,
                       authz_decision_t *out, cdn_err_t *err);

/* Forgets the history before revision horizon (store/history.h's history_prune), writing the
 * checkpoint the horizon's state needs first. *removed counts the rows deleted. */
int asof_prune(asof_t *a, uint64_t horizon, uint64_t *removed, cdn_err_t *err);

/* Human-readable name of a reason ("READABLE", "DENIED", ...). */
const char *asof_reason_name(asof_reason_t r);

#endif
