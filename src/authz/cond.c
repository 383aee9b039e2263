/* cond.c: conditions compiled once at apply time into a small tree, then evaluated per check
 * with no JSON parsing. Relies on jansson (operand lookup) and base/mem.h. */
#include "authz/internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/date.h"
#include "base/mem.h"

#define COND_MAX_DEPTH 32
#define COND_MAX_NODES 256
#define PATH_MAX_SEGS 8

/* Dates are base/date.h's text forms (no numeric text: a condition's numbers are JSON numbers). */
static bool cond_date(const char *s, size_t n, double *out)
{
    double ms;
    if (cdn_date_parse(s, n, 0, &ms) != CDN_OK)
        return false;
    *out = ms / 1000.0; /* conditions compare epoch seconds, the unit of their numbers */
    return true;
}

typedef enum {
    OP_STR_EQ,
    OP_STR_NE,
    OP_STR_IN,
    OP_STR_NOT_IN,
    OP_CONTAINS,
    OP_STARTS,
    OP_ENDS,
    OP_NUM_EQ,
    OP_NUM_LT,
    OP_NUM_LE,
    OP_NUM_GT,
    OP_NUM_GE,
    OP_BOOL,
    OP_DATE_BEFORE,
    OP_DATE_AFTER,
    OP_COUNT
} cmp_op_t;

static const char *const op_names[OP_COUNT] = {"StringEquals",
                                               "StringNotEquals",
                                               "StringIn",
                                               "StringNotIn",
                                               "Contains",
                                               "StartsWith",
                                               "EndsWith",
                                               "NumericEquals",
                                               "NumericLessThan",
                                               "NumericLessThanEquals",
                                               "NumericGreaterThan",
                                               "NumericGreaterThanEquals",
                                               "Bool",
                                               "DateBefore",
                                               "DateAfter"};

typedef enum {
    ROOT_SUBJECT_ATTR,
    ROOT_SUBJECT_ID,
    ROOT_SUBJECT_KIND,
    ROOT_RES_TYPE,
    ROOT_RES_ID,
    ROOT_RES_ATTR,
    ROOT_CONTEXT,
    ROOT_SCOPE_TYPE,
    ROOT_SCOPE_ID
} root_t;

typedef struct operand {
    bool is_path;
    uint8_t root, nseg;
    char *seg[PATH_MAX_SEGS];
    json_t *lit; /* literal (owned) */
    double num;  /* literal as number or date */
} operand_t;

enum { N_AND, N_OR, N_NOT, N_CMP };

struct az_cond {
    uint8_t kind;
    uint8_t op;
    uint32_t nkids;
    az_cond_t **kids;
    operand_t lhs, rhs;
};

/* A resolved operand: a view of a JSON value or of one of the request's strings. */
typedef struct val {
    enum { V_MISSING, V_STR, V_NUM, V_BOOL, V_ARR, V_OTHER } t;
    const char *s;
    size_t len;
    double num;
    bool b;
    const json_t *arr;
} val_t;

static void operand_clear(operand_t *o)
{
    for (int i = 0; i < o->nseg; i++)
        cdn_free(o->seg[i]);
    if (o->lit)
        json_decref(o->lit);
    memset(o, 0, sizeof(*o));
}

void az_cond_free(az_cond_t *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->nkids; i++)
        az_cond_free(c->kids[i]);
    cdn_free(c->kids);
    operand_clear(&c->lhs);
    operand_clear(&c->rhs);
    cdn_free(c);
}

static int path_tail(operand_t *o, const char *rest, const char *path, cdn_err_t *err)
{
    while (*rest) {
        const char *dot = strchr(rest, '.');
        size_t len = dot ? (size_t)(dot - rest) : strlen(rest);
        if (!len || o->nseg == PATH_MAX_SEGS)
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "condition path '%s' has an empty segment or more than %d; "
                               "write it like context.request.ip",
                               path, PATH_MAX_SEGS);
        if (!(o->seg[o->nseg] = cdn_strndup(rest, len)))
            return cdn_err_set(err, CDN_ERR_NOMEM, "condition: out of memory");
        o->nseg++;
        rest += len + (dot ? 1 : 0);
        if (dot && !*rest)
            return cdn_err_set(err, CDN_ERR_INVALID, "condition path '%s' ends with '.'", path);
    }
    return CDN_OK;
}

