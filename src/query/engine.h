/* engine.h: an open data directory: the store, the collections, the principal table and the
 * revision, with the locks that order writers and let searches run beside them.
 * Relies on store/, acl/ and query/collection. The public API (src/api) is a facade over it. */
#ifndef CDN_ENGINE_H
#define CDN_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "acl/acl.h"
#include "base/err.h"
#include "query/collection.h"
#include "store/store.h"

typedef struct engine {
    char *dir;
    store_t *store;
    pthread_mutex_t write_lock;   /* one writer at a time, as LMDB allows */
    pthread_rwlock_t meta_lock;   /* the collection list and the principal table */
    acl_intern_t principals;
    coll_t **colls;               /* sorted by name */
    size_t ncolls, colls_cap;
    uint32_t next_coll_id;
    _Atomic uint64_t revision;    /* the last acknowledged revision */
} engine_t;

/* Opens the data directory dir, creating it if missing. Free with engine_close. */
int engine_open(const char *dir, uint64_t map_size, engine_t **out, cdn_err_t *err);
void engine_close(engine_t *e);

/* Finds a collection by name and takes a reference (release with coll_unref).
 * CDN_ERR_NOT_FOUND with a message naming it. */
int engine_coll_get(engine_t *e, const char *name, coll_t **out, cdn_err_t *err);

int engine_coll_create(engine_t *e, const coll_config_t *cfg, cdn_err_t *err);
int engine_coll_drop(engine_t *e, const char *name, cdn_err_t *err);

/* Turns principal names (as a subject presents them) into sorted unique ids; names that no
 * chunk ever named are left out, since they open nothing. *ids is freed with cdn_free. */
int engine_view_ids(engine_t *e, const char *const *names, size_t n, uint32_t **ids,
                    size_t *nids, cdn_err_t *err);

#endif
