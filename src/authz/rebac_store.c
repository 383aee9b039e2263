/* rebac_store.c: relationship tuples in memory. Objects ("type:id") get dense indexes; each
 * (object, relation) keeps the list of its subjects (forward), each subject (object or
 * userset) the list of (object, relation) it stands in (reverse), each in an open-addressing
 * table keyed by (object << 16 | relation), a list of one held inside its entry. Also the model ops
 * that write them (put_schema, write_tuples), their text form, export and import, and the sharing
 * of one store between a state and its copies until one writes. Relies on base/strmap, base/mem and
 * jansson. */
#include "authz/internal.h"
#include "authz/rebac.h"
#include "base/mem.h"
#include "base/strmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The subjects of one (object, relation), or the (object, relation) pairs of one subject: an
 * entry of an open-addressing table keyed by (object << 16 | relation) + 1 (0 marks an empty
 * slot). Most lists hold one element (a page's space, a document's folder), kept inline so a
 * lookup reads one cache line; longer ones live in an array of their own. */
typedef struct rb_vec {
    uint64_t key;
    uint32_t n, cap; /* cap 0: at most one element, inline in one */
    union {
        rb_sub_t *v;
        rb_sub_t one;
    };
} rb_vec_t;

typedef struct rb_index {
    rb_vec_t *e;
    uint32_t cap, n;
} rb_index_t;

struct rb_store {
    cdn_strmap_t names; /* "<type>:<id>" -> object */
    uint16_t *types;
    char **ids;
    uint32_t nobjs, capobjs;
    rb_index_t fwd, rev;
    uint64_t ntuples;
};

static uint64_t key_of(uint32_t obj, uint16_t rel)
{
    return ((uint64_t)obj << 16 | rel) + 1;
}

static uint32_t hash64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (uint32_t)k;
}

static rb_sub_t *vec_items(rb_vec_t *v)
{
    return v->cap ? v->v : &v->one;
}

static rb_vec_t *index_find(const rb_index_t *x, uint64_t k)
{
    if (!x->cap)
        return NULL;
    for (uint32_t i = hash64(k) & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
        if (!x->e[i].key)
            return NULL;
        if (x->e[i].key == k)
            return &x->e[i];
    }
}

static int index_grow(rb_index_t *x)
{
    uint32_t ncap = x->cap ? x->cap * 2 : 64;
    rb_vec_t *e = cdn_calloc(ncap, sizeof *e);
    if (!e)
        return CDN_ERR_NOMEM;
    for (uint32_t i = 0; i < x->cap; i++) {
        if (!x->e[i].key)
            continue;
        uint32_t j = hash64(x->e[i].key) & (ncap - 1);
        while (e[j].key)
            j = (j + 1) & (ncap - 1);
        e[j] = x->e[i];
    }
    cdn_free(x->e);
    x->e = e;
    x->cap = ncap;
    return CDN_OK;
}

/* The list of k, made empty when absent; NULL when out of memory. Moves the table's entries:
 * a list found before is not valid after. */
static rb_vec_t *index_get(rb_index_t *x, uint64_t k)
{
    rb_vec_t *v = index_find(x, k);
    if (v)
        return v;
    if ((x->n + 1) * 2 > x->cap && index_grow(x))
        return NULL;
    uint32_t i = hash64(k) & (x->cap - 1);
    while (x->e[i].key)
        i = (i + 1) & (x->cap - 1);
    x->e[i].key = k;
    x->n++;
    return &x->e[i];
}

static void index_free(rb_index_t *x)
{
    for (uint32_t i = 0; i < x->cap; i++)
        if (x->e[i].key && x->e[i].cap)
            cdn_free(x->e[i].v);
    cdn_free(x->e);
    memset(x, 0, sizeof *x);
}