static int path_compile(const char *path, operand_t *o, cdn_err_t *err)
{
    static const struct {
        const char *name;
        root_t root;
        bool tail;
    } roots[] = {
        {"subject.id", ROOT_SUBJECT_ID, false},
        {"subject.kind", ROOT_SUBJECT_KIND, false},
        {"resource.type", ROOT_RES_TYPE, false},
        {"resource.id", ROOT_RES_ID, false},
        {"scope.type", ROOT_SCOPE_TYPE, false},
        {"scope.id", ROOT_SCOPE_ID, false},
        {"subject.attributes.", ROOT_SUBJECT_ATTR, true},
        {"context.", ROOT_CONTEXT, true},
        {"resource.", ROOT_RES_ATTR, true},
    };
    o->is_path = true;
    for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
        size_t n = strlen(roots[i].name);
        if (roots[i].tail ? strncmp(path, roots[i].name, n) : strcmp(path, roots[i].name))
            continue;
        o->root = (uint8_t)roots[i].root;
        if (!roots[i].tail)
            return CDN_OK;
        if (!path[n])
            break;
        return path_tail(o, path + n, path, err);
    }
    return cdn_err_set(err, CDN_ERR_INVALID,
                       "condition path '%s' is not understood; use subject.id, subject.kind, "
                       "subject.attributes.<name>, resource.type, resource.id, resource.<attr>, "
                       "context.<name>, scope.type or scope.id",
                       path);
}

/* Checks that a literal has the type its operator needs, and precomputes numbers/dates. */
static int literal_check(cmp_op_t op, operand_t *o, cdn_err_t *err)
{
    const json_t *v = o->lit;
    const char *name = op_names[op];
    switch (op) {
    case OP_STR_IN:
    case OP_STR_NOT_IN: {
        size_t i;
        json_t *e;
        if (!json_is_array(v))
            goto bad;
        json_array_foreach(v, i, e)
        {
            if (!json_is_string(e))
                goto bad;
        }
        return CDN_OK;
    }
    case OP_CONTAINS:
        if (json_is_string(v) || json_is_number(v))
            return CDN_OK;
        goto bad;
    case OP_NUM_EQ:
    case OP_NUM_LT:
    case OP_NUM_LE:
    case OP_NUM_GT:
    case OP_NUM_GE:
        if (!json_is_number(v))
            goto bad;
        o->num = json_number_value(v);
        return CDN_OK;
    case OP_BOOL:
        if (!json_is_boolean(v))
            goto bad;
        return CDN_OK;
    case OP_DATE_BEFORE:
    case OP_DATE_AFTER:
        if (json_is_number(v)) {
            o->num = json_number_value(v);
            return CDN_OK;
        }
        if (json_is_string(v) && cond_date(json_string_value(v), json_string_length(v), &o->num))
            return CDN_OK;
        goto bad;
    default:
        if (json_is_string(v))
            return CDN_OK;
        goto bad;
    }
bad:
    return cdn_err_set(err, CDN_ERR_INVALID, "condition %s: the value has the wrong type; %s", name,
                       op == OP_STR_IN || op == OP_STR_NOT_IN ? "give an array of strings"
                       : op >= OP_NUM_EQ && op <= OP_NUM_GE   ? "give a number"
                       : op == OP_BOOL                        ? "give true or false"
                       : op >= OP_DATE_BEFORE ? "give an RFC 3339 date such as 2026-01-31T00:00:00Z"
                                              : "give a string");
}

static int cmp_compile(cmp_op_t op, const char *path, const json_t *rhs, az_cond_t **out,
                       cdn_err_t *err)
{
    az_cond_t *c = cdn_calloc(1, sizeof(*c));
    if (!c)
        return cdn_err_set(err, CDN_ERR_NOMEM, "condition: out of memory");
    c->kind = N_CMP;
    c->op = (uint8_t)op;
    int rc = path_compile(path, &c->lhs, err);
    const json_t *rp = json_is_object(rhs) ? json_object_get(rhs, "path") : NULL;
    if (!rc && json_is_object(rhs)) {
        if (!json_is_string(rp) || json_object_size(rhs) != 1)
            rc = cdn_err_set(err, CDN_ERR_INVALID,
                             "condition %s on '%s': an object operand must be {\"path\": "
                             "\"...\"}",
                             op_names[op], path);
        else
            rc = path_compile(json_string_value(rp), &c->rhs, err);
    } else if (!rc) {
        c->rhs.lit = json_deep_copy(rhs);
        rc = c->rhs.lit ? literal_check(op, &c->rhs, err)
                        : cdn_err_set(err, CDN_ERR_NOMEM, "condition: out of memory");
    }
    if (rc) {
        az_cond_free(c);
        return rc;
    }
    *out = c;
    return CDN_OK;
}

