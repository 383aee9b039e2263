/* cmd_keys.c: `cordon keys create | list | revoke`: the API keys of `cordon serve`.
 * Relies on http/keys.h only: these verbs read and write <data>/keys.json, never the database,
 * so they work while the server holds it. */
#include "base/fileio.h"
#include "base/mem.h"
#include "cli/cli.h"
#include "http/keys.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char keys_usage[] =
    "usage: cordon keys create --data DIR --name NAME [--subject ID | --principal P ...]\n"
    "                          [--admin] [--run-as]\n"
    "       cordon keys list --data DIR\n"
    "       cordon keys revoke --data DIR ID\n"
    "(cordon keys VERB --help for one of them)\n";

static const struct verb {
    const char *name, *usage;
} verbs[] = {
    {"create",
     "usage: cordon keys create --data DIR --name NAME [--subject ID | --principal P ...]\n"
     "                          [--admin] [--run-as]\n\n"
     "Creates an API key for `cordon serve` and prints its id, its secret and the header\n"
     "value clients send (Authorization: ApiKey base64(id:secret)). The secret is shown this\n"
     "once: only a salted hash of it is kept in DIR/keys.json.\n\n"
     "  --name NAME       a label, 1 to 64 characters\n"
     "  --subject ID      the key acts as this subject of the permission model\n"
     "  --principal P     or holds this asserted principal (e.g. group:eng; repeat it), for\n"
     "                    collections with asserted principals\n"
     "  --admin           manages keys and indexes and writes everywhere (may have neither\n"
     "                    --subject nor --principal)\n"
     "  --run-as          may act for another subject (es-security-runas-user)\n"},
    {"list",
     "usage: cordon keys list --data DIR\n\n"
     "Lists the live API keys: id, name, whom each acts as, admin and run-as, when created.\n"
     "Never prints secrets (they are not stored). Only reads.\n"},
    {"revoke",
     "usage: cordon keys revoke --data DIR ID\n\n"
     "Revokes the key for good: a running server refuses it from its next request on. The id\n"
     "is never reused.\n"},
};

static const char *keys_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        for (size_t v = 0; v < sizeof verbs / sizeof *verbs; v++)
            if (!strcmp(argv[i], verbs[v].name))
                return verbs[v].usage;
    return keys_usage;
}

typedef struct keys_args {
    const char *dir, *name, *subject;
    const char **principals;
    size_t n_principals;
    int admin, run_as;
} keys_args_t;

/* Parses the options of every verb; -1 to go on, else the exit code. The verb and its
 * operands are left from optind on (getopt permutes them to the end). */
static int parse(int argc, char **argv, keys_args_t *a)
{
    static const struct option opts[] = {{"data", 1, 0, 'd'},    {"name", 1, 0, 'n'},
                                         {"subject", 1, 0, 's'}, {"principal", 1, 0, 'p'},
                                         {"admin", 0, 0, 'a'},   {"run-as", 0, 0, 'r'},
                                         {"help", 0, 0, 'h'},    {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': a->dir = optarg; break;
        case 'n': a->name = optarg; break;
        case 's': a->subject = optarg; break;
        case 'p': a->principals[a->n_principals++] = optarg; break;
        case 'a': a->admin = 1; break;
        case 'r': a->run_as = 1; break;
        default: fputs(keys_help(argc, argv), c == 'h' ? stdout : stderr); return c == 'h' ? 0 : 2;
        }
    }
    if (optind >= argc) {
        fputs(keys_usage, stderr);
        return 2;
    }
    if (!a->dir) {
        fprintf(stderr, "cordon keys: --data DIR is required (the data directory)\n");
        return 2;
    }
    return -1;
}

