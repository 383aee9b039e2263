/* rebac_schema.c: the relationship schema: object types, their relations (with the subject
 * types each accepts) and their permissions, written as expressions over relations and
 * permissions of the same type: `a + b` (union), `a & b` (intersection), `a - b` (exclusion),
 * `rel->perm` (the perm of every object rel names), parentheses to mix operators. Parsed once,
 * checked whole: every name an expression or a subject type uses must exist. Relies on jansson
 * and base/mem. */
#include "authz/rebac.h"
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int name_ok(const char *s, size_t n)
{
    if (!n || n >= RB_NAME_MAX || !(s[0] >= 'a' && s[0] <= 'z'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return 0;
    return 1;
}

int rb_type_find(const rb_schema_t *s, const char *name, size_t n)
{
    for (uint32_t i = 0; s && i < s->ntypes; i++)
        if (strlen(s->types[i].name) == n && !memcmp(s->types[i].name, name, n))
            return (int)i;
    return -1;
}

int rb_rel_find(const rb_schema_t *s, uint16_t t, const char *name, size_t n)
{
    const rb_type_t *ty = &s->types[t];
    for (uint32_t i = 0; i < ty->nrels; i++)
        if (strlen(ty->rels[i].name) == n && !memcmp(ty->rels[i].name, name, n))
            return (int)i;
    return -1;
}

static void expr_free(rb_expr_t *e)
{
    if (!e)
        return;
    for (uint32_t i = 0; i < e->nkids; i++)
        expr_free(e->kids[i]);
    cdn_free(e->kids);
    cdn_free(e->target);
    cdn_free(e->target_of);
    cdn_free(e);
}

void rb_schema_free(rb_schema_t *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->ntypes; i++) {
        rb_type_t *t = &s->types[i];
        for (uint32_t k = 0; k < t->nrels; k++) {
            cdn_free(t->rels[k].name);
            cdn_free(t->rels[k].allowed);
            cdn_free(t->rels[k].expr_text);
            expr_free(t->rels[k].expr);
        }
        cdn_free(t->rels);
        cdn_free(t->name);
    }
    cdn_free(s->types);
    json_decref(s->src);
    cdn_free(s);
}

/* ---- expressions: a small recursive-descent parser ---- */

typedef struct pctx {
    const char *p, *text;
    const rb_schema_t *s;
    uint16_t type;
    const char *where; /* "type.permission", for messages */
    cdn_err_t *err;
    int rc;
} pctx_t;

static void skip(pctx_t *c)
{
    while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n')
        c->p++;
}

static rb_expr_t *fail(pctx_t *c, int code, const char *msg)
{
    if (!c->rc)
        c->rc = cdn_err_set(c->err, code, "%s: %s at byte %zu of \"%.200s\"", c->where, msg,
                            (size_t)(c->p - c->text), c->text);
    return NULL;
}

static rb_expr_t *node(uint8_t kind)
{
    rb_expr_t *e = cdn_calloc(1, sizeof *e);
    if (e)
        e->kind = kind;
    return e;
}

static rb_expr_t *parse_expr(pctx_t *c, int depth);

static size_t take_name(pctx_t *c, const char **start)
{
    *start = c->p;
    while ((*c->p >= 'a' && *c->p <= 'z') || (*c->p >= '0' && *c->p <= '9') || *c->p == '_')
        c->p++;
    return (size_t)(c->p - *start);
}

static rb_expr_t *parse_term(pctx_t *c, int depth)
{
    const char *name, *target;
    size_t n, tn;
    rb_expr_t *e;
    skip(c);
    if (*c->p == '(') {
        c->p++;
        e = parse_expr(c, depth + 1);
        skip(c);
        if (e && *c->p != ')') {
            expr_free(e);
            return fail(c, CDN_ERR_INVALID, "expected ')'");
        }
        if (e)
            c->p++;
        return e;
    }
    if (!(n = take_name(c, &name)) || !name_ok(name, n))
        return fail(c, CDN_ERR_INVALID, "expected a relation or permission name");
    int rel = rb_rel_find(c->s, c->type, name, n);
    if (rel < 0)
        return fail(c, CDN_ERR_INVALID, "no relation or permission of that name on the type");
    skip(c);
    if (strncmp(c->p, "->", 2)) {
        if (!(e = node(RB_E_REL)))
            return fail(c, CDN_ERR_NOMEM, "out of memory");
        e->rel = (uint16_t)rel;
        return e;
    }
    c->p += 2;
    skip(c);
    if (c->s->types[c->type].rels[rel].is_perm)
        return fail(c, CDN_ERR_INVALID, "an arrow follows a relation, not a permission");
    if (!(tn = take_name(c, &target)) || !name_ok(target, tn))
        return fail(c, CDN_ERR_INVALID, "expected the name after '->'");
    /* some subject type the relation accepts must have the target */
    const rb_rel_t *r = &c->s->types[c->type].rels[rel];
    int found = 0;
    for (uint32_t i = 0; i < r->nallowed; i++)
        found |= rb_rel_find(c->s, r->allowed[i].type, target, tn) >= 0;
    if (!found)
        return fail(c, CDN_ERR_INVALID, "no subject type of the relation has the name after '->'");
    if (!(e = node(RB_E_ARROW)) || !(e->target = cdn_strndup(target, tn)) ||
        !(e->target_of = cdn_malloc((c->s->ntypes + 1) * sizeof *e->target_of))) {
        expr_free(e);
        return fail(c, CDN_ERR_NOMEM, "out of memory");
    }
    for (uint32_t t = 0; t < c->s->ntypes; t++) /* resolved once, not per evaluation */
        e->target_of[t] = (int16_t)rb_rel_find(c->s, (uint16_t)t, target, tn);
    e->rel = (uint16_t)rel;
    return e;
}

static rb_expr_t *parse_expr(pctx_t *c, int depth)
{
    if (depth > 32)
        return fail(c, CDN_ERR_LIMIT, "expression nested too deep");
    rb_expr_t *first = parse_term(c, depth), *e = NULL;
    char op = 0;
    if (!first)
        return NULL;
    for (;;) {
        skip(c);
        char o = *c->p;
        if (o != '+' && o != '&' && o != '-')
            break;
        if (op && o != op) {
            expr_free(e ? e : first);
            return fail(c, CDN_ERR_INVALID, "mix '+', '&' and '-' only with parentheses");
        }
        c->p++;
        rb_expr_t *next = parse_term(c, depth);
        if (!next) {
            expr_free(e ? e : first);
            return NULL;
        }
        if (!e) {
            op = o;
            if (!(e = node(o == '+' ? RB_E_UNION : o == '&' ? RB_E_INTER : RB_E_EXCL))) {
                expr_free(first);
                expr_free(next);
                return fail(c, CDN_ERR_NOMEM, "out of memory");
            }
            e->kids = NULL;
            void *q = NULL;
            size_t cap = 0;
            if (cdn_grow(&q, &cap, 2, sizeof(rb_expr_t *))) {
                expr_free(e);
                expr_free(first);
                expr_free(next);
                return fail(c, CDN_ERR_NOMEM, "out of memory");
            }
            e->kids = q;
            e->kids[e->nkids++] = first;
            e->kids[e->nkids++] = next;
            continue;
        }
        if (o == '-') { /* a - b - c is (a - b) - c */
            rb_expr_t *outer = node(RB_E_EXCL);
            rb_expr_t **kids = cdn_calloc(2, sizeof *kids);
            if (!outer || !kids) {
                cdn_free(outer);
                cdn_free(kids);
                expr_free(e);
                expr_free(next);
                return fail(c, CDN_ERR_NOMEM, "out of memory");
            }
            kids[0] = e;
            kids[1] = next;
            outer->kids = kids;
            outer->nkids = 2;
            e = outer;
            continue;
        }
        void *q = e->kids;
        size_t cap = e->nkids;
        if (cdn_grow(&q, &cap, e->nkids + 1, sizeof(rb_expr_t *))) {
            expr_free(e);
            expr_free(next);
            return fail(c, CDN_ERR_NOMEM, "out of memory");
        }
        e->kids = q;
        e->kids[e->nkids++] = next;
    }
    return e ? e : first;
}

/* True when e holds no intersection or exclusion and every relation it reaches (of its own
 * type, or an arrow's target on the types its relation accepts) is marked monotone so far. */
static bool expr_monotone(const rb_schema_t *s, uint16_t t, const rb_expr_t *e)
{
    if (e->kind == RB_E_INTER || e->kind == RB_E_EXCL)
        return false;
    if (e->kind == RB_E_REL)
        return s->types[t].rels[e->rel].monotone;
    if (e->kind == RB_E_ARROW) {
        const rb_rel_t *r = &s->types[t].rels[e->rel];
        for (uint32_t i = 0; i < r->nallowed; i++) {
            int k = rb_arrow_target(e, r->allowed[i].type);
            if (k >= 0 && !s->types[r->allowed[i].type].rels[k].monotone)
                return false;
        }
    }
    for (uint32_t i = 0; i < e->nkids; i++)
        if (!expr_monotone(s, t, e->kids[i]))
            return false;
    return true;
}

/* True when a relation's every userset names a relation marked monotone so far. */
static bool allowed_monotone(const rb_schema_t *s, const rb_rel_t *r)
{
    for (uint32_t i = 0; i < r->nallowed; i++)
        if (r->allowed[i].rel != RB_NONE &&
            !s->types[r->allowed[i].type].rels[r->allowed[i].rel].monotone)
            return false;
    return true;
}

/* Marks the monotone relations and permissions: those whose whole closure is unions, arrows
 * and usersets of monotone relations, so that a reverse walk finds exactly their holders
 * (rebac_eval.c). A fixpoint from "all of them". */
static void mark_monotone(rb_schema_t *s)
{
    bool changed = true;
    for (uint32_t t = 0; t < s->ntypes; t++)
        for (uint32_t r = 0; r < s->types[t].nrels; r++)
            s->types[t].rels[r].monotone = true;
    while (changed) {
        changed = false;
        s->monotone = true;
        for (uint32_t t = 0; t < s->ntypes; t++)
            for (uint32_t r = 0; r < s->types[t].nrels; r++) {
                rb_rel_t *rel = &s->types[t].rels[r];
                if (rel->monotone && !(rel->is_perm ? expr_monotone(s, (uint16_t)t, rel->expr)
                                                    : allowed_monotone(s, rel))) {
                    rel->monotone = false;
                    changed = true;
                }
                s->monotone &= rel->monotone;
            }
    }
}

/* Marks, for each (type, relation) x, which edges a reverse walk may take from it: from a
 * userset expression e of type t, the relations it reads and the arrows it takes. */
static void mark_edges_expr(rb_schema_t *s, uint16_t t, uint16_t p, const rb_expr_t *e)
{
    if (e->kind == RB_E_REL)
        s->types[t].rels[e->rel].read_by |= 1ull << p;
    if (e->kind == RB_E_ARROW) {
        const rb_rel_t *r = &s->types[t].rels[e->rel];
        for (uint32_t i = 0; i < r->nallowed; i++) {
            int k = rb_arrow_target(e, r->allowed[i].type);
            if (k >= 0)
                s->types[r->allowed[i].type].rels[k].arrowed = true;
        }
    }
    for (uint32_t i = 0; i < e->nkids; i++)
        mark_edges_expr(s, t, p, e->kids[i]);
}

static void mark_edges(rb_schema_t *s)
{
    for (uint32_t t = 0; t < s->ntypes; t++)
        for (uint32_t r = 0; r < s->types[t].nrels; r++) {
            const rb_rel_t *rel = &s->types[t].rels[r];
            if (rel->is_perm)
                mark_edges_expr(s, (uint16_t)t, (uint16_t)r, rel->expr);
            for (uint32_t i = 0; !rel->is_perm && i < rel->nallowed; i++)
                if (rel->allowed[i].rel != RB_NONE)
                    s->types[rel->allowed[i].type].rels[rel->allowed[i].rel].in_userset = true;
        }
}

/* ---- the schema document ---- */

static int parse_allowed(rb_schema_t *s, uint16_t t, rb_rel_t *r, const json_t *list,
                         cdn_err_t *err)
{
    size_t i;
    json_t *v;
    if (!json_is_array(list) || !json_array_size(list))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "%s.%s: a relation lists the subject types it accepts, e.g. "
                           "[\"user\", \"group#member\", \"user:*\"]",
                           s->types[t].name, r->name);
    if (!(r->allowed = cdn_calloc(json_array_size(list), sizeof *r->allowed)))
        return CDN_ERR_NOMEM;
    json_array_foreach(list, i, v)
    {
        const char *a = json_string_value(v), *hash = a ? strchr(a, '#') : NULL,
                   *colon = a ? strchr(a, ':') : NULL;
        size_t tn = !a ? 0 : hash ? (size_t)(hash - a) : colon ? (size_t)(colon - a) : strlen(a);
        int ty = a ? rb_type_find(s, a, tn) : -1, rel = RB_NONE;
        if (ty < 0)
            return cdn_err_set(err, CDN_ERR_INVALID, "%s.%s: subject type \"%.100s\" is not a type",
                               s->types[t].name, r->name, a ? a : "(not a string)");
        if (hash && (rel = rb_rel_find(s, (uint16_t)ty, hash + 1, strlen(hash + 1))) < 0)
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "%s.%s: \"%.100s\" names no relation or permission of %s",
                               s->types[t].name, r->name, a, s->types[ty].name);
        if (colon && strcmp(colon, ":*"))
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "%s.%s: \"%.100s\": write TYPE, TYPE#RELATION or TYPE:*",
                               s->types[t].name, r->name, a);
        r->allowed[r->nallowed++] = (rb_allowed_t){(uint16_t)ty, (uint16_t)rel, colon != NULL};
    }
    return CDN_OK;
}