static int node_compile(const json_t *src, int depth, int *budget, az_cond_t **out, cdn_err_t *err);

static int kids_add(az_cond_t *c, az_cond_t *kid)
{
    void *p = cdn_realloc(c->kids, (c->nkids + 1) * sizeof(*c->kids));
    if (!p)
        return CDN_ERR_NOMEM;
    c->kids = p;
    c->kids[c->nkids++] = kid;
    return CDN_OK;
}

/* One key of a condition object: And/Or/Not or an operator over {path: operand, ...}. */
static int key_compile(const char *key, const json_t *val, int depth, int *budget, az_cond_t **out,
                       cdn_err_t *err)
{
    bool is_and = !strcmp(key, "And"), is_or = !strcmp(key, "Or");
    if (!strcmp(key, "Not")) {
        az_cond_t *c = cdn_calloc(1, sizeof(*c)), *kid = NULL;
        if (!c)
            return cdn_err_set(err, CDN_ERR_NOMEM, "condition: out of memory");
        c->kind = N_NOT;
        int rc = node_compile(val, depth + 1, budget, &kid, err);
        if (!rc && kids_add(c, kid)) {
            az_cond_free(kid);
            rc = cdn_err_set(err, CDN_ERR_NOMEM, "condition: out of memory");
        }
        if (rc)
            az_cond_free(c);
        else
            *out = c;
        return rc;
    }
    int op = -1;
    for (int i = 0; i < OP_COUNT && op < 0; i++)
        if (!strcmp(key, op_names[i]))
            op = i;
    if (!is_and && !is_or && op < 0)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "condition: unknown operator '%s'; use And, Or, Not, StringEquals, "
                           "StringNotEquals, StringIn, StringNotIn, Contains, StartsWith, "
                           "EndsWith, Numeric*, Bool, DateBefore or DateAfter",
                           key);
    if ((is_and || is_or) ? !json_is_array(val) || !json_array_size(val)
                          : !json_is_object(val) || !json_object_size(val))
        return cdn_err_set(err, CDN_ERR_INVALID, "condition %s: expects %s", key,
                           (is_and || is_or) ? "a non-empty array of conditions"
                                             : "an object {\"<path>\": <value>}");
    az_cond_t *c = cdn_calloc(1, sizeof(*c));
    if (!c)
        return cdn_err_set(err, CDN_ERR_NOMEM, "condition: out of memory");
    c->kind = is_or ? N_OR : N_AND;
    int rc = CDN_OK;
    size_t i;
    const char *path;
    json_t *e;
    if (is_and || is_or) {
        json_array_foreach(val, i, e)
        {
            az_cond_t *kid = NULL;
            if ((rc = node_compile(e, depth + 1, budget, &kid, err)))
                break;
            if (kids_add(c, kid)) {
                az_cond_free(kid);
                rc = cdn_err_set(err, CDN_ERR_NOMEM, "condition: out of memory");
                break;
            }
        }
    } else {
        json_object_foreach((json_t *)val, path, e)
        {
            az_cond_t *kid = NULL;
            if (--*budget < 0)
                rc = cdn_err_set(err, CDN_ERR_LIMIT, "condition has more than %d nodes",
                                 COND_MAX_NODES);
            if (rc || (rc = cmp_compile((cmp_op_t)op, path, e, &kid, err)))
                break;
            if (kids_add(c, kid)) {
                az_cond_free(kid);
                rc = cdn_err_set(err, CDN_ERR_NOMEM, "condition: out of memory");
                break;
            }
        }
    }
    if (rc) {
        az_cond_free(c);
        return rc;
    }
    *out = c;
    return CDN_OK;
}

