/* pdp.c: the authorizers of a handle, their calls and their cache (pdp.h).
 *
 * A question goes to the service as one JSON body (Cerbos: POST <url>/api/plan/resources;
 * OPA: POST <url>/v1/data/<path> with {"input": ...}); the body is also the cache key, so an
 * answer is reused only for exactly the same question (the same subject, roles, groups,
 * attributes and collection): a change in the model changes the question. The cache holds
 * at most PDP_CACHE_MAX answers; when full, expired ones go first, then the oldest.
 * Relies on base/httpc, base/strmap and jansson. */
#include "authz/pdp.h"
#include "base/clock.h"
#include "base/httpc.h"
#include "base/mem.h"
#include "base/strmap.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define PDP_TIMEOUT_DEFAULT_MS 500
#define PDP_TTL_DEFAULT_MS 5000
#define PDP_TIMEOUT_MAX_MS 60000
#define PDP_TTL_MAX_MS 86400000

typedef enum { KIND_CERBOS = 1, KIND_OPA = 2 } svc_kind_t;

typedef struct authorizer {
    char name[PDP_NAME_MAX + 1];
    svc_kind_t kind;
    char *endpoint;       /* the full URL asked (Cerbos: of PlanResources) */
    char *check_endpoint; /* the URL asked about one resource (Cerbos: CheckResources) */
    char *resource_kind;  /* Cerbos: resource.kind */
    char *policy_version; /* Cerbos: resource.policyVersion */
    char *default_role;   /* Cerbos: a role every principal carries (Cerbos needs one) */
    unsigned timeout_ms, ttl_ms;
    _Atomic uint64_t allowed, denied, filtered, cached, unavailable, timeouts;
} authorizer_t;

typedef struct entry {
    char *key; /* NULL: free slot */
    uint64_t at_ns;
    pdp_kind_t kind;
    char *filter;
} entry_t;

struct pdp {
    authorizer_t *a;
    size_t n;
    pthread_mutex_t lock; /* the cache */
    cdn_strmap_t map;     /* key -> slot */
    entry_t *slots;
    size_t used;
};

static void authorizer_free(authorizer_t *a)
{
    cdn_free(a->endpoint);
    cdn_free(a->check_endpoint);
    cdn_free(a->resource_kind);
    cdn_free(a->policy_version);
    cdn_free(a->default_role);
}

static int bad(cdn_err_t *err, size_t i, const char *msg, const char *key)
{
    return cdn_err_set(err, CDN_ERR_INVALID, "authorizers[%zu]: %s%s%s", i, msg, key ? " " : "",
                       key ? key : "");
}

static int str_key(const json_t *o, const char *key, const char *dflt, char **out)
{
    const json_t *v = json_object_get(o, key);
    const char *s = v ? json_string_value(v) : dflt;
    if (!s || !s[0] || strlen(s) > PDP_URL_MAX)
        return -1;
    *out = cdn_strdup(s);
    return *out ? 0 : -1;
}

static int ms_key(const json_t *o, const char *key, unsigned dflt, unsigned lo, unsigned hi,
                  unsigned *out)
{
    const json_t *v = json_object_get(o, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return -1;
    *out = (unsigned)json_integer_value(v);
    return 0;
}

static int name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (!n || n > PDP_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
              s[i] == '-'))
            return 0;
    return 1;
}

