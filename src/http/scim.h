/* scim.h: SCIM 2.0 provisioning (RFC 7643, RFC 7644) of the permission model: identity
 * providers create, replace, patch and delete users and groups, which become subjects and
 * groups of the model (docs/api/scim.md). scim.c: what the routes share (errors, bodies, the
 * model as one document, filters, lists, PATCH paths) and the discovery routes;
 * scim_users.c and scim_groups.c: the resources. Relies on http/http.h, http/es.h and jansson. */
#ifndef CDN_HTTP_SCIM_H
#define CDN_HTTP_SCIM_H

#include <jansson.h>

#include "http/http.h"

#define SCIM_USER_SCHEMA "urn:ietf:params:scim:schemas:core:2.0:User"
#define SCIM_GROUP_SCHEMA "urn:ietf:params:scim:schemas:core:2.0:Group"
#define SCIM_ENTERPRISE_SCHEMA "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
#define SCIM_LIST_SCHEMA "urn:ietf:params:scim:api:messages:2.0:ListResponse"
#define SCIM_PATCH_SCHEMA "urn:ietf:params:scim:api:messages:2.0:PatchOp"
#define SCIM_ERROR_SCHEMA "urn:ietf:params:scim:api:messages:2.0:Error"
#define SCIM_PREFIX "/scim/v2"
#define SCIM_PAGE_MAX 1000      /* resources per list page (count) */
#define SCIM_PATCH_OPS_MAX 1000 /* Operations per PATCH */

/* ---- scim.c ---- */

/* Fills resp with a SCIM error: status, scimType (NULL for none) and a detail sentence. */
void scim_error(http_resp_t *resp, int status, const char *scim_type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Answers j (stolen) with status and the SCIM media type. */
void scim_reply(http_resp_t *resp, int status, json_t *j);
/* 0 when the caller may provision (an admin key, or manage on the model), else fills resp. */
int scim_gate(http_ctx_t *ctx, const http_req_t *req, http_resp_t *resp);
/* The request's JSON object body (required), or NULL with resp filled (400 invalidSyntax). */
json_t *scim_body(const http_req_t *req, http_resp_t *resp);
/* The whole model (cordon_model_export) parsed, or NULL with resp filled (500). */
json_t *scim_model(http_ctx_t *ctx, http_resp_t *resp);
/* Applies the model operations ops (stolen) as one change; 0, or fills resp naming the
 * failure (then nothing changed). */
int scim_apply(http_ctx_t *ctx, json_t *ops, http_resp_t *resp);
/* A JSON string's value, "" for anything else. */
const char *scim_jstr(json_t *v);
/* The entity of the exported model's list ("subjects" or "groups") whose id is id, or NULL. */
json_t *scim_find(json_t *doc, const char *list, const char *id);
/* The SCIM attributes an entity keeps (its attributes' "scim"), or NULL. */
json_t *scim_attrs(json_t *entity);
/* The string attribute attr of the entity's SCIM attributes, else its id. */
const char *scim_attr_or_id(json_t *entity, const char *attr);
/* A resource's meta: resourceType type ("User", "Group"), created and lastModified as kept,
 * location. */
json_t *scim_meta(json_t *entity, const char *type, const char *id);
/* The attributes to store for an entity whose SCIM attributes become res (borrowed) less the
 * keys drop lists: old's attributes (old may be NULL) with "scim" and "scim_meta" replaced. */
json_t *scim_stored(json_t *old, json_t *res, const char *const *drop);
/* Adds the Location header of a resource just created ("Users" or "Groups"). */
void scim_location(http_resp_t *resp, const char *endpoint, const char *id);
/* Applies every operation of ops (from scim_patch_ops) to res; 0, or fills resp. */
int scim_patch_all(json_t *res, json_t *ops, http_resp_t *resp);
/* DELETE of the entity id of list: op ("delete_subject", "delete_group") and 204, or 404. */
void scim_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp, const char *list,
                 const char *op);

/* The member of object o named key without regard to case, or NULL. */
json_t *scim_get_ci(json_t *o, const char *key);
/* The time now as RFC 3339 UTC, into out (at least 32 bytes). */
void scim_now(char *out, size_t cap);

/* A parsed filter: `attr eq "value"` (the one form identity providers send when they look a
 * resource up). */
typedef struct scim_filter {
    char attr[64];
    char value[512];
    int present; /* a filter was given */
} scim_filter_t;
/* Reads the request's filter argument; 0, or fills resp (400 invalidFilter). allowed lists the
 * attributes it may name (NULL-terminated, compared without case). */
int scim_filter_read(const http_req_t *req, const char *const *allowed, scim_filter_t *f,
                     http_resp_t *resp);
/* Pages resources (an array, stolen, already filtered and sorted) by startIndex and count and
 * answers the ListResponse. */
void scim_list_reply(const http_req_t *req, json_t *resources, http_resp_t *resp);

/* Applies one PATCH operation to the resource object res (a user's or group's stored
 * attributes): op "add", "replace" or "remove" (any case), path (NULL: value is an object of
 * attributes) in the forms `attr`, `attr.sub`, `urn:...:attr` and `attr[sub eq "v"]` with an
 * optional `.sub`. 0, or fills resp (400 invalidPath, invalidValue, noTarget). */
int scim_patch_apply(json_t *res, const char *op, const char *path, json_t *value,
                     http_resp_t *resp);
/* Reads a PATCH body's Operations, checking its shape; the array (borrowed from body) or NULL
 * with resp filled. */
json_t *scim_patch_ops(json_t *body, http_resp_t *resp);

void scim_service_provider_config(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void scim_schemas(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void scim_resource_types(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

/* ---- scim_users.c ---- */
void scim_users_list(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void scim_user_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void scim_user_create(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void scim_user_replace(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void scim_user_patch(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void scim_user_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

/* ---- scim_groups.c ---- */
void scim_groups_list(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void scim_group_get(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void scim_group_create(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void scim_group_replace(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void scim_group_patch(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);
void scim_group_delete(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp);

#endif
