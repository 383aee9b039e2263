/* cmd_serve.c: `cordon serve`: the Elasticsearch API (and the server's own routes) over HTTP
 * on one data directory, until SIGTERM or SIGINT. Relies on src/http's server and config. */
#include "base/testhook.h"
#include "cli/cli.h"
#include "http/http.h"

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char serve_usage[] =
    "usage: cordon serve --data DIR [--listen HOST:PORT] [--config FILE]\n\n"
    "Serves the data directory over HTTP: the Elasticsearch API that official clients use,\n"
    "with every read filtered to what the calling key's subject may read.\n"
    "  --listen HOST:PORT  address to listen on (default 127.0.0.1:9200; env CORDON_LISTEN)\n"
    "  --config FILE       server settings, one `key = value` per line or JSON\n"
    "                      (docs/server-config.md lists every key)\n"
    "On first start of a data directory without keys it creates an admin key and prints it\n"
    "once (or takes CORDON_BOOTSTRAP_KEY=ID:SECRET). SIGTERM or SIGINT: stops accepting,\n"
    "finishes the requests in flight, closes the data directory and exits 0.\n";

static void prune_history(cordon_t *db, unsigned days)
{
    struct timespec now;
    cordon_error err;
    uint64_t start, removed;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t us = (uint64_t)now.tv_sec * 1000000u, keep = (uint64_t)days * 86400u * 1000000u;
    if (us <= keep)
        return;
    int rc = cordon_history_prune(db, 0, us - keep, &start, &removed, &err);
    if (rc == CORDON_OK && removed)
        fprintf(stderr,
                "cordon: the permission history starts at revision %llu now (%llu rows "
                "older than %u days removed)\n",
                (unsigned long long)start, (unsigned long long)removed, days);
    else if (rc && rc != CORDON_ERR_NOT_FOUND) /* NOT_FOUND: nothing that old yet */
        fprintf(stderr, "cordon: the permission history could not be pruned: %s\n", err.message);
}

/* Compacts the collections whose dead rows reached the configured share (http_config_t). */
static void compact_due(cordon_t *db, const http_config_t *cfg)
{
    cordon_collection_info *all = NULL;
    cordon_compact_stats st;
    cordon_error err;
    size_t n = 0;
    if (!cfg->compact_dead_percent || cordon_collection_list(db, &all, &n, &err) != CORDON_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        uint64_t rows = all[i].rows, dead = rows - all[i].chunks;
        if (all[i].chunks > rows || dead < cfg->compact_min_dead_rows ||
            dead * 100 < (uint64_t)cfg->compact_dead_percent * rows)
            continue;
        if (cordon_collection_compact(db, all[i].name, &st, &err) == CORDON_OK)
            fprintf(stderr,
                    "cordon: compacted \"%s\": %llu rows -> %llu (%.1f s, writes held %.1f s)\n",
                    all[i].name, (unsigned long long)st.rows_before,
                    (unsigned long long)st.rows_after, st.ms / 1e3, st.writes_held_ms / 1e3);
        else if (err.code != CORDON_ERR_NOT_FOUND) /* dropped meanwhile */
            fprintf(stderr, "cordon: \"%s\" could not be compacted: %s\n", all[i].name,
                    err.message);
    }
    cordon_free(all);
}

/* The whole of a file of at most 1 MiB as a string (free it), or NULL having said why. */
static char *read_small_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s = f ? malloc((1 << 20) + 1) : NULL;
    size_t n = s ? fread(s, 1, (1 << 20) + 1, f) : 0;
    int bad = !f || !s || ferror(f) || n > (1 << 20);
    if (f)
        fclose(f);
    if (bad) {
        fprintf(stderr, "cordon serve: authorizers_file %s: %s\n", path,
                !f   ? "cannot be opened"
                : !s ? "out of memory"
                     : "is unreadable or over 1 MiB");
        free(s);
        return NULL;
    }
    s[n] = '\0';
    return s;
}