static int add_rels(rb_schema_t *s, uint16_t t, const json_t *obj, bool perm, cdn_err_t *err)
{
    const char *k;
    json_t *v;
    rb_type_t *ty = &s->types[t];
    if (obj && !json_is_object(obj))
        return cdn_err_set(err, CDN_ERR_INVALID, "%s: %s must be an object", ty->name,
                           perm ? "permissions" : "relations");
    json_object_foreach((json_t *)obj, k, v)
    {
        if (!name_ok(k, strlen(k)))
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "%s: \"%.100s\": names are 1 to 63 of [a-z0-9_], starting with a "
                               "letter",
                               ty->name, k);
        if (rb_rel_find(s, t, k, strlen(k)) >= 0)
            return cdn_err_set(err, CDN_ERR_INVALID, "%s.%s is defined twice", ty->name, k);
        if (ty->nrels >= RB_RELS_MAX)
            return cdn_err_set(err, CDN_ERR_LIMIT, "%s: more than %d relations and permissions",
                               ty->name, RB_RELS_MAX);
        rb_rel_t *r = &ty->rels[ty->nrels];
        memset(r, 0, sizeof *r);
        if (!(r->name = cdn_strdup(k)))
            return CDN_ERR_NOMEM;
        r->is_perm = perm;
        ty->nrels++;
        if (perm && (!json_is_string(v) || json_string_length(v) >= RB_EXPR_MAX))
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "%s.%s: a permission is an expression string under %d bytes",
                               ty->name, k, RB_EXPR_MAX);
        if (perm && !(r->expr_text = cdn_strdup(json_string_value(v))))
            return CDN_ERR_NOMEM;
    }
    return CDN_OK;
}