static int index_clone(const rb_index_t *s, rb_index_t *d)
{
    memset(d, 0, sizeof *d);
    if (!s->cap)
        return CDN_OK;
    if (!(d->e = cdn_malloc((size_t)s->cap * sizeof *d->e)))
        return CDN_ERR_NOMEM;
    memcpy(d->e, s->e, (size_t)s->cap * sizeof *d->e);
    d->cap = s->cap;
    d->n = s->n;
    for (uint32_t i = 0; i < s->cap; i++) {
        rb_vec_t *v = &d->e[i];
        if (!v->key || !v->cap)
            continue;
        rb_sub_t *copy = v->n ? cdn_malloc((size_t)v->n * sizeof *copy) : NULL;
        if (v->n && !copy) {
            for (uint32_t j = i; j < s->cap; j++) /* the rest still point into s */
                if (d->e[j].key && d->e[j].cap)
                    d->e[j].cap = 0, d->e[j].n = 0;
            return CDN_ERR_NOMEM;
        }
        if (v->n)
            memcpy(copy, v->v, (size_t)v->n * sizeof *copy);
        v->v = copy;
        v->cap = v->n;
        if (!v->n) /* an emptied array: inline and empty */
            memset(&v->one, 0, sizeof v->one);
    }
    return CDN_OK;
}

static int vec_has(rb_vec_t *v, rb_sub_t s)
{
    const rb_sub_t *it = v ? vec_items(v) : NULL;
    for (uint32_t i = 0; v && i < v->n; i++)
        if (it[i].obj == s.obj && it[i].rel == s.rel)
            return (int)i + 1;
    return 0;
}

static int vec_push(rb_vec_t *v, rb_sub_t s)
{
    if (!v->cap && !v->n) {
        v->one = s;
        v->n = 1;
        return CDN_OK;
    }
    if (!v->cap) { /* the second element: the list moves out of line */
        rb_sub_t *q = cdn_malloc(4 * sizeof *q);
        if (!q)
            return CDN_ERR_NOMEM;
        q[0] = v->one;
        v->v = q;
        v->cap = 4;
    } else if (v->n == v->cap) {
        void *q = v->v;
        size_t cap = v->cap;
        if (cdn_grow(&q, &cap, (size_t)v->n + 1, sizeof *v->v))
            return CDN_ERR_NOMEM;
        v->v = q;
        v->cap = (uint32_t)cap;
    }
    v->v[v->n++] = s;
    return CDN_OK;
}

static void vec_del_at(rb_vec_t *v, uint32_t i)
{
    rb_sub_t *it = vec_items(v);
    it[i] = it[--v->n];
}

int rb_store_new(rb_store_t **out)
{
    rb_store_t *st = cdn_calloc(1, sizeof *st);
    if (!st)
        return CDN_ERR_NOMEM;
    cdn_strmap_init(&st->names);
    *out = st;
    return CDN_OK;
}

void rb_store_free(rb_store_t *st)
{
    if (!st)
        return;
    cdn_strmap_free(&st->names);
    for (uint32_t i = 0; i < st->nobjs; i++)
        cdn_free(st->ids[i]);
    cdn_free(st->ids);
    cdn_free(st->types);
    index_free(&st->fwd);
    index_free(&st->rev);
    cdn_free(st);
}