int cli_serve(int argc, char **argv)
{
    static const struct option opts[] = {{"data", 1, 0, 'd'},
                                         {"listen", 1, 0, 'l'},
                                         {"config", 1, 0, 'c'},
                                         {"help", 0, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *dir = NULL, *listen = NULL, *config = NULL;
    http_config_t cfg;
    http_server_t *srv = NULL;
    cdn_err_t err = {0, ""};
    cordon_t *db = NULL;
    sigset_t set;
    int c, sig = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'd')
            dir = optarg;
        else if (c == 'l')
            listen = optarg;
        else if (c == 'c')
            config = optarg;
        else {
            fputs(serve_usage, c == 'h' ? stdout : stderr);
            return c == 'h' ? 0 : 2;
        }
    }
    if (!dir) {
        fprintf(stderr, "cordon serve: give the data directory: --data DIR\n");
        return 2;
    }
    http_config_defaults(&cfg);
    if ((config && http_config_load(&cfg, config, &err) != 0) || http_config_env(&cfg, &err) != 0) {
        fprintf(stderr, "cordon serve: %s\n", err.msg);
        return 2;
    }
    if (listen)
        snprintf(cfg.listen, sizeof cfg.listen, "%s", listen);
    /* Signals go to this thread only, which waits for them below: block them before any
     * other thread starts so the server's threads inherit the mask. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    cordon_options db_opts;
    char *authorizers = NULL;
    http_config_db_options(&cfg, &db_opts);
    if (cfg.authorizers_file[0]) {
        if (!(authorizers = read_small_file(cfg.authorizers_file)))
            return 2;
        db_opts.authorizers_json = authorizers;
    }
    int orc = cli_open_with(dir, &db_opts, &db);
    free(authorizers); /* parsed by the open */
    if (orc != 0)
        return 1;
    /* Crash trials only (docs/reliability.md): SIGKILL at the n-th pass of a point inside the
     * engine's writes, counted from here (the open's own writes are not). */
    const char *crash_at = getenv("CORDON_CRASH_AT");
    if (crash_at && *crash_at && cdn_hook_kill_at(crash_at) != 0) {
        fprintf(
            stderr,
            "cordon serve: CORDON_CRASH_AT takes POINT:N, POINT one of vectors_unsynced, "
            "committed, file_written, compact_written, store_copied, model_applied, model_stored "
            "and N at "
            "least 1 (got '%s')\n",
            crash_at);
        cordon_close(db);
        return 2;
    }
    if (http_server_start(db, dir, &cfg, stdout, &srv, &err) != 0) {
        fprintf(stderr, "cordon serve: %s\n", err.msg);
        cordon_close(db);
        return 1;
    }
    printf("cordon: serving %s on %s (port %u)%s; Ctrl-C stops\n", dir, cfg.listen,
           http_server_port(srv), cfg.tls_cert_file[0] ? " over HTTPS" : "");
    fflush(stdout);
    /* Waits for a signal; meanwhile, with history_retain_days, forgets the permission history
     * older than that, now and every hour, and every compact_check_s compacts the collections
     * that have enough dead rows (a signal that comes meanwhile waits for it to end). */
    time_t pruned = 0;
    for (;;) {
        time_t now = time(NULL);
        if (cfg.history_retain_days && now - pruned >= 3600) {
            prune_history(db, cfg.history_retain_days);
            pruned = now;
        }
        compact_due(db, &cfg);
        if (!cfg.history_retain_days && !cfg.compact_dead_percent) {
            if (sigwait(&set, &sig) == 0)
                break;
            continue;
        }
        struct timespec wait = {cfg.compact_dead_percent ? (time_t)cfg.compact_check_s : 3600, 0};
        if ((sig = sigtimedwait(&set, NULL, &wait)) > 0)
            break;
    }
    fprintf(stderr, "cordon: %s: finishing requests in flight, then closing %s\n",
            sig == SIGINT ? "interrupted" : "terminated", dir);
    http_server_stop(srv);
    cordon_close(db);
    return 0;
}
