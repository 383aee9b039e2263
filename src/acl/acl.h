/* acl.h: principal interning and per-collection permission bitmaps, the allowed set of a view,
 * and the independent per-chunk re-check. Relies on CRoaring and base/strmap.
 * Not internally locked: the engine holds the collection lock (writers exclusive), except the
 * index's memo of recent allowed sets, which concurrent searches share under its own mutex. */
#ifndef CDN_ACL_H
#define CDN_ACL_H

#include <roaring/roaring.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/strmap.h"

/* ---- Principal names <-> dense ids, engine-wide. An id is never taken back nor given to
 * another name: a search may hold one, and cached ids (query/engine_reach.c) rely on an
 * equal length meaning the same names. ---- */

typedef struct acl_intern {
    cdn_strmap_t ids; /* name -> id */
    char **names;     /* id -> name (owned) */
    size_t len, cap;
} acl_intern_t;

/* Longest principal name accepted ("group:" + name). */
#define ACL_PRINCIPAL_MAX 256

void acl_intern_init(acl_intern_t *t);
void acl_intern_free(acl_intern_t *t);
/* 0 with *id, or CDN_ERR_NOT_FOUND. */
int acl_intern_get(const acl_intern_t *t, const char *name, uint32_t *id);
/* Gives name the next id (t->len) if it has none; *id is its id; *added says if it was new.
 * Returns 0 or CDN_ERR_NOMEM. */
int acl_intern_add(acl_intern_t *t, const char *name, uint32_t *id, int *added);
const char *acl_intern_name(const acl_intern_t *t, uint32_t id);

/* The one rule for principal names, wherever they come from (a chunk's ACL, principals a
 * trusted caller asserts, an ACL being explained): non-empty, at most ACL_PRINCIPAL_MAX bytes of
 * UTF-8 without control characters, either KIND:NAME with KIND one of user, service, group,
 * role, object (object:TYPE:ID#PERMISSION: whoever holds PERMISSION on that object of the
 * relationship tuples) and a non-empty NAME, or a plain name without ':', which means a
 * group. *canon receives
 * the canonical form ("eng" -> "group:eng") in a buffer of canon_size bytes (ACL_PRINCIPAL_MAX
 * + 8 is enough). Returns 0, CDN_ERR_INVALID (naming the principal) or CDN_ERR_LIMIT. */
int acl_principal_canon(const char *name, char *canon, size_t canon_size, cdn_err_t *err);

/* ---- Tenants and labels (tags.c). ---- */

#define ACL_TAG_MAX 127   /* bytes of a tenant or label name */
#define ACL_LABELS_MAX 32 /* labels one chunk may carry */
/* Longest name a view may hold: "tenant:" + tenant + ":" + principal. */
#define ACL_VIEW_NAME_MAX (ACL_PRINCIPAL_MAX + ACL_TAG_MAX + 16)

/* The rule for tenant and label names: 1..ACL_TAG_MAX bytes of UTF-8 without spaces, control
 * characters or ':'. `what` names the field in the message. 0, CDN_ERR_INVALID or
 * CDN_ERR_LIMIT. */
int acl_tag_check(const char *name, const char *what, cdn_err_t *err);
/* Writes "tenant:<tenant>:<canon>" (canon alone when tenant is NULL) to out: the name a chunk
 * of that tenant stores for the canonical principal or label. 0 or CDN_ERR_LIMIT. */
int acl_qualify(const char *tenant, const char *canon, char *out, size_t cap);
/* The canonical form of a name a view may hold: a principal (acl_principal_canon), a label
 * denied to the subject ("label:L"), a tenant it belongs to ("tenant:T"), or either of the
 * first two within one tenant ("tenant:T:role:r": a role granted in tenant T only). cap of
 * ACL_VIEW_NAME_MAX is enough. 0, CDN_ERR_INVALID or CDN_ERR_LIMIT. */
