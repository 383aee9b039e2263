/* fuzz_model.c: any bytes as permission-model operations (one a line) applied to a small
 * model: never a crash or a leak; a refused operation changes nothing; decisions, views and
 * relationship questions are answered; and the model exported, imported and exported again
 * gives the same bytes.
 * Relies on libFuzzer and authz/. */
#include <stdlib.h>
#include <string.h>

#include "authz/authz.h"
#include "base/mem.h"

static const char *const base_ops[] = {
    "{\"op\":\"put_subject\",\"id\":\"alice\"}",
    "{\"op\":\"put_subject\",\"id\":\"bob\"}",
    "{\"op\":\"put_group\",\"id\":\"eng\"}",
    "{\"op\":\"put_group\",\"id\":\"all\"}",
    "{\"op\":\"add_member\",\"group\":\"eng\",\"member\":\"alice\"}",
    "{\"op\":\"add_member\",\"group\":\"all\",\"member\":\"eng\",\"member_kind\":\"group\"}",
    ("{\"op\":\"put_role\",\"id\":\"reader\",\"permissions\":[{\"resource\":\"collection:*\","
     "\"action\":\"search\"}]}"),
    "{\"op\":\"grant\",\"to\":\"all\",\"to_kind\":\"group\",\"role\":\"reader\"}",
};

static char *export_of(authz_model_t *m)
{
    char *doc = NULL;
    cdn_err_t err;
    return authz_export(m, &doc, &err) == CDN_OK ? doc : NULL;
}

static int count_name(void *ctx, const char *name)
{
    (void)name;
    (*(size_t *)ctx)++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    authz_model_t *m, *copy;
    cdn_err_t err;
    char *text = cdn_strndup((const char *)data, size), *line, *end;
    if (!text || authz_model_new(&m, &err))
        abort();
    for (size_t i = 0; i < sizeof base_ops / sizeof *base_ops; i++)
        if (authz_apply(m, base_ops[i], &err))
            abort();
    /* Each line's export after it is the next line's export before it: one export a line. */
    char *before = export_of(m);
    for (line = text; line; line = end ? end + 1 : NULL) {
        if ((end = strchr(line, '\n')) != NULL)
            *end = '\0';
        uint64_t rev = authz_model_revision(m);
        int rc = authz_apply(m, line, &err);
        char *after = export_of(m);
        if (rc && rc != CDN_ERR_NOMEM &&
            (!before || !after || strcmp(before, after) || authz_model_revision(m) != rev))
            abort(); /* a refused operation changed the model */
        cdn_free(before);
        before = after;
    }
    /* One check per input never hits the decision cache, and filling it would allocate its
     * megabyte for every input (half the target's time): bypass it. The cache is exercised
     * by the authorization tests. */
    authz_request_t req = {.subject = "alice",
                           .resource = "collection:docs",
                           .action = "search",
                           .cache = AUTHZ_CACHE_BYPASS};
    authz_decision_t d;
    authz_view_t *v = NULL;
    if (authz_is_authorized(m, &req, &d, &err) == CDN_OK && d.authorized &&
        authz_authorize_view(m, &req, &d, &v, &err) == CDN_OK && v && v->revision != d.revision)
        abort(); /* the decision and the view must be of one revision */
    authz_view_release(v);
    /* relationship questions on whatever schema and tuples the input wrote */
    bool allowed;
    char *tree = NULL;
    size_t n = 0;
    authz_rebac_check(m, "user:alice", "view", "doc:1", &allowed, NULL, &err);
    authz_rebac_lookup_resources(m, "user:alice", "doc", "view", count_name, &n, NULL, &err);
    authz_rebac_lookup_subjects(m, "doc:1", "view", "user", count_name, &n, NULL, &err);
    if (authz_rebac_expand(m, "doc:1", "view", &tree, &err) == CDN_OK)
        cdn_free(tree);
    cdn_free(before);
    char *one = export_of(m), *two;
    if (one && authz_model_new(&copy, &err) == CDN_OK) {
        if (authz_import(copy, one, &err) != CDN_OK)
            abort(); /* what export writes, import takes */
        two = export_of(copy);
        if (!two || strcmp(one, two))
            abort();
        cdn_free(two);
        authz_model_free(copy);
    }
    cdn_free(one);
    authz_model_free(m);
    cdn_free(text);
    return 0;
}
