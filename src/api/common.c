/* common.c: what every file of the public API uses: error conversion and the checks of who
 * is asking (a subject, and the caller and request id the audit records).
 * Relies on base/err and base/utf8. */
#include "api/api.h"
#include "base/utf8.h"

#include <string.h>

int api_ret(int rc, const cdn_err_t *in, cordon_error *err)
{
    if (err) {
        const char *m = rc && in->msg[0] ? in->msg : rc ? cdn_strerror(rc) : "";
        err->code = rc;
        memcpy(err->message, m, strlen(m) + 1);
    }
    return rc;
}

int api_check_subject(const cordon_subject *s, cdn_err_t *e)
{
    if (!s)
        return cdn_err_set(e, CDN_ERR_INVALID, "a subject is required: say who is asking");
    if (!s->subject_id && s->n_principals && !s->principals)
        return cdn_err_set(e, CDN_ERR_INVALID, "subject principals is NULL");
    return api_audit_check(s->caller, s->request_id, e);
}

/* caller and request_id: short UTF-8 without controls, as they land in JSON records. */
static int check_label(const char *what, const char *s, cdn_err_t *e)
{
    size_t at;
    if (!s)
        return CDN_OK;
    size_t n = strlen(s);
    if (n > CORDON_REQUEST_ID_MAX)
        return cdn_err_set(e, CDN_ERR_LIMIT, "%s is %zu bytes; the limit is %d", what, n,
                           CORDON_REQUEST_ID_MAX);
    if (!cdn_utf8_valid(s, n, &at) || cdn_utf8_has_control(s, n, &at))
        return cdn_err_set(e, CDN_ERR_INVALID, "%s must be UTF-8 without control characters", what);
    return CDN_OK;
}

int api_audit_check(const char *caller, const char *request_id, cdn_err_t *e)
{
    int rc = check_label("caller", caller, e);
    return rc ? rc : check_label("request_id", request_id, e);
}