int acl_view_canon(const char *name, char *canon, size_t cap, cdn_err_t *err);
/* Calls fn with every name the canonical view names hold, each tenant membership "tenant:T"
 * adding "tenant:T:<name>" for each of its other unqualified names: what a chunk of T must
 * name for the view to reach it. Stops at fn's first non-zero return, returned. */
typedef int (*acl_name_fn)(void *ctx, const char *name);
int acl_view_expand(const char *const *canon, size_t n, acl_name_fn fn, void *ctx);

/* The expanded names of a view (acl_view_canon, then acl_view_expand), sorted, to test names
 * against one at a time (explanations; a search interns them instead). */
typedef struct acl_set {
    char **v;
    size_t n, cap;
} acl_set_t;
/* 0, CDN_ERR_INVALID / CDN_ERR_LIMIT (a malformed name) or CDN_ERR_NOMEM; free with
 * acl_set_free (also after an error). */
int acl_set_build(const char *const *names, size_t n, acl_set_t *out, cdn_err_t *err);
bool acl_set_has(const acl_set_t *s, const char *name);
void acl_set_free(acl_set_t *s);

/* Checks a chunk's object, "type:id" or "type:id#permission" (names of [a-z0-9_], 1 to 63
 * bytes, an id of 1 to 127 bytes without spaces, control characters, '#', ':' or '@'), and
 * writes its principal "object:type:id#permission" (permission "view" when none is named) to
 * out (ACL_PRINCIPAL_MAX + 8 bytes). 0 or CDN_ERR_INVALID naming the object. */
int acl_object_principal(const char *object, char *out, size_t cap, cdn_err_t *err);
/* The permission of an object principal ("object:...#perm", perhaps qualified by a tenant), or
 * NULL for any other name. */
const char *acl_object_permission(const char *name);

/* ---- Packed ACLs: [n_allowed, n_denied, allowed ids..., denied ids...] as uint32. ---- */

/* Longest ACL a chunk may carry (allowed + denied principals). */
#define ACL_MAX_PRINCIPALS 1024

static inline uint32_t acl_packed_len(const uint32_t *p)
{
    return 2 + p[0] + p[1];
}

/* ---- The per-collection index. ---- */

typedef struct acl_index acl_index_t;

int acl_index_create(acl_index_t **out);
void acl_index_free(acl_index_t *x);

/* Gives row the ACL `packed` (not kept: the index interns a copy, which rows with the same
 * words share), replacing any previous one; the row becomes live. Returns 0 or CDN_ERR_NOMEM
 * (the row's previous ACL then still applies). The first set after acl_index_compact rebuilds
 * the hash that finds ACLs by content: one pass over the distinct ACLs. */
int acl_index_set(acl_index_t *x, uint32_t row, const uint32_t *packed);
/* Deletes row: it leaves every bitmap and is readable by nobody. */
void acl_index_remove(acl_index_t *x, uint32_t row);

/* The rows readable through view (principal ids, any order): the union of the view's allow
 * bitmaps minus the union of its deny bitmaps, within live rows, as a set shared with the
 * index's memo: read it through acl_allowed_set, never change it, and give it back with
 * acl_allowed_release (it stays valid until then, whatever writes the index sees meanwhile).
 * 0 or CDN_ERR_NOMEM. Views of 1 to 64 principals are remembered (the last 8) until the next
 * acl_index_set or acl_index_remove, so a subject's next query gets the same set instead of
 * the union. Safe to call from many threads while no write runs. */
typedef struct acl_allowed acl_allowed_t;
int acl_index_allowed_shared(const acl_index_t *x, const uint32_t *view, size_t n,
                             acl_allowed_t **out);
const roaring_bitmap_t *acl_allowed_set(const acl_allowed_t *a);
/* Drops the caller's reference; the last one frees the set. NULL-safe. */
void acl_allowed_release(acl_allowed_t *a);

