/* asof_cache.h: what as-of questions (asof.h) keep between them, so that a question about one
 * subject reads a handful of fragments instead of seeking and parsing each: parsed fragment
 * versions (a version never changes, so one parse serves every question that reads it), and,
 * for groups and roles, the list of every version of their fragments as the store stood when
 * it was read (which version stood after an earlier revision, without a seek). Subjects'
 * fragments are not kept: each membership change writes a new version of one.
 * Relies on jansson and store/history. Safe from many threads. docs/internals/asof.md. */
#ifndef CDN_ASOF_CACHE_H
#define CDN_ASOF_CACHE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "store/store.h"

typedef struct asof_cache asof_cache_t;

/* A fragment a question holds: borrowed from the cache (slot + 1, pinned there) or parsed for
 * the question alone (slot 0); asof_cache_frag_release gives it back. */
typedef struct asof_frag_use {
    int slot;
    json_t *frag;
} asof_frag_use_t;

int asof_cache_new(asof_cache_t **out); /* CDN_OK or CDN_ERR_NOMEM */
void asof_cache_free(asof_cache_t *c);

/* 1 and *use pinned when the cache holds the parsed version (kind, id, vrev); 0 otherwise. */
int asof_cache_frag_get(asof_cache_t *c, char kind, const char *id, uint64_t vrev,
                        asof_frag_use_t *use);
/* The parsed fragment of version (kind, id, vrev) whose text (n bytes) is given: the cache's,
 * or parsed and kept (groups' and roles'), or parsed for this question alone. CDN_ERR_CORRUPT
 * when the text does not parse. */
int asof_cache_frag_parse(asof_cache_t *c, char kind, const char *id, uint64_t vrev,
                          const char *text, size_t n, asof_frag_use_t *use, cdn_err_t *err);
/* Gives back the n fragments a question held. */
void asof_cache_frag_release(asof_cache_t *c, const asof_frag_use_t *u, size_t n);

/* 1 when the version of group or role kind/id current after rev is known: *vrev (0: none
 * then) and *gone (that version was the deletion), from the kept list or from one read of it
 * in t (whose store revision is snap). 0 when it cannot say (rev after snap, a list longer
 * than it keeps, a failed read): the caller seeks the version itself. */
int asof_cache_version(asof_cache_t *c, store_txn_t *t, uint64_t snap, char kind, const char *id,
                       uint64_t rev, uint64_t *vrev, int *gone);

#endif
