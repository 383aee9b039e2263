/* ctx.c: the server-wide context apart from the listener: the data directory's API keys (and
 * the first admin key of an empty one), the metrics, the access log, the parsed-mapping cache
 * and the audit settings. server.c opens one before it listens; the HTTP fuzz target opens one
 * with no listener at all. Relies on http/keys, http/metrics and http/es_mapping. */
#include "http/es.h"
#include "http/es_mapping.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The first admin key: CORDON_BOOTSTRAP_KEY's (cfg->bootstrap_key), or, for a directory with
 * no key yet, a new one printed to out once. */
static int bootstrap(http_ctx_t *ctx, FILE *out, cdn_err_t *err)
{
    keys_spec_t spec = {.name = "bootstrap", .admin = 1, .run_as = 1};
    keys_info_t info;
    char secret[KEYS_SECRET_MAX];
    const char *b = ctx->cfg.bootstrap_key;
    if (b[0]) {
        char id[KEYS_ID_MAX + 1];
        const char *colon = strchr(b, ':');
        if (!colon || colon == b || (size_t)(colon - b) > KEYS_ID_MAX - 1 || !colon[1])
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "CORDON_BOOTSTRAP_KEY must be ID:SECRET (an id of at most %d "
                               "characters and a secret)",
                               KEYS_ID_MAX - 1);
        memcpy(id, b, (size_t)(colon - b));
        id[colon - b] = '\0';
        return keys_add(ctx->keys, id, colon + 1, &spec, err);
    }
    if (keys_count(ctx->keys) > 0)
        return CDN_OK;
    int rc = keys_create(ctx->keys, &spec, &info, secret, err);
    if (rc == CDN_OK && out) {
        fprintf(
            out,
            "cordon: created the first admin key (shown once; keep it):\n"
            "  id:     %s\n  secret: %s\n"
            "  use:    curl -H \"Authorization: ApiKey $(printf %%s '%s:%s' | base64 -w0)\" ...\n",
            info.id, secret, info.id, secret);
        fflush(out);
    }
    return rc;
}

int http_ctx_open(http_ctx_t *ctx, cordon_t *db, const char *data_dir, const http_config_t *cfg,
                  FILE *out, cdn_err_t *err)
{
    size_t nroutes;
    int rc;
    memset(ctx, 0, sizeof *ctx);
    ctx->db = db;
    (void)cordon_audit_info_get(db, &ctx->audit, NULL); /* zeros when it cannot be read */
    ctx->cfg = *cfg;
    ctx->log_fd = -1;
    pthread_mutex_init(&ctx->mapping_lock, NULL);
    snprintf(ctx->data_dir, sizeof ctx->data_dir, "%s", data_dir);
    if (es_attrs_cache_new(&ctx->attrs_cache) != CORDON_OK) {
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((rc = keys_open(data_dir, &ctx->keys, err)) != 0 || (rc = bootstrap(ctx, out, err)) != 0)
        goto fail;
    const char *const *routes = http_route_names(&nroutes); /* sets nroutes */
    if ((rc = metrics_create(routes, nroutes, &ctx->metrics)) != 0) {
        cdn_err_set(err, rc, "cannot set up the metrics: %s", cdn_strerror(rc));
        goto fail;
    }
    if (!strcmp(cfg->access_log, "stderr"))
        ctx->log_fd = dup(2);
    else if (strcmp(cfg->access_log, "off") && cfg->access_log[0]) {
        FILE *f = fopen(cfg->access_log, "a");
        if (!f) {
            rc = cdn_err_set(err, CDN_ERR_IO, "cannot open the access log %s", cfg->access_log);
            goto fail;
        }
        ctx->log_fd = dup(fileno(f));
        fclose(f);
    }
    return CDN_OK;
fail:
    http_ctx_close(ctx);
    return rc;
}

void http_ctx_close(http_ctx_t *ctx)
{
    keys_close(ctx->keys);
    metrics_free(ctx->metrics);
    es_attrs_cache_free(ctx->attrs_cache);
    if (ctx->log_fd >= 0)
        close(ctx->log_fd);
    pthread_mutex_destroy(&ctx->mapping_lock);
    memset(ctx, 0, sizeof *ctx);
    ctx->log_fd = -1;
}
