/* cmd_asof.c: `cordon asof`: could a subject read a chunk at a past revision or moment, or
 * which chunks could it read then, from the permission history; `cordon history prune`: its
 * retention. Relies on the public API
 * (cordon_asof_check, cordon_asof_readable) and base/date for --at. Only reads. */
#include "base/mem.h"
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: cordon asof --data DIR --collection NAME (--subject ID | --as P1,P2)\n"
    "                   (--revision R | --at T) [--chunk ID] [--action read|search]\n\n"
    "Answers from the permission history, as things stood after revision R or at time T\n"
    "(ISO-8601, 2026-12-01T10:00:00Z, or epoch milliseconds):\n"
    "  with --chunk ID     could the subject read that chunk then, and why (one line)\n"
    "  without             every chunk id the subject could read then, one per line\n"
    "  --subject ID        a subject of the permission model; --as: asserted principals\n"
    "  --action A          the permission the answer needs on the collection: read\n"
    "                      (default; a get) or search (a search's hits)\n";

static int print_id(void *ctx, const char *id)
{
    (void)ctx;
    puts(id);
    return 0;
}

int cli_asof(int argc, char **argv)
{
    static const struct option opts[] = {
        {"data", required_argument, 0, 'd'},     {"collection", required_argument, 0, 'c'},
        {"subject", required_argument, 0, 's'},  {"as", required_argument, 0, 'a'},
        {"revision", required_argument, 0, 'r'}, {"at", required_argument, 0, 't'},
        {"chunk", required_argument, 0, 'i'},    {"action", required_argument, 0, 'A'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0},
    };
    const char *dir = NULL, *as = NULL;
    cordon_subject s = {0};
    cordon_asof_request q = {0};
    size_t rev = 0;
    uint64_t at_us = 0;
    int c, has_at = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'c': q.collection = optarg; break;
        case 's': s.subject_id = optarg; break;
        case 'a': as = optarg; break;
        case 'i': q.chunk_id = optarg; break;
        case 'A': q.action = optarg; break;
        case 'r':
            if (cli_parse_size("--revision", optarg, &rev))
                return 2;
            break;
        case 't':
            if (cli_parse_time("asof", "--at", optarg, &at_us))
                return 2;
            has_at = 1;
            break;
        default: fputs(usage, c == 'h' ? stdout : stderr); return c == 'h' ? 0 : 2;
        }
    }
    if (!q.collection || (!s.subject_id == !as) || (!rev == !has_at)) {
        fputs("cordon asof: give --collection, one of --subject and --as, and one of --revision "
              "and --at\n",
              stderr);
        return 2;
    }
    char **prins = NULL;
    if (as && !(prins = cli_split(as, &s.n_principals)))
        return 1;
    s.principals = (const char *const *)prins;
    q.subject = &s;
    q.revision = rev;
    q.time_us = at_us;
    cordon_t *db;
    if (cli_open(dir, 1, &db) != 0) {
        cdn_free(prins);
        return 1;
    }
    cordon_error err;
    int rc;
    if (q.chunk_id) {
        cordon_asof_answer a;
        if ((rc = cordon_asof_check(db, &q, &a, &err)) == 0)
            printf("%s after revision %llu: %s%s%s\n", a.readable ? "readable" : "not readable",
                   (unsigned long long)a.revision, a.reason, a.principal[0] ? " " : "",
                   a.principal);
    } else {
        size_t n;
        uint64_t at;
        rc = cordon_asof_readable(db, &q, print_id, NULL, &n, &at, &err);
    }
    cordon_close(db);
    cdn_free(prins);
    if (rc) {
        fprintf(stderr, "cordon asof: %s\n", err.message);
        return 1;
    }
    return 0;
}

static const char history_usage[] =
    "usage: cordon history prune --data DIR (--before T | --before-revision R)\n\n"
    "Forgets the permission history that only the states before a moment need: every state\n"
    "from revision R (or the one current at time T, ISO-8601 or epoch milliseconds) on stays\n"
    "answerable by cordon asof, and earlier ones are gone. Prints where the history starts\n"
    "now and how many rows went.\n";

int cli_history(int argc, char **argv)
{
    static const struct option opts[] = {
        {"data", required_argument, 0, 'd'},
        {"before", required_argument, 0, 't'},
        {"before-revision", required_argument, 0, 'r'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *dir = NULL;
    size_t rev = 0;
    uint64_t at_us = 0;
    int c, has_at = 0;
    if (argc < 2 || strcmp(argv[1], "prune")) {
        fputs(history_usage, argc > 1 && !strcmp(argv[1], "--help") ? stdout : stderr);
        return argc > 1 && !strcmp(argv[1], "--help") ? 0 : 2;
    }
    argv++;
    argc--;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'r':
            if (cli_parse_size("--before-revision", optarg, &rev))
                return 2;
            break;
        case 't':
            if (cli_parse_time("history prune", "--before", optarg, &at_us))
                return 2;
            has_at = 1;
            break;
        default: fputs(history_usage, c == 'h' ? stdout : stderr); return c == 'h' ? 0 : 2;
        }
    }
    if (!rev == !has_at) {
        fputs("cordon history prune: give one of --before and --before-revision\n", stderr);
        return 2;
    }
    cordon_t *db;
    if (cli_open(dir, 1, &db) != 0)
        return 1;
    cordon_error err;
    uint64_t start = 0, removed = 0;
    int rc = cordon_history_prune(db, rev, at_us, &start, &removed, &err);
    cordon_close(db);
    if (rc) {
        fprintf(stderr, "cordon history prune: %s\n", err.message);
        return 1;
    }
    printf("the permission history starts at revision %llu now; %llu rows removed\n",
           (unsigned long long)start, (unsigned long long)removed);
    return 0;
}