static size_t name_key(uint16_t type, const char *id, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%u:%s", (unsigned)type, id);
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

int rb_obj_get(const rb_store_t *st, uint16_t type, const char *id, uint32_t *obj)
{
    char k[RB_ID_MAX + 16];
    size_t n = name_key(type, id, k, sizeof k);
    return n ? cdn_strmap_get(&st->names, k, n, obj) : CDN_ERR_NOT_FOUND;
}

int rb_obj_add(rb_store_t *st, uint16_t type, const char *id, uint32_t *obj)
{
    char k[RB_ID_MAX + 16];
    size_t n = name_key(type, id, k, sizeof k);
    if (!n)
        return CDN_ERR_LIMIT;
    if (cdn_strmap_get(&st->names, k, n, obj) == CDN_OK)
        return CDN_OK;
    if (st->nobjs == st->capobjs) {
        size_t cap = st->capobjs, cap2 = st->capobjs;
        void *a = st->types, *b = st->ids;
        if (cdn_grow(&a, &cap, (size_t)st->nobjs + 1, sizeof *st->types))
            return CDN_ERR_NOMEM;
        st->types = a;
        if (cdn_grow(&b, &cap2, (size_t)st->nobjs + 1, sizeof *st->ids))
            return CDN_ERR_NOMEM;
        st->ids = b;
        st->capobjs = (uint32_t)(cap < cap2 ? cap : cap2);
    }
    char *copy = cdn_strdup(id);
    if (!copy || cdn_strmap_put(&st->names, k, n, st->nobjs)) {
        cdn_free(copy);
        return CDN_ERR_NOMEM;
    }
    st->types[st->nobjs] = type;
    st->ids[st->nobjs] = copy;
    *obj = st->nobjs++;
    return CDN_OK;
}

uint32_t rb_obj_count(const rb_store_t *st)
{
    return st->nobjs;
}

uint16_t rb_obj_type(const rb_store_t *st, uint32_t obj)
{
    return st->types[obj];
}

const char *rb_obj_id(const rb_store_t *st, uint32_t obj)
{
    return st->ids[obj];
}

const rb_sub_t *rb_subjects(const rb_store_t *st, uint32_t obj, uint16_t rel, uint32_t *n)
{
    rb_vec_t *v = index_find(&st->fwd, key_of(obj, rel));
    *n = v ? v->n : 0;
    return v ? vec_items(v) : NULL;
}

const rb_sub_t *rb_holders(const rb_store_t *st, uint32_t obj, uint16_t rel, uint32_t *n)
{
    rb_vec_t *v = index_find(&st->rev, key_of(obj, rel));
    *n = v ? v->n : 0;
    return v ? vec_items(v) : NULL;
}

int rb_tuple_add(rb_store_t *st, uint32_t obj, uint16_t rel, rb_sub_t sub)
{
    rb_vec_t *f = index_get(&st->fwd, key_of(obj, rel));
    if (!f)
        return CDN_ERR_NOMEM;
    if (vec_has(f, sub))
        return 0;
    rb_vec_t *r = index_get(&st->rev, key_of(sub.obj, sub.rel));
    if (!r || vec_push(f, sub))
        return CDN_ERR_NOMEM;
    if (vec_push(r, (rb_sub_t){obj, rel})) {
        f->n--;
        return CDN_ERR_NOMEM;
    }
    st->ntuples++;
    return 1;
}

int rb_tuple_del(rb_store_t *st, uint32_t obj, uint16_t rel, rb_sub_t sub)
{
    rb_vec_t *f = index_find(&st->fwd, key_of(obj, rel));
    int at = vec_has(f, sub);
    if (!at)
        return 0;
    vec_del_at(f, (uint32_t)at - 1);
    rb_vec_t *r = index_find(&st->rev, key_of(sub.obj, sub.rel));
    int back = vec_has(r, (rb_sub_t){obj, rel});
    if (back)
        vec_del_at(r, (uint32_t)back - 1);
    st->ntuples--;
    return 1;
}

uint64_t rb_tuple_count(const rb_store_t *st)
{
    return st->ntuples;
}

int rb_tuples_each(const rb_store_t *st, rb_tuple_fn fn, void *ctx)
{
    for (uint32_t i = 0; i < st->fwd.cap; i++) {
        rb_vec_t *v = &st->fwd.e[i];
        if (!v->key)
            continue;
        uint64_t k = v->key - 1;
        const rb_sub_t *it = vec_items(v);
        for (uint32_t j = 0; j < v->n; j++) {
            int rc = fn(ctx, (uint32_t)(k >> 16), (uint16_t)(k & 0xffff), it[j]);
            if (rc)
                return rc;
        }
    }
    return 0;
}

int rb_store_clone(const rb_store_t *src, rb_store_t **out)
{
    rb_store_t *d = NULL;
    int rc = rb_store_new(&d);
    for (uint32_t i = 0; rc == CDN_OK && i < src->nobjs; i++) {
        uint32_t o;
        rc = rb_obj_add(d, src->types[i], src->ids[i], &o);
    }
    if (rc == CDN_OK && (rc = index_clone(&src->fwd, &d->fwd)) == CDN_OK)
        rc = index_clone(&src->rev, &d->rev);
    if (rc) {
        rb_store_free(d);
        return rc;
    }
    d->ntuples = src->ntuples;
    *out = d;
    return CDN_OK;
}

/* ---- tuples as text ---- */

static int id_ok(const char *s, size_t n, int subject)
{
    if (!n || n >= RB_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == 0x7f || c == '#' || c == ':' || (!subject && c == '@'))
            return 0;
    }
    return 1;
}

