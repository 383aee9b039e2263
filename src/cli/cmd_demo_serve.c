/* cmd_demo_serve.c: the end of `cordon demo --serve` (what `make demo` runs): the demo's data
 * directory served over HTTP, with a key and curl commands to try as different employees,
 * each shown with what it returns, until Ctrl-C. Relies on src/http's server and the public
 * API (the expected answers are computed through it, as the server computes them). */
#include "cli/cli.h"
#include "cli/demo.h"
#include "http/embed.h"
#include "http/http.h"
#include "http/keys.h"

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

/* The mapping Elasticsearch clients see for the demo collection, and (%s) the settings naming
 * the local embedder, or nothing. */
static const char demo_attrs[] =
    "{\"mappings\":{\"properties\":{\"title\":{\"type\":\"text\"},\"text\":{\"type\":\"text\"},"
    "\"kind\":{\"type\":\"keyword\"},\"team\":{\"type\":\"keyword\"},\"date\":{\"type\":\"date\"},"
    "\"allowed_groups\":{\"type\":\"keyword\"},"
    "\"vector\":{\"type\":\"dense_vector\",\"dims\":512,\"similarity\":\"cosine\"}}},"
    "\"vector_field\":\"vector\",\"acl_field\":\"allowed_groups\","
    "\"denied_field\":\"denied_groups\"%s}";

/* A question of the user's own, to show that any question works (not only the bundled ones). */
#define DEMO_OWN_QUESTION "how much does a senior engineer earn?"

/* What a typed question returns for who: hybrid, BM25 and the question's vector from the
 * embedder, as the server computes it. */
static void expect_hybrid(cordon_t *db, const char *who, const char *question, unsigned port)
{
    char url[64];
    float vec[512];
    char why[300];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/embeddings", port);
    embed_endpoint_t ep = {url, "use-lite", 0};
    if (embed_text(&ep, question, 512, vec, why, sizeof why) != 0) {
        printf("     -> (%s)\n", why);
        return;
    }
    cordon_subject s = {.subject_id = who};
    cordon_query q = {.vector = vec, .text = question, .k = 3, .with_records = 1};
    cordon_result *r = NULL;
    if (cordon_search(db, "demo", &s, &q, &r, NULL) != CORDON_OK)
        return;
    printf("     -> for %s (plan %s):\n", who, r->plan);
    for (size_t i = 0; i < r->n_hits; i++) {
        const char *title = "";
        for (size_t f = 0; r->hits[i].record && f < r->hits[i].record->n_fields; f++)
            if (!strcmp(r->hits[i].record->fields[f].name, "title"))
                title = r->hits[i].record->fields[f].value;
        printf("        %-8s %.60s\n", r->hits[i].id, title);
    }
    cordon_result_free(r);
}

static void expect(cordon_t *db, const char *who, const char *text)
{
    char query[512];
    cordon_subject s = {.subject_id = who};
    cordon_query q = {.k = 3, .with_records = 1, .count_total = 1};
    cordon_result *r = NULL;
    snprintf(query, sizeof query, "{\"match\":{\"text\":%s}}", text);
    q.query_json = query;
    if (cordon_search(db, "demo", &s, &q, &r, NULL) != CORDON_OK) {
        printf("     -> 404 (%s may not search the collection)\n", who);
        return;
    }
    printf("     -> %llu hits for %s; the first %zu:\n", (unsigned long long)r->total, who,
           r->n_hits);
    for (size_t i = 0; i < r->n_hits; i++) {
        const char *title = "";
        for (size_t f = 0; r->hits[i].record && f < r->hits[i].record->n_fields; f++)
            if (!strcmp(r->hits[i].record->fields[f].name, "title"))
                title = r->hits[i].record->fields[f].value;
        printf("        %-8s %.60s\n", r->hits[i].id, title);
    }
    cordon_result_free(r);
}

