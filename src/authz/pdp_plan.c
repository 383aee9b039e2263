/* pdp_plan.c: a policy decision point's answer turned into a pre-filter (pdp.h).
 *
 * Cerbos's PlanResources answers a tree of expressions over the resource's attributes, e.g.
 * and(not(eq(R.attr.secret, true)), or(eq(R.attr.dept, "eng"), lt(R.attr.level, 3))). Each
 * node becomes two Elasticsearch filters: where it is true, and where it is false. A chunk
 * lacking an attribute is in neither (the comparison is unknown, as a NULL is in SQL), so
 * `not` swaps the two and never admits a chunk merely for lacking what a deny rule tests:
 * the filter admits at most what the policy allows, never more. Constant subtrees fold, so a
 * plan that is always true or false becomes PDP_ALL or PDP_NONE.
 * Relies on jansson. */
#include "authz/pdp.h"
#include "base/mem.h"

#include <jansson.h>
#include <string.h>

/* A node's two sides: a query object, or a constant (q NULL, c 1 or 0). */
typedef struct side {
    json_t *q;
    int c;
} side_t;

typedef struct tv {
    side_t t, f; /* where true, where false */
} tv_t;

static void tv_free(tv_t *v)
{
    json_decref(v->t.q);
    json_decref(v->f.q);
    v->t.q = v->f.q = NULL;
}

static int unsupported(cdn_err_t *err, const char *what, const char *name)
{
    return cdn_err_set(err, CDN_ERR_UNSUPPORTED,
                       "the authorizer's plan uses %s \"%.80s\", which cordon cannot turn into a "
                       "filter (nothing is read)",
                       what, name);
}

static int nomem(cdn_err_t *err)
{
    return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory turning a plan into a filter");
}

/* The metadata field a variable names: request.resource.attr.X or R.attr.X, X a plain key;
 * "_id" for request.resource.id. NULL when it names anything else. */