static int node_compile(const json_t *src, int depth, int *budget, az_cond_t **out, cdn_err_t *err)
{
    if (depth > COND_MAX_DEPTH)
        return cdn_err_set(err, CDN_ERR_LIMIT, "condition nests deeper than %d levels",
                           COND_MAX_DEPTH);
    if (--*budget < 0)
        return cdn_err_set(err, CDN_ERR_LIMIT, "condition has more than %d nodes", COND_MAX_NODES);
    if (!json_is_object(src) || !json_object_size(src))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "condition: each node must be a non-empty object such as "
                           "{\"StringEquals\": {\"subject.attributes.department\": \"hr\"}}");
    if (json_object_size(src) == 1) {
        const char *k = json_object_iter_key(json_object_iter((json_t *)src));
        return key_compile(k, json_object_get(src, k), depth, budget, out, err);
    }
    /* Several keys in one object mean all of them. */
    az_cond_t *c = cdn_calloc(1, sizeof(*c));
    if (!c)
        return cdn_err_set(err, CDN_ERR_NOMEM, "condition: out of memory");
    c->kind = N_AND;
    const char *k;
    json_t *v;
    int rc = CDN_OK;
    json_object_foreach((json_t *)src, k, v)
    {
        az_cond_t *kid = NULL;
        if ((rc = key_compile(k, v, depth + 1, budget, &kid, err)))
            break;
        if (kids_add(c, kid)) {
            az_cond_free(kid);
            rc = cdn_err_set(err, CDN_ERR_NOMEM, "condition: out of memory");
            break;
        }
    }
    if (rc) {
        az_cond_free(c);
        return rc;
    }
    *out = c;
    return CDN_OK;
}

int az_cond_compile(const json_t *src, az_cond_t **out, cdn_err_t *err)
{
    int budget = COND_MAX_NODES;
    *out = NULL;
    return node_compile(src, 0, &budget, out, err);
}

/* ---- evaluation ---- */

static val_t val_of_json(const json_t *j)
{
    val_t v = {.t = V_MISSING};
    if (!j)
        return v;
    switch (json_typeof(j)) {
    case JSON_STRING:
        v.t = V_STR;
        v.s = json_string_value(j);
        v.len = json_string_length(j);
        break;
    case JSON_INTEGER:
    case JSON_REAL:
        v.t = V_NUM;
        v.num = json_number_value(j);
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        v.t = V_BOOL;
        v.b = json_is_true(j);
        break;
    case JSON_ARRAY:
        v.t = V_ARR;
        v.arr = j;
        break;
    case JSON_NULL: break; /* null counts as missing: never equal because both are absent */
    default: v.t = V_OTHER;
    }
    return v;
}

static val_t val_of_str(const char *s, size_t len)
{
    val_t v = {.t = s ? V_STR : V_MISSING, .s = s, .len = len};
    return v;
}

static val_t resolve(const operand_t *o, const az_env_t *env)
{
    if (!o->is_path)
        return val_of_json(o->lit);
    const json_t *j = NULL;
    switch ((root_t)o->root) {
    case ROOT_SUBJECT_ID:
        return val_of_str(env->subject_id, env->subject_id ? strlen(env->subject_id) : 0);
    case ROOT_SUBJECT_KIND:
        return val_of_str(env->subject_kind, env->subject_kind ? strlen(env->subject_kind) : 0);
    case ROOT_RES_TYPE: return val_of_str(env->res_type, env->res_type_len);
    case ROOT_RES_ID: return val_of_str(env->res_id, env->res_id ? strlen(env->res_id) : 0);
    case ROOT_SCOPE_TYPE:
        return val_of_str(env->scope_type, env->scope_type ? strlen(env->scope_type) : 0);
    case ROOT_SCOPE_ID: return val_of_str(env->scope_id, env->scope_id ? strlen(env->scope_id) : 0);
    case ROOT_SUBJECT_ATTR: j = env->subject_attrs; break;
    case ROOT_RES_ATTR: j = env->res_attrs; break;
    case ROOT_CONTEXT: j = env->context; break;
    }
    for (int i = 0; i < o->nseg && j; i++)
        j = json_is_object(j) ? json_object_get(j, o->seg[i]) : NULL;
    return val_of_json(j);
}

static bool str_eq(const val_t *a, const char *s, size_t len)
{
    return a->len == len && !memcmp(a->s, s, len);
}

static bool in_array(const val_t *a, const json_t *arr)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        if (a->t == V_STR && json_is_string(e) &&
            str_eq(a, json_string_value(e), json_string_length(e)))
            return true;
        if (a->t == V_NUM && json_is_number(e) && json_number_value(e) == a->num)
            return true;
    }
    return false;
}