int rb_tuple_parse(const rb_schema_t *s, const char *text, rb_tuple_text_t *out, cdn_err_t *err)
{
    const char *colon, *hash, *at, *scolon, *shash, *end;
    size_t n = text ? strlen(text) : 0;
    memset(out, 0, sizeof *out);
    if (!n || n >= RB_TUPLE_MAX)
        return cdn_err_set(err, n ? CDN_ERR_LIMIT : CDN_ERR_INVALID,
                           "a tuple is \"type:id#relation@type:id\" (or @type:id#relation, "
                           "@type:*), under %d bytes",
                           RB_TUPLE_MAX);
    colon = strchr(text, ':');
    hash = colon ? strchr(colon, '#') : NULL;
    at = hash ? strchr(hash, '@') : NULL;
    scolon = at ? strchr(at, ':') : NULL;
    if (!colon || !hash || !at || !scolon)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "tuple \"%.200s\" is not \"type:id#relation@type:id\"", text);
    shash = strchr(scolon, '#');
    end = shash ? shash : text + n;
    int t = rb_type_find(s, text, (size_t)(colon - text));
    int rel = t < 0 ? -1 : rb_rel_find(s, (uint16_t)t, hash + 1, (size_t)(at - hash - 1));
    int st = rb_type_find(s, at + 1, (size_t)(scolon - at - 1));
    if (t < 0 || st < 0)
        return cdn_err_set(err, CDN_ERR_INVALID, "tuple \"%.200s\": %s type is not in the schema",
                           text, t < 0 ? "the object's" : "the subject's");
    if (rel < 0 || s->types[t].rels[rel].is_perm)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "tuple \"%.200s\": %s has no relation of that name (permissions are "
                           "computed, not written)",
                           text, s->types[t].name);
    out->type = (uint16_t)t;
    out->rel = (uint16_t)rel;
    out->sub_type = (uint16_t)st;
    out->sub_rel = RB_NONE;
    if (shash) {
        int sr = rb_rel_find(s, (uint16_t)st, shash + 1, strlen(shash + 1));
        if (sr < 0)
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "tuple \"%.200s\": %s has no relation or permission \"%.60s\"", text,
                               s->types[st].name, shash + 1);
        out->sub_rel = (uint16_t)sr;
    }
    size_t idn = (size_t)(hash - colon - 1), sidn = (size_t)(end - scolon - 1);
    out->wildcard = sidn == 1 && scolon[1] == '*' && !shash;
    if (!id_ok(colon + 1, idn, 0) || (!out->wildcard && !id_ok(scolon + 1, sidn, 1)))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "tuple \"%.200s\": ids are 1 to %d bytes without spaces, control "
                           "characters, '#' or ':' (nor '@' in the object's)",
                           text, RB_ID_MAX - 1);
    if (idn == 1 && colon[1] == '*')
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "tuple \"%.200s\": an object's id cannot be \"*\" (the subject's "
                           "may: every object of its type)",
                           text);
    memcpy(out->id, colon + 1, idn);
    memcpy(out->sub_id, scolon + 1, sidn);
    /* the relation must accept this kind of subject */
    const rb_rel_t *r = &s->types[t].rels[rel];
    for (uint32_t i = 0; i < r->nallowed; i++)
        if (r->allowed[i].type == st && r->allowed[i].rel == out->sub_rel &&
            r->allowed[i].wildcard == out->wildcard)
            return CDN_OK;
    return cdn_err_set(err, CDN_ERR_INVALID,
                       "tuple \"%.200s\": %s.%s does not accept that subject; the schema lists "
                       "the types it does",
                       text, s->types[t].name, r->name);
}