static int parse_one(const json_t *o, size_t i, authorizer_t *a, cdn_err_t *err)
{
    static const char *const known[] = {"name",         "kind",          "url",
                                        "path",         "resource_kind", "policy_version",
                                        "default_role", "timeout_ms",    "ttl_ms"};
    const char *key, *name, *kind, *url, *path = NULL;
    const json_t *v;
    if (!json_is_object(o))
        return bad(err, i, "expected an object", NULL);
    json_object_foreach((json_t *)o, key, v)
    {
        size_t k = 0;
        while (k < sizeof known / sizeof *known && strcmp(known[k], key))
            k++;
        if (k == sizeof known / sizeof *known)
            return bad(err, i, "unknown key", key);
    }
    name = json_string_value(json_object_get(o, "name"));
    kind = json_string_value(json_object_get(o, "kind"));
    url = json_string_value(json_object_get(o, "url"));
    if (!name_ok(name))
        return bad(err, i, "name must be 1 to 63 of [a-z0-9_-]", NULL);
    memcpy(a->name, name, strlen(name) + 1);
    if (!kind || (strcmp(kind, "cerbos") && strcmp(kind, "opa")))
        return bad(err, i, "kind must be \"cerbos\" or \"opa\"", NULL);
    a->kind = !strcmp(kind, "cerbos") ? KIND_CERBOS : KIND_OPA;
    if (!url || strlen(url) > PDP_URL_MAX ||
        (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
        return bad(err, i, "url must be an http:// or https:// address of at most 1024 bytes",
                   NULL);
    if (a->kind == KIND_OPA) {
        path = json_string_value(json_object_get(o, "path"));
        if (!path || !path[0] || strlen(path) > 256 ||
            strspn(path, "abcdefghijklmnopqrstuvwxyz"
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789_/-") != strlen(path))
            return bad(err, i,
                       "an opa authorizer needs path, the rule's package path as OPA's Data API "
                       "names it (e.g. \"cordon/read\")",
                       NULL);
        if (json_object_get(o, "resource_kind") || json_object_get(o, "policy_version") ||
            json_object_get(o, "default_role"))
            return bad(err, i, "resource_kind, policy_version and default_role are Cerbos keys",
                       NULL);
    } else if (json_object_get(o, "path"))
        return bad(err, i, "path is an opa key", NULL);
    size_t ulen = strlen(url);
    while (ulen && url[ulen - 1] == '/')
        ulen--;
    size_t n = ulen + (path ? strlen(path) : 0) + 32;
    if (!(a->endpoint = cdn_malloc(n)) || !(a->check_endpoint = cdn_malloc(n)))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    if (a->kind == KIND_CERBOS) {
        snprintf(a->endpoint, n, "%.*s/api/plan/resources", (int)ulen, url);
        snprintf(a->check_endpoint, n, "%.*s/api/check/resources", (int)ulen, url);
    } else {
        snprintf(a->endpoint, n, "%.*s/v1/data/%s", (int)ulen, url, path);
        snprintf(a->check_endpoint, n, "%s", a->endpoint);
    }
    if (a->kind == KIND_CERBOS && (str_key(o, "resource_kind", "chunk", &a->resource_kind) ||
                                   str_key(o, "policy_version", "default", &a->policy_version) ||
                                   str_key(o, "default_role", "user", &a->default_role)))
        return bad(err, i,
                   "resource_kind, policy_version and default_role must be non-empty strings",
                   NULL);
    if (ms_key(o, "timeout_ms", PDP_TIMEOUT_DEFAULT_MS, 1, PDP_TIMEOUT_MAX_MS, &a->timeout_ms))
        return bad(err, i, "timeout_ms must be an integer from 1 to 60000", NULL);
    if (ms_key(o, "ttl_ms", PDP_TTL_DEFAULT_MS, 0, PDP_TTL_MAX_MS, &a->ttl_ms))
        return bad(err, i, "ttl_ms must be an integer from 0 (no cache) to 86400000", NULL);
    return CDN_OK;
}

int pdp_open(const char *config_json, pdp_t **out, cdn_err_t *err)
{
    json_error_t je;
    json_t *j = NULL;
    size_t i;
    int rc = CDN_OK;
    pdp_t *p = cdn_calloc(1, sizeof *p);
    *out = NULL;
    if (!p)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&p->lock, NULL);
    cdn_strmap_init(&p->map);
    if (config_json && config_json[0]) {
        j = json_loads(config_json, 0, &je);
        if (!json_is_array(j))
            rc = cdn_err_set(err, CDN_ERR_INVALID,
                             "authorizers: expected a JSON array of objects (%s at line %d)",
                             j ? "not an array" : je.text, je.line);
        else if (json_array_size(j) > PDP_MAX)
            rc = cdn_err_set(err, CDN_ERR_LIMIT, "authorizers: at most %d", PDP_MAX);
        else if (json_array_size(j) && !(p->a = cdn_calloc(json_array_size(j), sizeof *p->a)))
            rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
        for (i = 0; rc == CDN_OK && i < json_array_size(j); i++) {
            rc = parse_one(json_array_get(j, i), i, &p->a[i], err);
            p->n = i + 1;
            for (size_t k = 0; rc == CDN_OK && k < i; k++)
                if (!strcmp(p->a[k].name, p->a[i].name))
                    rc = bad(err, i, "a second authorizer named", p->a[i].name);
        }
    }
    json_decref(j);
    if (rc == CDN_OK && !(p->slots = cdn_calloc(PDP_CACHE_MAX, sizeof *p->slots)))
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    if (rc) {
        pdp_close(p);
        return rc;
    }
    *out = p;
    return CDN_OK;
}

void pdp_close(pdp_t *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        authorizer_free(&p->a[i]);
    cdn_free(p->a);
    for (size_t i = 0; p->slots && i < PDP_CACHE_MAX; i++) {
        cdn_free(p->slots[i].key);
        cdn_free(p->slots[i].filter);
    }
    cdn_free(p->slots);
    cdn_strmap_free(&p->map);
    pthread_mutex_destroy(&p->lock);
    cdn_free(p);
}

static authorizer_t *find(const pdp_t *p, const char *name)
{
    for (size_t i = 0; p && name && i < p->n; i++)
        if (!strcmp(p->a[i].name, name))
            return &p->a[i];
    return NULL;
}

int pdp_has(const pdp_t *p, const char *name)
{
    return find(p, name) != NULL;
}

size_t pdp_count(const pdp_t *p)
{
    return p ? p->n : 0;
}

void pdp_stats_get(pdp_t *p, size_t i, pdp_stats_t *out)
{
    authorizer_t *a = &p->a[i];
    memset(out, 0, sizeof *out);
    memcpy(out->name, a->name, sizeof out->name);
    snprintf(out->kind, sizeof out->kind, "%s", a->kind == KIND_CERBOS ? "cerbos" : "opa");
    out->allowed = atomic_load(&a->allowed);
    out->denied = atomic_load(&a->denied);
    out->filtered = atomic_load(&a->filtered);
    out->cached = atomic_load(&a->cached);
    out->unavailable = atomic_load(&a->unavailable);
    out->timeouts = atomic_load(&a->timeouts);
}

void pdp_answer_free(pdp_answer_t *a)
{
    if (a) {
        cdn_free(a->filter_json);
        a->filter_json = NULL;
    }
}

static json_t *names(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_string(v[i]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *object_of(const char *text)
{
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        o = json_object();
    }
    return o;
}

/* The question as the service reads it. */
static char *question(const authorizer_t *a, const pdp_input_t *in)
{
    json_t *attrs = object_of(in->attrs_json), *q;
    const char *colon = in->resource ? strchr(in->resource, ':') : NULL;
    if (a->kind == KIND_CERBOS) {
        /* Groups and tenants ride in the principal's attributes (with the request's context
         * when one resource is asked about); the model's roles, with the default role every
         * principal carries, are its roles. */
        json_t *roles = names(in->roles, in->n_roles);
        if (roles)
            json_array_insert_new(roles, 0, json_string(a->default_role));
        json_object_set_new(attrs, "groups", names(in->groups, in->n_groups));
        json_object_set_new(attrs, "tenants", names(in->tenants, in->n_tenants));
        if (!in->resource) {
            json_object_set_new(attrs, "collection", json_string(in->collection));
            q = json_pack("{s:s, s:s, s:{s:s, s:o, s:o}, s:{s:s, s:s}}", "requestId", "cordon",
                          "action", in->action, "principal", "id", in->subject_id, "roles", roles,
                          "attr", attrs, "resource", "kind", a->resource_kind, "policyVersion",
                          a->policy_version);
        } else {
            json_object_set_new(attrs, "context", object_of(in->context_json));
            q = json_pack("{s:s, s:{s:s, s:o, s:o}, s:[{s:[s], s:{s:s%, s:s, s:s, s:o}}]}",
                          "requestId", "cordon", "principal", "id", in->subject_id, "roles", roles,
                          "attr", attrs, "resources", "actions", in->action, "resource", "kind",
                          in->resource, (size_t)(colon - in->resource), "id", colon + 1,
                          "policyVersion", a->policy_version, "attr",
                          object_of(in->resource_attrs_json));
        }
    } else {
        json_t *subject =
            json_pack("{s:s, s:o, s:o, s:o, s:o}", "id", in->subject_id, "roles",
                      names(in->roles, in->n_roles), "groups", names(in->groups, in->n_groups),
                      "tenants", names(in->tenants, in->n_tenants), "attributes", attrs);
        if (!in->resource)
            q = json_pack("{s:{s:o, s:s, s:s}}", "input", "subject", subject, "action", in->action,
                          "collection", in->collection);
        else
            q = json_pack("{s:{s:o, s:s, s:{s:s%, s:s, s:o}, s:o}}", "input", "subject", subject,
                          "action", in->action, "resource", "type", in->resource,
                          (size_t)(colon - in->resource), "id", colon + 1, "attributes",
                          object_of(in->resource_attrs_json), "context",
                          object_of(in->context_json));
    }
    char *s = q ? json_dumps(q, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(q);
    return s;
}

/* Cerbos's CheckResources answer for one resource and action. */
static int check_answer(const char *json, size_t len, const char *action, pdp_kind_t *kind,
                        cdn_err_t *err)
{
    json_t *j = json_loadb(json, len, 0, NULL);
    const char *effect = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(j, "results"), 0), "actions"), action));
    int rc = CDN_OK;
    if (effect && !strcmp(effect, "EFFECT_ALLOW"))
        *kind = PDP_ALL;
    else if (effect && !strcmp(effect, "EFFECT_DENY"))
        *kind = PDP_NONE;
    else
        rc = cdn_err_set(err, CDN_ERR_UNAVAILABLE,
                         "the authorizer's answer has no results[0].actions.%.60s (is it "
                         "Cerbos's /api/check/resources?)",
                         action);
    json_decref(j);
    return rc;
}

static uint64_t ms_since(uint64_t at_ns)
{
    return (cdn_clock_ns() - at_ns) / 1000000;
}

/* A fresh cached answer for key into out (filter copied); 1 if found. Under p->lock. */
static int cache_get(pdp_t *p, const authorizer_t *a, const char *key, pdp_answer_t *out)
{
    uint32_t slot;
    if (cdn_strmap_get(&p->map, key, strlen(key), &slot))
        return 0;
    entry_t *e = &p->slots[slot];
    uint64_t age = ms_since(e->at_ns);
    if (age >= a->ttl_ms)
        return 0;
    if (e->filter && !(out->filter_json = cdn_strdup(e->filter)))
        return 0; /* out of memory: ask again */
    out->kind = e->kind;
    out->cached = 1;
    out->age_ms = age;
    return 1;
}

static void slot_clear(pdp_t *p, size_t i)
{
    entry_t *e = &p->slots[i];
    if (!e->key)
        return;
    cdn_strmap_del(&p->map, e->key, strlen(e->key));
    cdn_free(e->key);
    cdn_free(e->filter);
    memset(e, 0, sizeof *e);
    p->used--;
}

/* Keeps an answer (best effort: a failure only means asking again). Under p->lock. */
static void cache_put(pdp_t *p, const char *key, const pdp_answer_t *ans)
{
    uint32_t slot;
    size_t victim = PDP_CACHE_MAX, oldest = PDP_CACHE_MAX;
    if (cdn_strmap_get(&p->map, key, strlen(key), &slot) == CDN_OK)
        slot_clear(p, slot);
    for (size_t i = 0; i < PDP_CACHE_MAX && victim == PDP_CACHE_MAX; i++) {
        if (!p->slots[i].key)
            victim = i;
        else if (oldest == PDP_CACHE_MAX || p->slots[i].at_ns < p->slots[oldest].at_ns)
            oldest = i;
    }
    if (victim == PDP_CACHE_MAX) { /* full: the oldest answer goes */
        victim = oldest;
        slot_clear(p, victim);
    }
    entry_t *e = &p->slots[victim];
    e->key = cdn_strdup(key);
    e->filter = ans->filter_json ? cdn_strdup(ans->filter_json) : NULL;
    if (!e->key || (ans->filter_json && !e->filter) ||
        cdn_strmap_put(&p->map, key, strlen(key), (uint32_t)victim)) {
        cdn_free(e->key);
        cdn_free(e->filter);
        memset(e, 0, sizeof *e);
        return;
    }
    e->kind = ans->kind;
    e->at_ns = cdn_clock_ns();
    p->used++;
}

static int ask(authorizer_t *a, const pdp_input_t *in, const char *body, pdp_answer_t *out,
               cdn_err_t *err)
{
    char what[PDP_NAME_MAX + 32], why[CDN_ERR_MSG_MAX];
    cdn_buf_t answer;
    long status;
    int timed_out, rc;
    snprintf(what, sizeof what, "the authorizer \"%s\"", a->name);
    cdn_httpc_req_t req = {.url = in->resource ? a->check_endpoint : a->endpoint,
                           .body = body,
                           .total_ms = a->timeout_ms,
                           .max_answer = PDP_ANSWER_MAX,
                           .what = what};
    if (cdn_httpc_post(&req, &status, &answer, &timed_out, why, sizeof why)) {
        atomic_fetch_add(timed_out ? &a->timeouts : &a->unavailable, 1);
        cdn_buf_free(&answer);
        return cdn_err_set(err, CDN_ERR_UNAVAILABLE, "%s%s; nothing is read (fail closed)", why,
                           timed_out ? " within its timeout_ms" : "");
    }
    if (status != 200) {
        atomic_fetch_add(&a->unavailable, 1);
        rc = cdn_err_set(err, CDN_ERR_UNAVAILABLE,
                         "%s answered HTTP %ld; nothing is read (fail closed)", what, status);
    } else if (a->kind == KIND_CERBOS && in->resource)
        rc = check_answer(answer.data ? answer.data : "", answer.len, in->action, &out->kind, err);
    else if (a->kind == KIND_CERBOS)
        rc = pdp_plan_filter(answer.data ? answer.data : "", answer.len, &out->kind,
                             &out->filter_json, err);
    else
        rc = pdp_opa_answer(answer.data ? answer.data : "", answer.len, &out->kind,
                            &out->filter_json, err);
    cdn_buf_free(&answer);
    if (rc && status == 200) {
        atomic_fetch_add(&a->unavailable, 1);
        if (rc != CDN_ERR_NOMEM) {
            /* An answer cordon cannot apply is the service's failure as far as the reader
             * goes: nothing is read, and the message says why. */
            cdn_err_t inner = *err;
            rc = cdn_err_set(err, CDN_ERR_UNAVAILABLE, "%s: %s", what, inner.msg);
        }
    } else if (rc == CDN_OK)
        atomic_fetch_add(out->kind == PDP_ALL    ? &a->allowed
                         : out->kind == PDP_NONE ? &a->denied
                                                 : &a->filtered,
                         1);
    return rc;
}

int pdp_decide(pdp_t *p, const char *name, const pdp_input_t *in, pdp_answer_t *out, cdn_err_t *err)
{
    authorizer_t *a = find(p, name);
    memset(out, 0, sizeof *out);
    if (in->resource && !strchr(in->resource, ':'))
        return cdn_err_set(err, CDN_ERR_INVALID, "resource \"%.80s\" is not type:id", in->resource);
    if (!a)
        return cdn_err_set(err, CDN_ERR_UNAVAILABLE,
                           "the authorizer \"%.63s\" is not configured on this handle "
                           "(authorizers); nothing is read, nothing is allowed",
                           name ? name : "");
    out->ttl_ms = a->ttl_ms;
    char *body = question(a, in);
    if (!body)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory asking the authorizer");
    size_t blen = strlen(body), nlen = strlen(a->name);
    char *key = cdn_malloc(nlen + blen + 2);
    int rc = key ? CDN_OK : cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    if (key) {
        memcpy(key, a->name, nlen);
        key[nlen] = '\n';
        memcpy(key + nlen + 1, body, blen + 1);
    }
    if (rc == CDN_OK && a->ttl_ms) {
        pthread_mutex_lock(&p->lock);
        int hit = cache_get(p, a, key, out);
        pthread_mutex_unlock(&p->lock);
        if (hit) {
            atomic_fetch_add(&a->cached, 1);
            goto done;
        }
    }
    if (rc == CDN_OK)
        rc = ask(a, in, body, out, err);
    if (rc == CDN_OK && a->ttl_ms) {
        pthread_mutex_lock(&p->lock);
        cache_put(p, key, out);
        pthread_mutex_unlock(&p->lock);
    }
done:
    cdn_free(key);
    free(body);
    return rc;
}