int rb_schema_parse(const json_t *doc, rb_schema_t **out, cdn_err_t *err)
{
    const json_t *types = json_object_get(doc, "types");
    const char *k;
    json_t *v;
    int rc = CDN_OK;
    *out = NULL;
    if (!json_is_object(doc) || !json_is_object(types) || json_object_size(doc) != 1)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "a schema is {\"types\": {TYPE: {\"relations\": {...}, "
                           "\"permissions\": {...}}}}");
    if (json_object_size(types) > RB_TYPES_MAX)
        return cdn_err_set(err, CDN_ERR_LIMIT, "%zu types; the limit is %d",
                           json_object_size(types), RB_TYPES_MAX);
    rb_schema_t *s = cdn_calloc(1, sizeof *s);
    if (!s || !(s->types = cdn_calloc(json_object_size(types) + 1, sizeof *s->types)))
        rc = CDN_ERR_NOMEM;
    /* pass 1: the types and the names of their relations and permissions */
    json_object_foreach((json_t *)types, k, v)
    {
        if (rc)
            break;
        const char *f;
        json_t *x;
        if (!name_ok(k, strlen(k))) {
            rc = cdn_err_set(err, CDN_ERR_INVALID,
                             "type \"%.100s\": names are 1 to 63 of [a-z0-9_], starting with a "
                             "letter",
                             k);
            break;
        }
        json_object_foreach(v, f, x) if (strcmp(f, "relations") && strcmp(f, "permissions"))
        {
            rc = cdn_err_set(err, CDN_ERR_INVALID,
                             "type %s: unknown field \"%.60s\"; a type has relations and "
                             "permissions",
                             k, f);
            break;
        }
        if (rc)
            break;
        if (!json_is_object(v)) {
            rc = cdn_err_set(err, CDN_ERR_INVALID, "type %s must be an object", k);
            break;
        }
        rb_type_t *ty = &s->types[s->ntypes];
        if (!(ty->name = cdn_strdup(k)) ||
            !(ty->rels = cdn_calloc(RB_RELS_MAX, sizeof *ty->rels))) {
            rc = CDN_ERR_NOMEM;
            break;
        }
        s->ntypes++;
        if ((rc = add_rels(s, (uint16_t)(s->ntypes - 1), json_object_get(v, "relations"), false,
                           err)) ||
            (rc = add_rels(s, (uint16_t)(s->ntypes - 1), json_object_get(v, "permissions"), true,
                           err)))
            break;
    }
    /* pass 2: subject types of relations, then expressions (which look at them) */
    for (uint32_t t = 0; !rc && t < s->ntypes; t++) {
        json_t *rels = json_object_get(json_object_get(types, s->types[t].name), "relations");
        for (uint32_t r = 0; !rc && r < s->types[t].nrels; r++)
            if (!s->types[t].rels[r].is_perm)
                rc = parse_allowed(s, (uint16_t)t, &s->types[t].rels[r],
                                   json_object_get(rels, s->types[t].rels[r].name), err);
    }
    for (uint32_t t = 0; !rc && t < s->ntypes; t++)
        for (uint32_t r = 0; !rc && r < s->types[t].nrels; r++) {
            rb_rel_t *rel = &s->types[t].rels[r];
            char where[2 * RB_NAME_MAX + 2];
            if (!rel->is_perm)
                continue;
            snprintf(where, sizeof where, "%s.%s", s->types[t].name, rel->name);
            pctx_t c = {rel->expr_text, rel->expr_text, s, (uint16_t)t, where, err, 0};
            rel->expr = parse_expr(&c, 0);
            skip(&c);
            if (rel->expr && *c.p)
                fail(&c, CDN_ERR_INVALID, "unexpected text");
            rc = c.rc ? c.rc : rel->expr ? CDN_OK : CDN_ERR_NOMEM;
        }
    if (!rc) {
        mark_monotone(s);
        mark_edges(s);
    }
    if (!rc && !(s->src = json_deep_copy(doc)))
        rc = CDN_ERR_NOMEM;
    if (rc) {
        if (rc == CDN_ERR_NOMEM)
            cdn_err_set(err, rc, "schema: out of memory");
        rb_schema_free(s);
        return rc;
    }
    *out = s;
    return CDN_OK;
}
