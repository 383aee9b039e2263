/* cmd_model.c: `cordon model` (import, export, apply, view), `cordon check` (is-authorized)
 * and `cordon explain`: the permission model from the command line.
 * Relies on the public API; documents are JSON as docs/internals/authz.md describes. */
#include "base/buf.h"
#include "base/mem.h"
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char model_usage[] =
    "usage: cordon model import --data DIR FILE.json   replace the model by a document\n"
    "       cordon model export --data DIR             print the model as one document\n"
    "       cordon model apply --data DIR OP_JSON      apply one operation ('-': one per line\n"
    "                                                  from standard input)\n"
    "       cordon model view --data DIR SUBJECT       print a subject's principals\n"
    "(cordon model VERB --help for one of them)\n";

/* Each verb's own --help. */
static const struct verb {
    const char *name, *usage;
} verbs[] = {
    {"import",
     "usage: cordon model import --data DIR FILE.json   ('-' reads standard input)\n\n"
     "Replaces the whole permission model by the document, in the shape `cordon model export`\n"
     "prints "
     "({\"version\":1,\"subjects\":[...],\"groups\":[...],\"roles\":[...],\"grants\":[...]},\n"
     "docs/internals/authz.md). All or nothing: a bad document changes nothing. Prints the new\n"
     "revision.\n"},
    {"export",
     "usage: cordon model export --data DIR\n\n"
     "Prints the whole model as one JSON document, sorted, so that export, import and export\n"
     "again give the same bytes. Only reads: a mistyped --data is an error, nothing is made.\n"},
    {"apply",
     "usage: cordon model apply --data DIR OP_JSON\n"
     "       cordon model apply --data DIR -        (one operation a line, standard input)\n\n"
     "Applies operations such as {\"op\":\"add_member\",\"group\":\"eng\",\"member\":\"alice\"}\n"
     "(put_subject, put_group, add_member, remove_member, put_role, grant, revoke, ...: the\n"
     "vocabulary is in docs/internals/authz.md). Each one is durable and seen by the very next\n"
     "request once applied; a bad one changes nothing. From standard input the first bad line\n"
     "stops the run, and the message names it and how many were applied before it.\n"},
    {"view",
     "usage: cordon model view --data DIR SUBJECT\n\n"
     "Prints the principals SUBJECT holds, one a line: user:SUBJECT (or service:), group:G for\n"
     "every group it belongs to directly or through other groups, role:R for every role\n"
     "granted to it or its groups. A chunk is readable when its ACL allows one of them and\n"
     "denies none. Only reads.\n"},
};

/* The usage text for `cordon model ARGS --help`: the verb's when ARGS name one. */
static const char *model_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        for (size_t v = 0; v < sizeof verbs / sizeof *verbs; v++)
            if (!strcmp(argv[i], verbs[v].name))
                return verbs[v].usage;
    return model_usage;
}

/* Reads a whole file (or standard input for "-") into a bounded buffer. */
static char *read_all(const char *path, size_t max)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    cdn_buf_t b;
    char chunk[65536];
    size_t n;
    if (!f) {
        fprintf(stderr, "cordon model: cannot open %s\n", path);
        return NULL;
    }
    cdn_buf_init(&b, max);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (cdn_buf_append(&b, chunk, n)) {
            fprintf(stderr, "cordon model: %s is larger than %zu bytes\n", path, max);
            cdn_buf_free(&b);
            b.data = NULL;
            break;
        }
    if (f != stdin)
        fclose(f);
    return b.data ? b.data : (b.len == 0 ? cdn_strdup("") : NULL);
}

static int apply_lines(cordon_t *db, const char *text)
{
    cordon_error err;
    size_t line = 0, applied = 0;
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *op = cdn_strndup(p, len);
        line++;
        if (op && strspn(op, " \t\r") != len) {
            if (cordon_model_apply(db, op, NULL, &err)) {
                fprintf(stderr,
                        "cordon model apply: line %zu: %s (%zu operations applied "
                        "before it)\n",
                        line, err.message, applied);
                cdn_free(op);
                return 1;
            }
            applied++;
        }
        cdn_free(op);
        p = end ? end + 1 : p + len;
    }
    printf("applied %zu operations; revision %llu\n", applied,
           (unsigned long long)cordon_revision(db));
    return 0;
}

static int model_run(cordon_t *db, const char *verb, const char *arg)
{
    cordon_error err;
    char *doc = NULL;
    uint64_t rev;
    int rc;
    if (!strcmp(verb, "export")) {
        if ((rc = cordon_model_export(db, &doc, &err)) == 0)
            puts(doc);
    } else if (!strcmp(verb, "import") && arg) {
        if (!(doc = read_all(arg, 256u << 20)))
            return 1;
        if ((rc = cordon_model_import(db, doc, &rev, &err)) == 0)
            printf("imported %s; revision %llu\n", arg, (unsigned long long)rev);
    } else if (!strcmp(verb, "apply") && arg && !strcmp(arg, "-")) {
        if (!(doc = read_all(arg, 256u << 20)))
            return 1;
        rc = apply_lines(db, doc);
        cdn_free(doc);
        return rc;
    } else if (!strcmp(verb, "apply") && arg) {
        if ((rc = cordon_model_apply(db, arg, &rev, &err)) == 0)
            printf("applied; revision %llu\n", (unsigned long long)rev);
    } else if (!strcmp(verb, "view") && arg) {
        char **p;
        size_t n;
        if ((rc = cordon_view(db, arg, &p, &n, &rev, &err)) == 0) {
            for (size_t i = 0; i < n; i++)
                puts(p[i]);
            cordon_strings_free(p, n);
        }
    } else {
        fputs(model_usage, stderr);
        return 2;
    }
    cdn_free(doc);
    return rc ? cli_fail("model", &err) : 0;
}

