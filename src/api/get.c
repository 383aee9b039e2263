/* get.c: the public API's read of one chunk as a subject (cordon_get).
 * Relies on query/search for the permission check and jansson to unpack the stored record. */
#include "api/api.h"
#include "base/mem.h"
#include "query/search.h"
#include "query/write.h"

#include <stdlib.h>
#include <string.h>

/* A new record for chunk id, to be filled by a read. */
static int record_new(const char *id, cordon_record **r, cdn_err_t *e)
{
    if (!(*r = cdn_calloc(1, sizeof **r)) || !((*r)->id = cdn_strdup(id))) {
        cdn_free(*r);
        *r = NULL;
        return cdn_err_set(e, CDN_ERR_NOMEM, "out of memory");
    }
    return CDN_OK;
}

/* Completes a read that returned rc and the stored record obj (released here): fills r from
 * obj and hands it to *out, or frees it. */
static int record_finish(int rc, json_t *obj, cordon_record *r, cordon_record **out, cdn_err_t *e)
{
    if (rc == CDN_OK && (rc = api_fill_record(obj, r)) != 0)
        cdn_err_set(e, rc, "chunk \"%s\" cannot be read: %s", r->id, cdn_strerror(rc));
    if (!r->vector)
        r->dim = 0;
    json_decref(obj);
    if (rc) {
        cordon_record_free(r);
        return rc;
    }
    *out = r;
    return CDN_OK;
}

int cordon_get(cordon_t *db, const char *coll, const cordon_subject *subject, const char *id,
               cordon_record **out, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    cordon_record *r;
    json_t *obj = NULL;
    int rc;
    if (!db || !coll || !out)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_get needs a collection"), &e, err);
    if ((rc = api_check_subject(subject, &e)) != 0 ||
        (rc = write_id_check(id, WRITE_NO_INDEX, &e)) != 0)
        return api_ret(rc, &e, err);
    engine_asker_t who = {subject->subject_id, subject->principals, subject->n_principals};
    cordon_authorizer_info ai;
    char *filter = NULL;
    if ((rc = api_pdp_filter(db, coll, subject, "read", NULL, &filter, &ai, &e)) != 0)
        return api_ret(rc, &e, err);
    if ((rc = record_new(id, &r, &e)) != 0) {
        cdn_free(filter);
        return api_ret(rc, &e, err);
    }
    r->authorizer = ai;
    rc = search_get(db->e, coll, &who, id, filter, &obj, &r->vector, &r->dim, &r->revision, &e);
    cdn_free(filter);
    if (rc == CDN_OK || rc == CDN_ERR_NOT_FOUND) {
        /* Recorded found or not: a probe for a hidden chunk is worth an audit line too. A get
         * the audit cannot record is not answered. */
        cdn_err_t ae = {0, ""};
        uint64_t rev = rc == CDN_OK ? r->revision : cordon_revision(db);
        uint64_t seq = 0;
        int arc = api_audit_get(db, coll, subject, id, rc == CDN_OK, rev, &seq, &ae);
        r->audit_seq = seq;
        if (arc) {
            json_decref(obj);
            cordon_record_free(r);
            return api_ret(arc, &ae, err);
        }
    }
    return api_ret(record_finish(rc, obj, r, out, &e), &e, err);
}

int cordon_exists(cordon_t *db, const char *coll, const char *const *ids, size_t n,
                  unsigned char *out, cordon_error *err)
{
    cdn_err_t e = {0, ""};
    if (!db || !coll || (n && (!ids || !out)))
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_exists needs ids and out"), &e,
                       err);
    if (n > CORDON_BATCH_MAX)
        return api_ret(
            cdn_err_set(&e, CDN_ERR_LIMIT, "%zu ids; the limit is %d", n, CORDON_BATCH_MAX), &e,
            err);
    return api_ret(search_exists(db->e, coll, ids, n, out, &e), &e, err);
}

int cordon_read_stored(cordon_t *db, const char *coll, const char *id, cordon_record **out,
                       cordon_error *err)
{
    cdn_err_t e = {0, ""};
    cordon_record *r;
    json_t *obj = NULL;
    int rc;
    if (!db || !coll || !out)
        return api_ret(cdn_err_set(&e, CDN_ERR_INVALID, "cordon_read_stored needs a collection"),
                       &e, err);
    if ((rc = write_id_check(id, WRITE_NO_INDEX, &e)) != 0)
        return api_ret(rc, &e, err);
    if ((rc = record_new(id, &r, &e)) != 0)
        return api_ret(rc, &e, err);
    r->revision = cordon_revision(db);
    rc = search_record(db->e, coll, id, &obj, &r->vector, &r->dim, &e);
    return api_ret(record_finish(rc, obj, r, out, &e), &e, err);
}