void rb_tuple_format(const rb_schema_t *s, const rb_store_t *st, uint32_t obj, uint16_t rel,
                     rb_sub_t sub, char *out, size_t cap)
{
    uint16_t t = st->types[obj], sty = st->types[sub.obj];
    snprintf(out, cap, "%s:%s#%s@%s:%s%s%s", s->types[t].name, st->ids[obj],
             s->types[t].rels[rel].name, s->types[sty].name, st->ids[sub.obj],
             sub.rel == RB_NONE ? "" : "#",
             sub.rel == RB_NONE ? "" : s->types[sty].rels[sub.rel].name);
}

/* ---- the state a model holds, shared by its copies until one writes ---- */

rb_state_t *rb_state_ref(rb_state_t *rb)
{
    if (rb)
        rb->refs++;
    return rb;
}

void rb_state_release(rb_state_t *rb)
{
    if (!rb || --rb->refs > 0)
        return;
    rb_schema_free(rb->schema);
    rb_store_free(rb->store);
    cdn_free(rb);
}

/* A state of st's own to write to: new, or a copy when it shares one. */
static int own(az_state_t *st, rb_state_t **out)
{
    rb_state_t *rb = st->rebac;
    if (rb && rb->refs == 1) {
        *out = rb;
        return CDN_OK;
    }
    rb_state_t *n = cdn_calloc(1, sizeof *n);
    if (!n)
        return CDN_ERR_NOMEM;
    n->refs = 1;
    int rc = rb ? rb_store_clone(rb->store, &n->store) : rb_store_new(&n->store);
    if (rc == CDN_OK && rb && rb->schema)
        rc = rb_schema_parse(rb->schema->src, &n->schema, NULL);
    if (rc) {
        rb_state_release(n);
        return rc;
    }
    rb_state_release(rb); /* the other holders keep theirs */
    st->rebac = n;
    *out = n;
    return CDN_OK;
}

typedef struct refit {
    const rb_schema_t *old;
    const rb_store_t *from;
    rb_state_t *to; /* the new schema and the store being filled */
    cdn_err_t *err;
} refit_t;

/* One tuple, by its names, into the new state: the new schema may number types and relations
 * differently, and must still accept it. */
static int refit_one(void *ctx, uint32_t obj, uint16_t rel, rb_sub_t sub)
{
    refit_t *r = ctx;
    char text[RB_TUPLE_MAX + 64];
    rb_tuple_text_t t;
    cdn_err_t inner;
    uint32_t o, so;
    rb_tuple_format(r->old, r->from, obj, rel, sub, text, sizeof text);
    if (rb_tuple_parse(r->to->schema, text, &t, &inner))
        return cdn_err_set(r->err, CDN_ERR_CONFLICT,
                           "put_schema: the tuple %.300s would not fit the new schema (%.200s); "
                           "delete it first",
                           text, inner.msg);
    if (rb_obj_add(r->to->store, t.type, t.id, &o) ||
        rb_obj_add(r->to->store, t.sub_type, t.wildcard ? "*" : t.sub_id, &so) ||
        rb_tuple_add(r->to->store, o, t.rel, (rb_sub_t){so, t.sub_rel}) < 0)
        return cdn_err_set(r->err, CDN_ERR_NOMEM, "put_schema: out of memory");
    return 0;
}

