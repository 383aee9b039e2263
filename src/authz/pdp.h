/* pdp.h: outside policy decision points (docs/internals/pdp.md). A collection may delegate
 * the decision of which of its chunks a subject reads to a named authorizer: a Cerbos server
 * (its PlanResources API) or any service answering in the shape of OPA's Data API. The answer
 * is one of: every chunk, none, or a filter over the chunks' metadata (an Elasticsearch query
 * object the search applies before it ranks, beside the native ACL: an authorizer narrows
 * what the model allows, never widens it). Answers are cached for the authorizer's ttl_ms;
 * a service that is down, slow (timeout_ms) or answers what cannot be read gives
 * CDN_ERR_UNAVAILABLE: fail closed.
 * Relies on base/httpc (libcurl) and jansson. Thread-safe. */
#ifndef CDN_AUTHZ_PDP_H
#define CDN_AUTHZ_PDP_H

#include "base/err.h"

#include <stddef.h>
#include <stdint.h>

#define PDP_MAX 16                   /* authorizers configured on one handle */
#define PDP_NAME_MAX 63              /* [a-z0-9_-], 1..63 bytes */
#define PDP_URL_MAX 1024             /* bytes of a base URL */
#define PDP_CACHE_MAX 4096           /* cached answers, all authorizers together */
#define PDP_ANSWER_MAX (1024 * 1024) /* bytes of a service's answer */
#define PDP_FILTER_DEPTH 32          /* nesting of a plan's expressions */

typedef struct pdp pdp_t;

typedef enum pdp_kind {
    PDP_ALL = 1,    /* every chunk the model allows */
    PDP_NONE = 2,   /* none */
    PDP_FILTER = 3, /* those matching filter_json */
} pdp_kind_t;

/* Who asks: the subject of the model and what the model says of it. */
typedef struct pdp_input {
    const char *subject_id;
    const char *const *roles; /* role names (without "role:") */
    size_t n_roles;
    const char *const *groups; /* group names (without "group:") */
    size_t n_groups;
    const char *const *tenants;
    size_t n_tenants;
    const char *attrs_json; /* the subject's attributes (an object), or NULL */
    const char *collection; /* a collection's chunks (pdp_decide) ... */
    const char *action;     /* "read", or the action asked of resource */
    /* ... or one resource "type:id" of is-authorized (pdp_decide: PDP_ALL allowed, PDP_NONE
     * not), with its attributes and the request's context (objects, or NULL). */
    const char *resource;
    const char *resource_attrs_json;
    const char *context_json;
} pdp_input_t;

typedef struct pdp_answer {
    pdp_kind_t kind;
    char *filter_json; /* PDP_FILTER: owned, free with pdp_answer_free */
    int cached;        /* 1: from the cache */
    uint64_t age_ms;   /* how old the answer is (0 when just asked) */
    uint64_t ttl_ms;   /* the authorizer's cache lifetime */
} pdp_answer_t;

typedef struct pdp_stats {
    char name[PDP_NAME_MAX + 1];
    char kind[8];                       /* "cerbos" or "opa" */
    uint64_t allowed, denied, filtered; /* answers of each kind the service gave */
    uint64_t cached;                    /* answers served from the cache */
    uint64_t unavailable;               /* down, HTTP error, unreadable answer */
    uint64_t timeouts;                  /* no answer within timeout_ms */
} pdp_stats_t;

/* Parses the authorizers of config_json (a JSON array; NULL or "" = none; docs/internals/
 * pdp.md lists the keys) into *out. CDN_ERR_INVALID names the entry and key at fault. */
int pdp_open(const char *config_json, pdp_t **out, cdn_err_t *err);
void pdp_close(pdp_t *p);
/* Whether name is configured. */
int pdp_has(const pdp_t *p, const char *name);
/* Asks authorizer name which chunks of in->collection in->subject_id may read, or (with
 * in->resource) whether it may do in->action on that resource: Cerbos's PlanResources or
 * CheckResources, the OPA-shaped service's one path either way (from the cache while its
 * answer is younger than ttl_ms). CDN_ERR_UNAVAILABLE: the service failed or is not
 * configured (err says how; nothing may be read, nothing is allowed). */
int pdp_decide(pdp_t *p, const char *name, const pdp_input_t *in, pdp_answer_t *out,
               cdn_err_t *err);
void pdp_answer_free(pdp_answer_t *a);
/* The counters of the i-th authorizer (0 <= i < pdp_count). */
size_t pdp_count(const pdp_t *p);
void pdp_stats_get(pdp_t *p, size_t i, pdp_stats_t *out);

/* ---- answers to filters (pdp_plan.c) ---- */

/* Turns Cerbos's PlanResources "filter" object into *kind and (PDP_FILTER) *filter_json, an
 * Elasticsearch query object over the metadata fields the plan's request.resource.attr.X
 * variables name (request.resource.id: the chunk id). Three-valued like the plan's SQL
 * adapters: a comparison of a missing attribute is neither true nor false, so `not` never
 * admits a chunk for lacking an attribute. CDN_ERR_UNSUPPORTED names an operator or
 * operand this cannot express (the caller fails closed). */
int pdp_plan_filter(const char *plan_json, size_t len, pdp_kind_t *kind, char **filter_json,
                    cdn_err_t *err);
/* Reads an OPA-shaped answer {"result": true | false | {"allow": bool, "filter": {query}}}
 * (no result: the policy is undefined for this input, which denies). */
int pdp_opa_answer(const char *json, size_t len, pdp_kind_t *kind, char **filter_json,
                   cdn_err_t *err);

#endif