static int open_store(const char *dir, int create_dir, keys_t **k)
{
    cdn_err_t err;
    if (create_dir && mkdir(dir, CDN_DIR_MODE) && errno != EEXIST) {
        fprintf(stderr, "cordon keys: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    if (keys_open(dir, k, &err)) {
        fprintf(stderr, "cordon keys: %s\n", err.msg);
        return 1;
    }
    return 0;
}

static int keys_do_create(const keys_args_t *a)
{
    keys_spec_t spec = {.name = a->name,
                        .subject = a->subject,
                        .principals = a->principals,
                        .n_principals = a->n_principals,
                        .admin = a->admin,
                        .run_as = a->run_as};
    char secret[KEYS_SECRET_MAX], header[KEYS_HEADER_MAX];
    keys_info_t info;
    cdn_err_t err;
    keys_t *k;
    if (!a->name) {
        fprintf(stderr, "cordon keys create: --name NAME is required (a label for the key)\n");
        return 2;
    }
    if (open_store(a->dir, 1, &k))
        return 1;
    int rc = keys_create(k, &spec, &info, secret, &err);
    keys_close(k);
    if (rc) {
        fprintf(stderr, "cordon keys create: %s\n", err.msg);
        return rc == CDN_ERR_INVALID || rc == CDN_ERR_LIMIT ? 2 : 1;
    }
    keys_header_value(info.id, secret, header);
    printf("id      %s\n", info.id);
    printf("secret  %s\n", secret);
    printf("header  Authorization: %s\n", header);
    fprintf(stderr, "cordon keys create: the secret is shown only now; keep it somewhere safe\n");
    memset(secret, 0, sizeof secret);
    return 0;
}

static void print_acts_as(const keys_info_t *ki)
{
    int w = 0;
    if (ki->subject[0])
        w = printf("%s", ki->subject);
    for (size_t i = 0; i < ki->n_principals; i++)
        w += printf("%s%s", i ? "," : "", ki->principals[i]);
    if (!ki->subject[0] && !ki->n_principals)
        w = printf("-");
    printf("%*s", w < 24 ? 25 - w : 1, "");
}

static int keys_do_list(const keys_args_t *a)
{
    keys_info_t *all = NULL;
    cdn_err_t err;
    keys_t *k;
    size_t n = 0;
    if (open_store(a->dir, 0, &k))
        return 1;
    int rc = keys_list(k, &all, &n, &err);
    keys_close(k);
    if (rc) {
        fprintf(stderr, "cordon keys list: %s\n", err.msg);
        return 1;
    }
    if (!n) {
        printf("no API keys (create one with cordon keys create)\n");
        return 0;
    }
    printf("%-18s %-20s %-24s %-5s %-6s %s\n", "ID", "NAME", "ACTS AS", "ADMIN", "RUN-AS",
           "CREATED");
    for (size_t i = 0; i < n; i++) {
        const keys_info_t *ki = &all[i];
        time_t t = (time_t)(ki->created_ms / 1000);
        struct tm tm;
        char when[32] = "?";
        if (gmtime_r(&t, &tm))
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        printf("%-18s %-20s ", ki->id, ki->name);
        print_acts_as(ki);
        printf("%-5s %-6s %s\n", ki->admin ? "yes" : "no", ki->run_as ? "yes" : "no", when);
    }
    cdn_free(all);
    return 0;
}

static int keys_do_revoke(const keys_args_t *a, int argc, char **argv)
{
    cdn_err_t err;
    keys_t *k;
    if (optind + 2 != argc) {
        fprintf(stderr, "cordon keys revoke: give exactly one key id\n%s", verbs[2].usage);
        return 2;
    }
    const char *id = argv[optind + 1];
    if (open_store(a->dir, 0, &k))
        return 1;
    int rc = keys_revoke(k, id, &err);
    keys_close(k);
    if (rc) {
        fprintf(stderr, "cordon keys revoke: %s\n", err.msg);
        return 1;
    }
    printf("revoked %s\n", id);
    return 0;
}

int cli_keys(int argc, char **argv)
{
    keys_args_t a = {0};
    /* at most one --principal per argument */
    const char **principals = cdn_calloc((size_t)argc + 1, sizeof *principals);
    if (!principals) {
        fprintf(stderr, "cordon keys: out of memory\n");
        return 1;
    }
    a.principals = principals;
    int rc = parse(argc, argv, &a);
    if (rc < 0) {
        const char *verb = argv[optind];
        int extra = optind + 1 < argc;
        if (!strcmp(verb, "create") && !extra)
            rc = keys_do_create(&a);
        else if (!strcmp(verb, "list") && !extra)
            rc = keys_do_list(&a);
        else if (!strcmp(verb, "revoke"))
            rc = keys_do_revoke(&a, argc, argv);
        else {
            fprintf(stderr, "cordon keys: %s '%s'\n%s",
                    extra ? "unexpected argument after" : "unknown verb", verb, keys_usage);
            rc = 2;
        }
    }
    cdn_free(principals);
    return rc;
}