int demo_serve(cordon_t *db, const char *dir, const char *listen, const char *question,
               const char *const *people, size_t n_people)
{
    char attrs[sizeof demo_attrs + 256], settings[200] = "";
    int embedder = 0;
    unsigned eport = 0;
    if (cli_embedder_start(&embedder, &eport) == 0)
        snprintf(settings, sizeof settings,
                 ",\"settings\":{\"index\":{\"cordon\":{\"embedding_url\":"
                 "\"http://127.0.0.1:%u/v1/embeddings\",\"embedding_model\":\"use-lite\"}}}",
                 eport);
    else
        printf("(the local embedder is not available: typed questions run as text only; "
               "`make deps` installs it)\n");
    snprintf(attrs, sizeof attrs, demo_attrs, settings);
    cordon_collection_change ch = {.attrs_json = attrs};
    http_config_t cfg;
    http_server_t *srv = NULL;
    cordon_error err = {0};
    cdn_err_t e = {0, ""};
    unsigned char rnd[18];
    char secret[40], header[KEYS_HEADER_MAX], text[300];
    sigset_t set;
    int sig = 0;
    if (cordon_collection_alter(db, "demo", &ch, &err) != 0) {
        cli_embedder_stop(embedder);
        return cli_fail("demo", &err);
    }
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        return 1;
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(secret + 2 * i, 3, "%02x", rnd[i]);
    http_config_defaults(&cfg);
    if (http_config_env(&cfg, &e) != 0) {
        fprintf(stderr, "cordon demo: %s\n", e.msg);
        return 2;
    }
    snprintf(cfg.listen, sizeof cfg.listen, "%s", listen);
    snprintf(cfg.bootstrap_key, sizeof cfg.bootstrap_key, "demo:%s", secret);
    snprintf(cfg.access_log, sizeof cfg.access_log, "off");
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (http_server_start(db, dir, &cfg, NULL, &srv, &e) != 0) {
        fprintf(stderr, "cordon demo: %s\n", e.msg);
        cli_embedder_stop(embedder);
        return 1;
    }
    keys_header_value("demo", secret, header);
    json_t *qs = json_string(question);
    char *qtext = json_dumps(qs, JSON_ENCODE_ANY);
    snprintf(text, sizeof text, "%s", qtext ? qtext : "\"\"");
    free(qtext);
    json_decref(qs);
    printf("\ncordon serve is listening on http://%s with the Elasticsearch API.\n"
           "An admin key for this demo (it may act for anyone with es-security-runas-user):\n"
           "  export KEY='%s'\n\nTry, in another terminal:\n\n",
           cfg.listen, header);
    printf("  curl -s http://%s/ -H \"Authorization: $KEY\"\n\n", cfg.listen);
    for (size_t i = 0; i < n_people; i++) {
        printf("  curl -s http://%s/demo/_search -H \"Authorization: $KEY\" \\\n"
               "       -H 'es-security-runas-user: %s' -H 'Content-Type: application/json' \\\n"
               "       -d '{\"query\": {\"match\": {\"text\": %s}}, \"_source\": [\"title\"], "
               "\"size\": 3}'\n",
               cfg.listen, people[i], text);
        expect(db, people[i], text);
        printf("\n");
    }
    if (embedder) {
        printf(
            "  Any question of your own, hybrid (BM25 and the question's vector, embedded by the "
            "local\n  embedder on port %u), through the cordon API:\n"
            "  curl -s http://%s/v1/collections/demo/retrieve -H \"Authorization: $KEY\" \\\n"
            "       -H 'Content-Type: application/json' \\\n"
            "       -d '{\"subject\": \"dana\", \"query\": {\"text\": \"%s\"}, \"k\": 3, "
            "\"fields\": [\"title\"]}'\n",
            eport, cfg.listen, DEMO_OWN_QUESTION);
        expect_hybrid(db, "dana", DEMO_OWN_QUESTION, eport);
        printf("\n  The same as a prompt context of numbered passages with their sources:\n"
               "  curl -s http://%s/v1/collections/demo/context -H \"Authorization: $KEY\" \\\n"
               "       -H 'Content-Type: application/json' \\\n"
               "       -d '{\"subject\": \"dana\", \"query\": {\"text\": \"%s\"}, \"k\": 3, "
               "\"budget_tokens\": 300}'\n\n",
               cfg.listen, DEMO_OWN_QUESTION);
    }
    printf("  Revoke a membership, then ask again as bob: the next request no longer sees HR's "
           "documents.\n"
           "  curl -s -XPOST http://%s/_cordon/model -H \"Authorization: $KEY\" \\\n"
           "       -H 'Content-Type: application/json' \\\n"
           "       -d '{\"op\": \"remove_member\", \"group\": \"hr\", \"member\": \"bob\"}'\n\n"
           "  Who was shown what (every search is recorded), and whether those answers were\n"
           "  readable by their subjects when given, from the permission history:\n"
           "  curl -s 'http://%s/v1/audit?subject=bob&limit=3' -H \"Authorization: $KEY\"\n"
           "  curl -s http://%s/v1/audit/verify -H \"Authorization: $KEY\"\n\n"
           "Serving until Ctrl-C.\n",
           cfg.listen, cfg.listen, cfg.listen);
    fflush(stdout);
    sigwait(&set, &sig);
    printf("\ncordon demo: stopping the server\n");
    http_server_stop(srv);
    cli_embedder_stop(embedder);
    return 0;
}
