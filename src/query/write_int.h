/* write_int.h: pieces of the write path shared by write.c and write_acl.c; not for other
 * modules. Relies on query/engine and base/arena. */
#ifndef CDN_WRITE_INT_H
#define CDN_WRITE_INT_H

#include "base/arena.h"
#include "query/chunkrec.h"
#include "query/write.h"

typedef struct prep {
    const write_chunk_t *in; /* for ACL changes only in->id is set */
    float *vec;              /* normalised copy for cosine, else the caller's */
    char **names[2];         /* canonical allowed [0] and denied [1], in the arena */
    size_t nnames[2];
    const char *tenant; /* the chunk's tenant or NULL, in the arena */
    char **labels;      /* its labels, in the arena */
    size_t nlabels;
    const char *object; /* its object as given ("type:id[#perm]") or NULL, in the arena */
    int has_object;     /* write_pack_acl: an allowed principal is an object's */
    uint32_t *packed;   /* in the arena */
    uint32_t row, old_row;
    int had_old;
} prep_t;

/* Validates and canonicalises an ACL and its labels into p (names in the arena). */
int write_prep_acl(prep_t *p, const char *const *allowed, size_t na, const char *const *denied,
                   size_t nd, const char *const *labels, size_t nl, cdn_arena_t *a, cdn_err_t *err);
/* Validates a tenant name and an object (acl_object_principal) and keeps copies in p (NULL:
 * none). */
int write_prep_tenant(prep_t *p, const char *tenant, const char *object, cdn_arena_t *a,
                      cdn_err_t *err);
/* Interns p's principals, each qualified by p's tenant, its labels as denied "label:" names,
 * and packs its ACL; caller holds meta_lock for writing. */
int write_pack_acl(engine_t *e, prep_t *p, cdn_arena_t *a);
/* p's access as its record keeps it. */
static inline chunkrec_access_t write_access(const prep_t *p)
{
    return (chunkrec_access_t){(const char *const *)p->names[0],
                               p->nnames[0],
                               (const char *const *)p->names[1],
                               p->nnames[1],
                               p->tenant,
                               (const char *const *)p->labels,
                               p->nlabels,
                               p->object};
}
/* Stores the principals interned but not yet stored. */
int write_persist_principals(engine_t *e, store_txn_t *t);
/* Records the next revision in t and commits it (t is gone either way); *rev is the new
 * revision, which the caller publishes once memory reflects the write. */
int write_commit(engine_t *e, store_txn_t *t, uint64_t *rev, cdn_err_t *err);

#endif
