/* cmd_chunks.c: `cordon delete` and `cordon set-acl`: changing chunks already loaded, by id.
 * Relies on the public API; ids come as arguments or one a line from a file. */
#include "base/mem.h"
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char delete_usage[] =
    "usage: cordon delete --data DIR --collection NAME ID...\n"
    "       cordon delete --data DIR --collection NAME --ids FILE   (one id a line; - = stdin)\n\n"
    "Deletes the chunks, all in one transaction; ids that do not exist are ignored and\n"
    "counted. Prints how many were deleted and the new revision.\n";

static const char set_acl_usage[] =
    "usage: cordon set-acl --data DIR --collection NAME --allow P1,P2 [--deny P3] ID...\n"
    "       cordon set-acl ... --ids FILE                 (one id a line; - = stdin)\n\n"
    "Replaces the ACL of each chunk: --allow lists who may read it (none: nobody may), --deny\n"
    "who may not whatever else they hold. A principal is user:NAME, service:NAME, group:NAME,\n"
    "role:NAME or a plain group name. All or nothing: an id that does not exist changes\n"
    "nothing and is named. Seen by the very next request once it returns.\n";

typedef struct ids {
    char **v;
    size_t n, cap;
} ids_t;

static int ids_add(ids_t *s, const char *id, size_t len)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        char **p = cdn_realloc(s->v, nc * sizeof *p);
        if (!p)
            return -1;
        s->v = p;
        s->cap = nc;
    }
    if (!(s->v[s->n] = cdn_strndup(id, len)))
        return -1;
    s->n++;
    return 0;
}

static void ids_free(ids_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        cdn_free(s->v[i]);
    cdn_free(s->v);
}

/* Reads one id a line (blank lines skipped, a trailing \r dropped). */
static int ids_read(ids_t *s, const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    if (!f) {
        fprintf(stderr, "cordon: cannot open %s\n", path);
        return -1;
    }
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (len > 0 && (rc = ids_add(s, line, (size_t)len)) != 0)
            fprintf(stderr, "cordon: out of memory reading %s\n", path);
    }
    free(line);
    if (f != stdin)
        fclose(f);
    return rc;
}

typedef struct args {
    const char *dir, *coll, *ids_file, *allow, *deny;
    ids_t ids;
} args_t;

/* Parses the options of both commands; acl: whether --allow/--deny are accepted. Returns -1 to
 * go on, else the exit code. */
static int parse(int argc, char **argv, const char *usage, int acl, args_t *a)
{
    static const struct option opts[] = {
        {"data", 1, 0, 'd'}, {"collection", 1, 0, 'c'}, {"ids", 1, 0, 'i'}, {"allow", 1, 0, 'a'},
        {"deny", 1, 0, 'x'}, {"help", 0, 0, 'h'},       {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'd')
            a->dir = optarg;
        else if (c == 'c')
            a->coll = optarg;
        else if (c == 'i')
            a->ids_file = optarg;
        else if (c == 'a' && acl)
            a->allow = optarg;
        else if (c == 'x' && acl)
            a->deny = optarg;
        else {
            fputs(usage, c == 'h' ? stdout : stderr);
            return c == 'h' ? 0 : 2;
        }
    }
    for (int i = optind; i < argc; i++)
        if (ids_add(&a->ids, argv[i], strlen(argv[i])))
            return 1;
    if (a->ids_file && ids_read(&a->ids, a->ids_file))
        return 1;
    if (!a->coll || !a->ids.n || (acl && !a->allow)) {
        fprintf(stderr, "cordon %s: give --collection, %sand at least one id\n%s", argv[0],
                acl ? "--allow " : "", usage);
        return 2;
    }
    if (a->ids.n > CORDON_BATCH_MAX) {
        fprintf(stderr, "cordon %s: %zu ids; one call takes at most %d\n", argv[0], a->ids.n,
                CORDON_BATCH_MAX);
        return 2;
    }
    return -1;
}

int cli_delete(int argc, char **argv)
{
    args_t a = {0};
    cordon_t *db = NULL;
    cordon_error err;
    size_t deleted = 0;
    uint64_t rev = 0;
    int rc = parse(argc, argv, delete_usage, 0, &a);
    if (rc < 0 && cli_open(a.dir, 1, &db))
        rc = 1;
    if (rc < 0) {
        rc = cordon_delete(db, a.coll, (const char *const *)a.ids.v, a.ids.n, &deleted, &rev, &err)
                 ? cli_fail("delete", &err)
                 : 0;
        if (rc == 0)
            printf("deleted %zu of %zu chunks (%zu not found); revision %llu\n", deleted, a.ids.n,
                   a.ids.n - deleted, (unsigned long long)rev);
    }
    cordon_close(db);
    ids_free(&a.ids);
    return rc;
}

int cli_set_acl(int argc, char **argv)
{
    args_t a = {0};
    cordon_t *db = NULL;
    cordon_acl_change *ch = NULL;
    cordon_error err;
    char **allow = NULL, **deny = NULL;
    size_t na = 0, nd = 0;
    uint64_t rev = 0;
    int rc = parse(argc, argv, set_acl_usage, 1, &a);
    if (rc < 0) {
        allow = cli_split(a.allow, &na);
        deny = a.deny ? cli_split(a.deny, &nd) : NULL;
        ch = cdn_calloc(a.ids.n, sizeof *ch);
        if (!allow || (a.deny && !deny) || !ch) {
            fprintf(stderr, "cordon set-acl: out of memory\n");
            rc = 1;
        }
    }
    if (rc < 0 && cli_open(a.dir, 1, &db))
        rc = 1;
    if (rc < 0) {
        for (size_t i = 0; i < a.ids.n; i++)
            ch[i] = (cordon_acl_change){.id = a.ids.v[i],
                                        .allowed = (const char *const *)allow,
                                        .n_allowed = na,
                                        .denied = (const char *const *)deny,
                                        .n_denied = nd};
        rc = cordon_set_acl(db, a.coll, ch, a.ids.n, &rev, &err) ? cli_fail("set-acl", &err) : 0;
        if (rc == 0)
            printf("set the ACL of %zu chunks; revision %llu\n", a.ids.n, (unsigned long long)rev);
    }
    cordon_close(db);
    cdn_free(ch);
    cdn_free(allow);
    cdn_free(deny);
    ids_free(&a.ids);
    return rc;
}
