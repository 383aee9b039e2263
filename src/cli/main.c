/* main.c: the cordon command line, dispatching to one function per subcommand.
 * Relies on cli.h; each subcommand parses its own options. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *what;
} commands[] = {
    {"serve", cli_serve, "serve the Elasticsearch API over HTTP, permissions enforced"},
    {"demo", cli_demo, "load the sample corpus and show permission-aware answers"},
    {"load", cli_load, "load chunks from JSON lines (BEIR corpus.jsonl or NDJSON)"},
    {"search", cli_search, "search a collection as a subject"},
    {"model", cli_model, "import, export, change or inspect the permission model"},
    {"check", cli_check, "is-authorized: may a subject do an action on a resource?"},
    {"explain", cli_explain, "why a subject may or may not read a chunk"},
    {"list", cli_list, "list the collections"},
    {"info", cli_info, "a collection's settings and sizes"},
    {"drop", cli_drop, "drop a collection and its chunks"},
    {"compact", cli_compact, "give back the space of deleted and replaced chunks"},
    {"delete", cli_delete, "delete chunks by id"},
    {"set-acl", cli_set_acl, "replace the ACL of chunks"},
    {"asof", cli_asof, "could a subject read a chunk at a past moment, and what it could read"},
    {"history", cli_history, "prune the permission history before a moment"},
    {"audit", cli_audit, "who was shown which chunk: the retrieval audit's records"},
    {"keys", cli_keys, "create, list or revoke the API keys of cordon serve"},
    {"embedder", cli_embedder, "run the local embedding server (OpenAI-compatible, 512-d)"},
    {"bench", cli_bench, "run a benchmark and print its figures"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: cordon COMMAND [options]   (cordon COMMAND --help for options)\n\n");
    for (const struct command *c = commands; c->name; c++)
        fprintf(f, "  %-8s %s\n", c->name, c->what);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (const struct command *c = commands; c->name; c++)
        if (!strcmp(argv[1], c->name))
            return c->run(argc - 1, argv + 1);
    fprintf(stderr, "cordon: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
