/* v1_openapi.c: GET /v1/openapi.json, the OpenAPI description of the cordon API: the bytes of
 * docs/api/openapi.json as the build embedded them, so the server reads no file to answer.
 * Relies on http/v1.h and the array that scripts/embed-file.sh writes into
 * build/$(MODE)/gen/openapi.c. */
#include "http/es.h"
#include "http/v1.h"

void v1_openapi(http_ctx_t *ctx, http_req_t *req, http_resp_t *resp)
{
    (void)ctx;
    (void)req;
    resp->body.len = 0;
    if (cdn_buf_append(&resp->body, v1_openapi_json, v1_openapi_json_len) != 0) {
        es_error(resp, 503, "circuit_breaking_exception", "out of memory");
        return;
    }
    resp->status = 200;
}