/* The same rows as a copy the caller owns and may change (frees it with roaring_bitmap_free).
 * 0 or CDN_ERR_NOMEM. */
int acl_index_allowed(const acl_index_t *x, const uint32_t *view, size_t n, roaring_bitmap_t **out);

/* Re-check of one row from its packed ACL, not from the bitmaps: 1 if some allowed principal is
 * in view and no denied one is, 0 otherwise (also for deleted rows). view must be sorted.
 * Allocates nothing; safe to call from many threads while no write runs. */
int acl_index_check(const acl_index_t *x, uint32_t row, const uint32_t *view_sorted, size_t n);

/* Copies the row's packed ACL, exactly as last given to acl_index_set (order and repeats kept),
 * into buf if it holds cap words or more. Returns the ACL's length in words (2 + n_allowed +
 * n_denied; buf is left alone when that is more than cap), or 0 for a deleted or never written
 * row. An ACL a chunk may carry fits 2 + ACL_MAX_PRINCIPALS words. */
size_t acl_index_get(const acl_index_t *x, uint32_t row, uint32_t *buf, size_t cap);

/* The entry holding the row's ACL (rows with equal ACLs share one), 0 for a deleted or never
 * written row; a freed entry's number goes to a later ACL. For tests and stats. */
uint32_t acl_index_entry_of(const acl_index_t *x, uint32_t row);

/* How many distinct packed ACLs the rows hold (each stored once), for tests and stats. */
size_t acl_index_distinct(const acl_index_t *x);
/* Every acl_index_entry_of value is at most this (entries in use or free). */
uint32_t acl_index_entry_span(const acl_index_t *x);
/* Every principal id with rows is below this. */
uint32_t acl_index_principal_span(const acl_index_t *x);
/* Rows principal allows (its allow bitmap's size; deny entries do not count). */
uint64_t acl_index_principal_rows(const acl_index_t *x, uint32_t principal);

/* ---- An order of the rows by ACL (order.c). ---- */

/* Rows acl_order_rows leaves out of the numbering. */
#define ACL_ORDER_GONE UINT32_MAX

/* Numbers the rows r < n with map[r] != ACL_ORDER_GONE as 0, 1, ... so that rows with the same
 * ACL are adjacent and ACLs sharing their largest groups are next to each other: each ACL is
 * keyed by its allowed principals ranked by how many rows they allow (most first, ties by id),
 * then its denied ones, and the keys are sorted; rows of one ACL keep their order. A group of a
 * hierarchy whose groups nest (division, department, team) then holds one run of rows, which
 * scans read as a stream. Writes map[r] for those rows; 0 or CDN_ERR_NOMEM (map unchanged). */
int acl_order_rows(const acl_index_t *x, uint32_t *map, uint32_t n);

/* Bytes the index holds for the rows' ACLs: the row references, the entries, their byte arena
 * and, unless acl_index_compact dropped them, the hash's chain links and buckets, as allocated
 * (growth slack included). The bitmaps are not counted. For tests and stats. */
size_t acl_index_memory(const acl_index_t *x);
/* Calls fn with each principal id some row allows, until fn returns non-zero (returned). */
int acl_index_allowed_ids(const acl_index_t *x, int (*fn)(void *ctx, uint32_t id), void *ctx);

/* Gives back the slack that loading leaves: converts the bitmaps' containers to runs where that
 * is smaller and shrinks them to fit, and trims the row references, the entries and the byte
 * arena (dropping freed entries' bytes) to what is in use. Frees the hash that only sets use
 * (chain links and buckets; the next acl_index_set rebuilds it). Changes no answer, and writes
 * may follow. Out of memory: whatever could not shrink stays as it was. Call under the write
 * lock after loading a collection. */
void acl_index_compact(acl_index_t *x);

/* Live rows (owned by the index). */
const roaring_bitmap_t *acl_index_live(const acl_index_t *x);

#endif