static const char *field_of(const char *var)
{
    static const char *const pre[] = {"request.resource.attr.", "R.attr."};
    if (!strcmp(var, "request.resource.id") || !strcmp(var, "R.id"))
        return "_id";
    for (size_t i = 0; i < 2; i++) {
        size_t n = strlen(pre[i]);
        if (!strncmp(var, pre[i], n) && var[n]) {
            for (const char *p = var + n; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
                    return NULL; /* nested attributes, indexing: not a metadata key */
            return var + n;
        }
    }
    return NULL;
}

/* exists(field) AND NOT q: where a comparison that is not true is false (steals q). */
static json_t *known_not(const char *field, json_t *q)
{
    if (!strcmp(field, "_id"))
        return json_pack("{s:{s:[o]}}", "bool", "must_not", q); /* every chunk has an id */
    return json_pack("{s:{s:[{s:{s:s}}], s:[o]}}", "bool", "filter", "exists", "field", field,
                     "must_not", q);
}

static int scalar(const json_t *v)
{
    return json_is_string(v) || json_is_number(v) || json_is_boolean(v);
}

static int leaf(const char *op, const json_t *a, const json_t *b, tv_t *out, cdn_err_t *err)
{
    const json_t *va = json_object_get(a, "variable"), *vb = json_object_get(b, "variable");
    const json_t *var = va ? va : vb, *val = json_object_get(va ? b : a, "value");
    int flipped = !va; /* the value is on the left */
    if (!json_is_string(var) || (va && vb) || !val)
        return unsupported(err, "a comparison of", op);
    const char *field = field_of(json_string_value(var));
    if (!field)
        return unsupported(err, "the variable", json_string_value(var));
    json_t *t = NULL;
    int is_id = !strcmp(field, "_id");
    if (!strcmp(op, "eq") || !strcmp(op, "ne")) {
        if (!scalar(val))
            return unsupported(err, "an equality with a list or object in", op);
        t = is_id ? json_pack("{s:{s:[O]}}", "ids", "values", val)
                  : json_pack("{s:{s:O}}", "term", field, val);
    } else if (!strcmp(op, "lt") || !strcmp(op, "le") || !strcmp(op, "gt") || !strcmp(op, "ge")) {
        /* flipped: 3 < attr is attr > 3 */
        int lt = op[0] == 'l', eq = op[1] == 'e';
        const char *r = (lt != flipped) ? (eq ? "lte" : "lt") : (eq ? "gte" : "gt");
        if (is_id || !(json_is_number(val) || json_is_string(val)))
            return unsupported(err, "an ordering of", op);
        t = json_pack("{s:{s:{s:O}}}", "range", field, r, val);
    } else if (!strcmp(op, "in") || !strcmp(op, "hasIntersection")) {
        /* value in attr (a list attribute holds the value): a term; attr in [list] and
         * hasIntersection(attr, [list]): terms. */
        if (scalar(val) && !strcmp(op, "in") && flipped)
            t = is_id ? json_pack("{s:{s:[O]}}", "ids", "values", val)
                      : json_pack("{s:{s:O}}", "term", field, val);
        else if (json_is_array(val) && (!flipped || !strcmp(op, "hasIntersection"))) {
            size_t i;
            json_t *x;
            json_array_foreach(val, i, x) if (!scalar(x)) return unsupported(
                err, "a list holding a list or object in", op);
            if (!json_array_size(val)) { /* nothing is in an empty list */
                out->t.c = 0;
                out->f.q = json_pack("{s:{s:s}}", "exists", "field", field);
                return out->f.q ? CDN_OK : nomem(err);
            }
            t = is_id ? json_pack("{s:{s:O}}", "ids", "values", val)
                      : json_pack("{s:{s:O}}", "terms", field, val);
        } else
            return unsupported(err, "a membership test of this shape in", op);
    } else
        return unsupported(err, "the operator", op);
    if (!t)
        return nomem(err);
    json_t *f = known_not(field, json_incref(t));
    if (!f) {
        json_decref(t);
        return nomem(err);
    }
    int ne = !strcmp(op, "ne");
    out->t.q = ne ? f : t;
    out->f.q = ne ? t : f;
    return CDN_OK;
}

/* Combines sides: all (AND) or any (OR), folding constants. Steals the queries. */
static int combine(side_t *s, size_t n, int all, side_t *out, cdn_err_t *err)
{
    json_t *list = json_array();
    int rc = list ? CDN_OK : nomem(err);
    out->q = NULL;
    out->c = all; /* the empty AND is true, the empty OR false */
    for (size_t i = 0; i < n; i++) {
        if (!s[i].q) {
            if (s[i].c != all) { /* a false in an AND, a true in an OR decides it */
                json_decref(list);
                list = NULL;
                out->c = s[i].c;
                for (size_t j = 0; j < n; j++)
                    json_decref(s[j].q), s[j].q = NULL;
                return rc;
            }
            continue;
        }
        if (list && json_array_append_new(list, s[i].q))
            rc = nomem(err);
        s[i].q = NULL;
    }
    if (rc || !list) {
        json_decref(list);
        return rc;
    }
    if (json_array_size(list) == 1) {
        out->q = json_incref(json_array_get(list, 0));
        json_decref(list);
    } else if (json_array_size(list) > 1) {
        out->q =
            all ? json_pack("{s:{s:o}}", "bool", "filter", list)
                : json_pack("{s:{s:o, s:i}}", "bool", "should", list, "minimum_should_match", 1);
        if (!out->q)
            return nomem(err);
    } else
        json_decref(list);
    return CDN_OK;
}

static int node(const json_t *o, int depth, tv_t *out, cdn_err_t *err);

static int logic(const char *op, const json_t *args, int depth, tv_t *out, cdn_err_t *err)
{
    size_t n = json_array_size(args), i;
    if (!strcmp(op, "not")) {
        if (n != 1)
            return unsupported(err, "a \"not\" without one operand:", op);
        tv_t v = {0};
        int rc = node(json_array_get(args, 0), depth + 1, &v, err);
        if (rc)
            return rc;
        out->t = v.f;
        out->f = v.t;
        return CDN_OK;
    }
    int all = !strcmp(op, "and");
    if (n < 1)
        return unsupported(err, "an empty", op);
    tv_t *v = cdn_calloc(n, sizeof *v);
    side_t *ts = cdn_calloc(n, sizeof *ts), *fs = cdn_calloc(n, sizeof *fs);
    int rc = v && ts && fs ? CDN_OK : nomem(err);
    for (i = 0; rc == CDN_OK && i < n; i++)
        rc = node(json_array_get(args, i), depth + 1, &v[i], err);
    if (rc == CDN_OK) {
        for (i = 0; i < n; i++) {
            ts[i] = v[i].t;
            fs[i] = v[i].f;
            v[i].t.q = v[i].f.q = NULL;
        }
        /* AND is true where all are, false where any is; OR the other way round. */
        rc = combine(ts, n, all, &out->t, err);
        if (rc == CDN_OK)
            rc = combine(fs, n, !all, &out->f, err);
        for (i = 0; i < n; i++)
            json_decref(ts[i].q), json_decref(fs[i].q);
    }
    for (i = 0; v && i < n; i++)
        tv_free(&v[i]);
    cdn_free(v);
    cdn_free(ts);
    cdn_free(fs);
    return rc;
}

/* One operand: {"expression": {"operator", "operands"}}, or a lone {"value": bool}. */
static int node(const json_t *o, int depth, tv_t *out, cdn_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (depth > PDP_FILTER_DEPTH)
        return cdn_err_set(err, CDN_ERR_UNSUPPORTED,
                           "the authorizer's plan nests deeper than %d (nothing is read)",
                           PDP_FILTER_DEPTH);
    const json_t *val = json_object_get(o, "value");
    if (json_is_boolean(val)) {
        out->t.c = json_is_true(val);
        out->f.c = !out->t.c;
        return CDN_OK;
    }
    const json_t *e = json_object_get(o, "expression");
    const char *op = json_string_value(json_object_get(e, "operator"));
    const json_t *args = json_object_get(e, "operands");
    if (!op || !json_is_array(args))
        return unsupported(err, "an operand that is not an expression:",
                           json_object_get(o, "variable") ? "a bare variable" : "?");
    if (!strcmp(op, "and") || !strcmp(op, "or") || !strcmp(op, "not"))
        return logic(op, args, depth, out, err);
    if (json_array_size(args) != 2)
        return unsupported(err, "an operator without two operands:", op);
    return leaf(op, json_array_get(args, 0), json_array_get(args, 1), out, err);
}

static int finish(side_t t, pdp_kind_t *kind, char **filter_json, cdn_err_t *err)
{
    if (!t.q) {
        *kind = t.c ? PDP_ALL : PDP_NONE;
        return CDN_OK;
    }
    char *s = json_dumps(t.q, JSON_COMPACT);
    json_decref(t.q);
    if (!s)
        return nomem(err);
    *filter_json = cdn_strdup(s);
    free(s);
    *kind = PDP_FILTER;
    return *filter_json ? CDN_OK : nomem(err);
}

int pdp_plan_filter(const char *plan_json, size_t len, pdp_kind_t *kind, char **filter_json,
                    cdn_err_t *err)
{
    json_t *j = json_loadb(plan_json, len, 0, NULL);
    const json_t *f = json_object_get(j, "filter");
    const char *k = json_string_value(json_object_get(f, "kind"));
    int rc = CDN_OK;
    *filter_json = NULL;
    if (!k)
        rc = cdn_err_set(err, CDN_ERR_UNAVAILABLE,
                         "the authorizer answered without filter.kind (is it Cerbos's "
                         "/api/plan/resources?)");
    else if (!strcmp(k, "KIND_ALWAYS_ALLOWED"))
        *kind = PDP_ALL;
    else if (!strcmp(k, "KIND_ALWAYS_DENIED"))
        *kind = PDP_NONE;
    else if (!strcmp(k, "KIND_CONDITIONAL")) {
        tv_t v;
        rc = node(json_object_get(f, "condition"), 0, &v, err);
        if (rc == CDN_OK) {
            json_decref(v.f.q);
            rc = finish(v.t, kind, filter_json, err);
        }
    } else
        rc = cdn_err_set(err, CDN_ERR_UNAVAILABLE, "the authorizer answered filter.kind \"%.40s\"",
                         k);
    json_decref(j);
    return rc;
}

int pdp_opa_answer(const char *json, size_t len, pdp_kind_t *kind, char **filter_json,
                   cdn_err_t *err)
{
    json_t *j = json_loadb(json, len, 0, NULL);
    const json_t *r = json_object_get(j, "result"), *allow, *f;
    int rc = CDN_OK;
    *filter_json = NULL;
    if (!json_is_object(j))
        rc = cdn_err_set(err, CDN_ERR_UNAVAILABLE, "the authorizer's answer is not a JSON object");
    else if (!r) /* undefined for this input: no rule allowed it */
        *kind = PDP_NONE;
    else if (json_is_boolean(r))
        *kind = json_is_true(r) ? PDP_ALL : PDP_NONE;
    else if (json_is_object(r) && json_is_boolean(allow = json_object_get(r, "allow"))) {
        f = json_object_get(r, "filter");
        if (!json_is_true(allow))
            *kind = PDP_NONE;
        else if (!f || json_is_null(f))
            *kind = PDP_ALL;
        else if (!json_is_object(f))
            rc = cdn_err_set(err, CDN_ERR_UNAVAILABLE,
                             "the authorizer's result.filter is not a query object");
        else
            rc = finish((side_t){json_incref((json_t *)f), 0}, kind, filter_json, err);
    } else
        rc = cdn_err_set(err, CDN_ERR_UNAVAILABLE,
                         "the authorizer's result is neither a boolean nor {\"allow\": bool, "
                         "\"filter\": {...}}");
    json_decref(j);
    return rc;
}