int cli_model(int argc, char **argv)
{
    static const struct option opts[] = {{"data", 1, 0, 'd'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *dir = NULL;
    cordon_t *db = NULL;
    int c, rc;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'd')
            dir = optarg;
        else {
            fputs(model_help(argc, argv), c == 'h' ? stdout : stderr);
            return c == 'h' ? 0 : 2;
        }
    }
    if (optind >= argc) {
        fputs(model_usage, stderr);
        return 2;
    }
    /* export and view only read: a mistyped --data must not leave an empty database */
    if (cli_open(dir, !strcmp(argv[optind], "export") || !strcmp(argv[optind], "view"), &db))
        return 1;
    rc = model_run(db, argv[optind], optind + 1 < argc ? argv[optind + 1] : NULL);
    cordon_close(db);
    return rc;
}

static const char check_usage[] =
    "usage: cordon check --data DIR --subject ID --resource TYPE:ID --action VERB\n"
    "                    [--context JSON] [--scope TYPE:ID]\n\n"
    "Asks whether the subject may do the action on the resource and prints the decision with\n"
    "its reason. Exit status: 0 authorized, 1 denied, 2 usage or other error.\n";

int cli_check(int argc, char **argv)
{
    static const struct option opts[] = {{"data", 1, 0, 'd'},     {"subject", 1, 0, 's'},
                                         {"resource", 1, 0, 'r'}, {"action", 1, 0, 'a'},
                                         {"context", 1, 0, 'c'},  {"scope", 1, 0, 'S'},
                                         {"help", 0, 0, 'h'},     {0, 0, 0, 0}};
    cordon_authz_request req = {0};
    const char *dir = NULL, *scope = NULL;
    char scope_type[128] = "";
    cordon_decision d;
    cordon_error err;
    cordon_t *db;
    int c, rc;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 's': req.subject = optarg; break;
        case 'r': req.resource = optarg; break;
        case 'a': req.action = optarg; break;
        case 'c': req.context_json = optarg; break;
        case 'S': scope = optarg; break;
        case 'h': fputs(check_usage, stdout); return 0;
        default: fputs(check_usage, stderr); return 2;
        }
    }
    if (!req.subject || !req.resource || !req.action) {
        fputs(check_usage, stderr);
        return 2;
    }
    if (scope) {
        const char *colon = strchr(scope, ':');
        if (!colon || (size_t)(colon - scope) >= sizeof scope_type) {
            fprintf(stderr, "cordon check: --scope must be TYPE:ID, e.g. tenant:acme\n");
            return 2;
        }
        memcpy(scope_type, scope, (size_t)(colon - scope));
        req.scope_type = scope_type;
        req.scope_id = colon + 1;
    }
    if (cli_open(dir, 1, &db))
        return 2;
    rc = cordon_is_authorized(db, &req, &d, &err);
    cordon_close(db);
    if (rc) {
        cli_fail("check", &err);
        return 2;
    }
    printf("%s %s\n", d.authorized ? "authorized" : "denied", d.reason);
    if (d.resource[0])
        printf("permission: %s %s%s%s (granted to %s%s%s)\n", d.action, d.resource,
               d.condition[0] ? " if " : "", d.condition, d.granted_to,
               d.role[0] ? " through role " : "", d.role);
    printf("revision: %llu\n", (unsigned long long)d.revision);
    return d.authorized ? 0 : 1;
}

int cli_explain(int argc, char **argv)
{
    static const struct option opts[] = {{"data", 1, 0, 'd'},    {"collection", 1, 0, 'c'},
                                         {"subject", 1, 0, 's'}, {"id", 1, 0, 'i'},
                                         {"help", 0, 0, 'h'},    {0, 0, 0, 0}};
    const char *dir = NULL, *coll = NULL, *subject = NULL, *id = NULL;
    cordon_explanation x;
    cordon_error err;
    cordon_t *db;
    int c, rc;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'c': coll = optarg; break;
        case 's': subject = optarg; break;
        case 'i': id = optarg; break;
        default:
            fputs("usage: cordon explain --data DIR --collection NAME --subject ID --id CHUNK\n",
                  c == 'h' ? stdout : stderr);
            return c == 'h' ? 0 : 2;
        }
    }
    if (!coll || !subject || !id) {
        fputs("usage: cordon explain --data DIR --collection NAME --subject ID --id CHUNK\n",
              stderr);
        return 2;
    }
    if (cli_open(dir, 1, &db))
        return 2;
    rc = cordon_explain(db, coll, subject, id, &x, &err);
    cordon_close(db);
    if (rc)
        return cli_fail("explain", &err);
    printf("%s\n", x.message);
    return 0;
}