int rb_op_put_schema(az_state_t *st, const json_t *op, bool *mutated, cdn_err_t *err)
{
    rb_schema_t *s;
    int rc;
    const char *k;
    json_t *v;
    json_object_foreach(
        (json_t *)op, k,
        v) if (strcmp(k, "op") &&
               strcmp(k, "schema")) return cdn_err_set(err, CDN_ERR_INVALID,
                                                       "put_schema: unknown field '%s'", k);
    if ((rc = rb_schema_parse(json_object_get(op, "schema"), &s, err)))
        return rc;
    rb_state_t *n = cdn_calloc(1, sizeof *n);
    if (!n || rb_store_new(&n->store)) {
        cdn_free(n);
        rb_schema_free(s);
        return cdn_err_set(err, CDN_ERR_NOMEM, "put_schema: out of memory");
    }
    n->refs = 1;
    n->schema = s;
    if (st->rebac && st->rebac->schema) { /* the tuples, written again under the new schema */
        refit_t r = {st->rebac->schema, st->rebac->store, n, err};
        if ((rc = rb_tuples_each(st->rebac->store, refit_one, &r))) {
            rb_state_release(n);
            return rc;
        }
    }
    rb_state_release(st->rebac);
    st->rebac = n;
    *mutated = true;
    return CDN_OK;
}

static int parse_list(const rb_schema_t *s, const json_t *list, const char *what,
                      rb_tuple_text_t **out, size_t *n, cdn_err_t *err)
{
    size_t i;
    json_t *v;
    *out = NULL;
    *n = 0;
    if (!list || json_is_null(list))
        return CDN_OK;
    if (!json_is_array(list))
        return cdn_err_set(err, CDN_ERR_INVALID, "write_tuples: %s must be an array of tuples",
                           what);
    if (json_array_size(list) && !(*out = cdn_malloc(json_array_size(list) * sizeof **out)))
        return cdn_err_set(err, CDN_ERR_NOMEM, "write_tuples: out of memory");
    json_array_foreach(list, i, v)
    {
        cdn_err_t inner;
        int rc = rb_tuple_parse(s, json_string_value(v), &(*out)[i], &inner);
        if (rc)
            return cdn_err_set(err, rc, "write_tuples: %s[%zu]: %s", what, i, inner.msg);
        (*n)++;
    }
    return CDN_OK;
}

/* Checks every tuple of w and d, then deletes d and writes w. */
static int apply_writes(az_state_t *st, const json_t *w, const json_t *d, bool *mutated,
                        cdn_err_t *err)
{
    rb_tuple_text_t *ws = NULL, *ds = NULL;
    size_t nw = 0, nd = 0;
    rb_state_t *rb;
    int rc = CDN_OK;
    if ((rc = parse_list(st->rebac->schema, w, "writes", &ws, &nw, err)) ||
        (rc = parse_list(st->rebac->schema, d, "deletes", &ds, &nd, err)))
        goto done;
    if ((rc = own(st, &rb))) {
        rc = cdn_err_set(err, rc, "write_tuples: out of memory");
        goto done;
    }
    *mutated = nw + nd > 0; /* from here an out-of-memory leaves a half-written state */
    for (size_t i = 0; i < nd && rc == CDN_OK; i++) {
        uint32_t o, so;
        if (rb_obj_get(rb->store, ds[i].type, ds[i].id, &o) == CDN_OK &&
            rb_obj_get(rb->store, ds[i].sub_type, ds[i].wildcard ? "*" : ds[i].sub_id, &so) ==
                CDN_OK)
            rb_tuple_del(rb->store, o, ds[i].rel, (rb_sub_t){so, ds[i].sub_rel});
    }
    for (size_t i = 0; i < nw && rc == CDN_OK; i++) {
        uint32_t o, so;
        if (rb_obj_add(rb->store, ws[i].type, ws[i].id, &o) ||
            rb_obj_add(rb->store, ws[i].sub_type, ws[i].wildcard ? "*" : ws[i].sub_id, &so) ||
            rb_tuple_add(rb->store, o, ws[i].rel, (rb_sub_t){so, ws[i].sub_rel}) < 0)
            rc = cdn_err_set(err, CDN_ERR_NOMEM, "write_tuples: out of memory");
    }
done:
    cdn_free(ws);
    cdn_free(ds);
    return rc;
}

