/* asof_int.h: what asof.c and asof_model.c share: the as-of handle, the cache of whole past
 * models in it, and the models questions borrow. Not for use outside src/query/asof*.c. */
#ifndef CDN_ASOF_INT_H
#define CDN_ASOF_INT_H

#include "query/asof.h"
#include "query/asof_cache.h"
#include "store/history.h"

#include <pthread.h>

typedef struct entry {
    uint64_t mrev; /* the model record it is the state after */
    authz_model_t *m;
    int refs, valid;
    uint64_t used;
} entry_t;

struct asof {
    engine_t *e;
    pthread_mutex_t lock;
    entry_t ent[ASOF_CACHE];
    uint64_t tick;
    asof_cache_t *cache; /* fragments and version lists kept between questions */
    uint64_t frag_start; /* the fragments' first revision (set once, before this opens) */
    int has_frags;
};

/* A model borrowed from the cache (ent set) or built for one question (ent NULL). */
typedef struct model_ref {
    authz_model_t *m;
    entry_t *ent;
} model_ref_t;

/* The whole model after the last model record at or before rev: borrowed from the cache, or
 * built from the nearest cached model or checkpoint and the records after it. Release it with
 * asof_model_release. */
int asof_model_at(asof_t *a, store_txn_t *t, uint64_t rev, model_ref_t *ref, cdn_err_t *err);

/* Gives back a model asof_model_at or asof_subject_model lent. */
void asof_model_release(asof_t *a, model_ref_t *ref);

/* The model a question about one subject at rev needs (a slice of its fragments, or, before
 * the fragments start, the whole model: *whole 1, and then it holds the tuples too). Validity
 * windows are judged at at_us, or at the revision's own moment when it is 0. */
int asof_subject_model(asof_t *a, store_txn_t *t, const char *subject, uint64_t rev, uint64_t at_us,
                       model_ref_t *ref, int *whole, cdn_err_t *err);

#endif
