/* rebac.h: relationship-based access inside the model (not for other layers): a schema of object
 * types with relations and permissions (rebac_schema.c), relationship tuples with forward and
 * reverse indexes (rebac_store.c), and check, lookups and expand over them (rebac_eval.c).
 * docs/internals/rebac.md describes the language and the algorithms. Relies on base/ and
 * jansson. Guarded by the model's lock like the rest of the state. */
#ifndef CDN_AUTHZ_REBAC_H
#define CDN_AUTHZ_REBAC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

#define RB_NAME_MAX 64      /* type, relation and permission names, NUL included */
#define RB_ID_MAX 256       /* object ids, NUL included */
#define RB_TYPES_MAX 256    /* types in a schema */
#define RB_RELS_MAX 64      /* relations and permissions of one type */
#define RB_EXPR_MAX 512     /* bytes of one permission's expression */
#define RB_TUPLE_MAX 640    /* bytes of one tuple as text */
#define RB_WRITE_MAX 100000 /* tuples written and deleted by one op */
#define RB_DEPTH_MAX 64     /* nested evaluations a check follows before it gives up */
#define RB_NONE 0xffffu     /* no relation: a subject that is an object itself */

/* ---- the schema (rebac_schema.c) ---- */

enum { RB_E_REL = 1, RB_E_ARROW, RB_E_UNION, RB_E_INTER, RB_E_EXCL };

typedef struct rb_expr {
    uint8_t kind;
    uint16_t rel;          /* REL: a relation or permission of the same type; ARROW: the relation
                              whose subjects are followed (the tupleset) */
    char *target;          /* ARROW: the relation or permission evaluated on those subjects */
    int16_t *target_of;    /* ARROW: per type, the target's index on it, -1 where it has none */
    struct rb_expr **kids; /* UNION, INTER, EXCL (two: base minus the other) */
    uint32_t nkids;
} rb_expr_t;

typedef struct rb_allowed { /* a subject type a relation accepts */
    uint16_t type;
    uint16_t rel;  /* RB_NONE: objects of the type; else usersets type#rel; */
    bool wildcard; /* type:* (every object of the type) */
} rb_allowed_t;

typedef struct rb_rel {
    char *name;
    bool is_perm;
    rb_expr_t *expr;       /* permissions */
    char *expr_text;       /* as written, for export */
    rb_allowed_t *allowed; /* relations */
    uint32_t nallowed;
    /* no intersection nor exclusion anywhere below it (through usersets, reads and arrows):
     * a reverse walk from a subject reaches exactly the objects where the subject holds it */
    bool monotone;
    /* what a reverse walk may follow from (object, this relation): some relation accepts the
     * userset type#this, permissions of the same type read it (a bit per relation index), some
     * arrow's target is this relation on this type */
    bool in_userset, arrowed;
    uint64_t read_by;
} rb_rel_t;

typedef struct rb_type {
    char *name;
    rb_rel_t *rels;
    uint32_t nrels;
} rb_type_t;

typedef struct rb_schema {
    rb_type_t *types;
    uint32_t ntypes;
    json_t *src; /* as given, for export */
    /* every permission is monotone: a reverse walk from a subject reaches exactly what it
     * holds, so lookups need no check of their own */
    bool monotone;
} rb_schema_t;

/* Parses and checks a schema document ({"types": {NAME: {"relations": {NAME: [subject types]},
 * "permissions": {NAME: "expression"}}}}). 0, CDN_ERR_INVALID (naming the problem),
 * CDN_ERR_LIMIT or CDN_ERR_NOMEM; free with rb_schema_free. */
int rb_schema_parse(const json_t *doc, rb_schema_t **out, cdn_err_t *err);
void rb_schema_free(rb_schema_t *s);
/* The index of type name (n bytes), or -1. */
int rb_type_find(const rb_schema_t *s, const char *name, size_t n);
/* The index of relation or permission name on type t, or -1. */
int rb_rel_find(const rb_schema_t *s, uint16_t t, const char *name, size_t n);
/* An arrow's target on objects of type t: its relation or permission index, or -1. */
static inline int rb_arrow_target(const rb_expr_t *x, uint16_t t)
{
    return x->target_of[t];
}
/* The wildcard object of a type is the one whose id is "*". */
static inline bool rb_id_is_wild(const char *id)
{
    return id[0] == '*' && !id[1];
}