static bool as_date(const val_t *v, double *out)
{
    if (v->t == V_NUM) {
        *out = v->num;
        return true;
    }
    return v->t == V_STR && cond_date(v->s, v->len, out);
}

static bool cmp_eval(const az_cond_t *c, const az_env_t *env)
{
    val_t a = resolve(&c->lhs, env), b = resolve(&c->rhs, env);
    if (a.t == V_MISSING || b.t == V_MISSING)
        return false; /* a missing operand is false, whatever the operator */
    double x, y;
    switch ((cmp_op_t)c->op) {
    case OP_STR_EQ: return a.t == V_STR && b.t == V_STR && str_eq(&a, b.s, b.len);
    case OP_STR_NE: return a.t == V_STR && b.t == V_STR && !str_eq(&a, b.s, b.len);
    case OP_STR_IN: return a.t == V_STR && b.t == V_ARR && in_array(&a, b.arr);
    case OP_STR_NOT_IN: return a.t == V_STR && b.t == V_ARR && !in_array(&a, b.arr);
    case OP_CONTAINS:
        if (a.t == V_ARR)
            return (b.t == V_STR || b.t == V_NUM) && in_array(&b, a.arr);
        return a.t == V_STR && b.t == V_STR && memmem(a.s, a.len, b.s, b.len) != NULL;
    case OP_STARTS:
        return a.t == V_STR && b.t == V_STR && a.len >= b.len && !memcmp(a.s, b.s, b.len);
    case OP_ENDS:
        return a.t == V_STR && b.t == V_STR && a.len >= b.len &&
               !memcmp(a.s + a.len - b.len, b.s, b.len);
    case OP_NUM_EQ:
    case OP_NUM_LT:
    case OP_NUM_LE:
    case OP_NUM_GT:
    case OP_NUM_GE:
        if (a.t != V_NUM || b.t != V_NUM)
            return false;
        x = a.num;
        y = b.num;
        return c->op == OP_NUM_EQ   ? x == y
               : c->op == OP_NUM_LT ? x < y
               : c->op == OP_NUM_LE ? x <= y
               : c->op == OP_NUM_GT ? x > y
                                    : x >= y;
    case OP_BOOL: return a.t == V_BOOL && b.t == V_BOOL && a.b == b.b;
    case OP_DATE_BEFORE: return as_date(&a, &x) && as_date(&b, &y) && x < y;
    case OP_DATE_AFTER: return as_date(&a, &x) && as_date(&b, &y) && x > y;
    default: return false;
    }
}

bool az_cond_eval(const az_cond_t *c, const az_env_t *env)
{
    switch (c->kind) {
    case N_AND:
        for (uint32_t i = 0; i < c->nkids; i++)
            if (!az_cond_eval(c->kids[i], env))
                return false;
        return true;
    case N_OR:
        for (uint32_t i = 0; i < c->nkids; i++)
            if (az_cond_eval(c->kids[i], env))
                return true;
        return false;
    case N_NOT: return !az_cond_eval(c->kids[0], env);
    default: return cmp_eval(c, env);
    }
}

/* Three-valued evaluation for denies: 0 false, 1 true, 2 unknown (a missing operand). */
static int eval3(const az_cond_t *c, const az_env_t *env)
{
    int r, seen_unknown = 0;
    switch (c->kind) {
    case N_AND:
        for (uint32_t i = 0; i < c->nkids; i++) {
            if ((r = eval3(c->kids[i], env)) == 0)
                return 0;
            seen_unknown |= r == 2;
        }
        return seen_unknown ? 2 : 1;
    case N_OR:
        for (uint32_t i = 0; i < c->nkids; i++) {
            if ((r = eval3(c->kids[i], env)) == 1)
                return 1;
            seen_unknown |= r == 2;
        }
        return seen_unknown ? 2 : 0;
    case N_NOT: return (r = eval3(c->kids[0], env)) == 2 ? 2 : !r;
    default: {
        val_t a = resolve(&c->lhs, env), b = resolve(&c->rhs, env);
        if (a.t == V_MISSING || b.t == V_MISSING)
            return 2;
        return cmp_eval(c, env);
    }
    }
}

bool az_cond_eval_deny(const az_cond_t *c, const az_env_t *env)
{
    return eval3(c, env) != 0;
}