int rb_op_write_tuples(az_state_t *st, const json_t *op, bool *mutated, cdn_err_t *err)
{
    const json_t *w = json_object_get(op, "writes"), *d = json_object_get(op, "deletes");
    const char *k;
    json_t *v;
    json_object_foreach(
        (json_t *)op, k,
        v) if (strcmp(k, "op") && strcmp(k, "writes") &&
               strcmp(k, "deletes")) return cdn_err_set(err, CDN_ERR_INVALID,
                                                        "write_tuples: unknown field '%s'; give "
                                                        "writes and deletes",
                                                        k);
    if (!st->rebac || !st->rebac->schema)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "write_tuples: no relationship schema yet; apply put_schema first");
    if (json_array_size(w) + json_array_size(d) > RB_WRITE_MAX)
        return cdn_err_set(err, CDN_ERR_LIMIT, "write_tuples: %zu tuples; the limit is %d",
                           json_array_size(w) + json_array_size(d), RB_WRITE_MAX);
    return apply_writes(st, w, d, mutated, err);
}

/* ---- export and import ---- */

typedef struct texts {
    const rb_state_t *rb;
    json_t *arr;
} texts_t;

static int add_text(void *ctx, uint32_t obj, uint16_t rel, rb_sub_t sub)
{
    texts_t *t = ctx;
    char buf[RB_TUPLE_MAX + 64];
    rb_tuple_format(t->rb->schema, t->rb->store, obj, rel, sub, buf, sizeof buf);
    return json_array_append_new(t->arr, json_string(buf)) ? CDN_ERR_NOMEM : 0;
}

static int cmp_json_str(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

json_t *rb_export(const rb_state_t *rb)
{
    if (!rb || !rb->schema)
        return NULL;
    texts_t t = {rb, json_array()};
    if (!t.arr || rb_tuples_each(rb->store, add_text, &t)) {
        json_decref(t.arr);
        return NULL;
    }
    /* sorted, so that export, import, export is byte-identical */
    size_t n = json_array_size(t.arr);
    json_t **v = cdn_malloc((n ? n : 1) * sizeof *v), *sorted = json_array();
    for (size_t i = 0; v && i < n; i++)
        v[i] = json_array_get(t.arr, i);
    if (v && n)
        qsort(v, n, sizeof *v, cmp_json_str);
    for (size_t i = 0; v && sorted && i < n; i++)
        json_array_append(sorted, v[i]);
    cdn_free(v);
    json_decref(t.arr);
    return json_pack("{s:O, s:o}", "schema", rb->schema->src, "tuples", sorted);
}

int rb_import(az_state_t *st, const json_t *doc, cdn_err_t *err)
{
    bool mutated = false;
    int rc;
    if (!doc)
        return CDN_OK;
    if (!json_is_object(doc))
        return cdn_err_set(err, CDN_ERR_INVALID, "import: rebac must be an object");
    json_t *op =
        json_pack("{s:s, s:O?}", "op", "put_schema", "schema", json_object_get(doc, "schema"));
    rc = op ? rb_op_put_schema(st, op, &mutated, err) : CDN_ERR_NOMEM;
    json_decref(op);
    if (rc)
        return rc;
    return apply_writes(st, json_object_get(doc, "tuples"), NULL, &mutated, err);
}