/* ---- the tuples (rebac_store.c) ---- */

typedef struct rb_sub {
    uint32_t obj;
    uint16_t rel; /* RB_NONE for an object */
} rb_sub_t;

typedef struct rb_store rb_store_t;

/* The relationships of a model: a schema and its tuples. Shared between a state and its copies
 * until one of them writes (then it takes its own). */
typedef struct rb_state {
    rb_schema_t *schema;
    rb_store_t *store;
    long refs;
} rb_state_t;

int rb_store_new(rb_store_t **out);
void rb_store_free(rb_store_t *st);
int rb_store_clone(const rb_store_t *src, rb_store_t **out);
/* Object "type:id" -> index; 0 with *obj, or CDN_ERR_NOT_FOUND. */
int rb_obj_get(const rb_store_t *st, uint16_t type, const char *id, uint32_t *obj);
int rb_obj_add(rb_store_t *st, uint16_t type, const char *id, uint32_t *obj);
uint16_t rb_obj_type(const rb_store_t *st, uint32_t obj);
/* Objects are numbered 0 .. count - 1. */
uint32_t rb_obj_count(const rb_store_t *st);
const char *rb_obj_id(const rb_store_t *st, uint32_t obj);
/* The subjects of (obj, rel) and the (obj, rel) pairs a subject stands in, each a borrowed array
 * valid until the next write. */
const rb_sub_t *rb_subjects(const rb_store_t *st, uint32_t obj, uint16_t rel, uint32_t *n);
const rb_sub_t *rb_holders(const rb_store_t *st, uint32_t obj, uint16_t rel, uint32_t *n);
/* 1 when added / removed, 0 when it was already there / not there, or CDN_ERR_NOMEM. */
int rb_tuple_add(rb_store_t *st, uint32_t obj, uint16_t rel, rb_sub_t sub);
int rb_tuple_del(rb_store_t *st, uint32_t obj, uint16_t rel, rb_sub_t sub);
uint64_t rb_tuple_count(const rb_store_t *st);
/* Calls fn with every tuple until it returns non-zero. */
typedef int (*rb_tuple_fn)(void *ctx, uint32_t obj, uint16_t rel, rb_sub_t sub);
int rb_tuples_each(const rb_store_t *st, rb_tuple_fn fn, void *ctx);

/* A tuple parsed from text: "type:id#relation@type:id" or "...@type:id#relation" or
 * "...@type:*". */
typedef struct rb_tuple_text {
    uint16_t type, rel, sub_type, sub_rel; /* sub_rel RB_NONE for an object */
    bool wildcard;
    char id[RB_ID_MAX], sub_id[RB_ID_MAX];
} rb_tuple_text_t;
/* Parses and checks a tuple against the schema (types, a relation that is not a permission,
 * a subject the relation accepts). 0 or CDN_ERR_INVALID / CDN_ERR_LIMIT naming what. */
int rb_tuple_parse(const rb_schema_t *s, const char *text, rb_tuple_text_t *out, cdn_err_t *err);
/* Writes a tuple back as text into out. */
void rb_tuple_format(const rb_schema_t *s, const rb_store_t *st, uint32_t obj, uint16_t rel,
                     rb_sub_t sub, char *out, size_t cap);

/* ---- the model's ops and export (rebac_store.c) ---- */

struct az_state;
/* {"op": "put_schema", "schema": {...}}: replaces the schema; CDN_ERR_CONFLICT when a tuple
 * would no longer fit it (naming one). */
int rb_op_put_schema(struct az_state *st, const json_t *op, bool *mutated, cdn_err_t *err);
/* {"op": "write_tuples", "writes": [...], "deletes": [...]}: all checked first, then applied;
 * writing a tuple twice or deleting an absent one is a no-op. */
int rb_op_write_tuples(struct az_state *st, const json_t *op, bool *mutated, cdn_err_t *err);
/* {"schema": ..., "tuples": [sorted text]} for export, or NULL when the state has none. */
json_t *rb_export(const rb_state_t *rb);
/* Reads an export's "rebac" member into st (empty state). Same codes as the ops. */
int rb_import(struct az_state *st, const json_t *doc, cdn_err_t *err);
/* Takes a reference (a copy of a state shares it); release drops one. */
rb_state_t *rb_state_ref(rb_state_t *rb);
void rb_state_release(rb_state_t *rb);

#endif
