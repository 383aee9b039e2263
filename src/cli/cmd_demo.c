/* cmd_demo.c: `cordon demo`: loads the sample corpus of a fictional company, asks the same
 * questions as different employees, then revokes access and asks again.
 * Relies on cli/loader, jansson for the demo's people and questions, and base/fvecs. */
#include "base/fvecs.h"
#include "base/mem.h"
#include "cli/cli.h"
#include "cli/loader.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: cordon demo [--data DIR] [--corpus DIR] [--questions N]\n\n"
    "Loads the sample corpus (default data/demo) into the collection \"demo\" of the data\n"
    "directory (default build/demo-data), asks each demo question as three employees, and\n"
    "shows a revocation taking effect on the very next query.\n";

typedef struct demo {
    cordon_t *db;
    json_t *people, *questions;
    float *qvecs;
    size_t nq;
    uint32_t dim;
} demo_t;

static json_t *person(demo_t *d, const char *id)
{
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(d->people, "people"), i, p)
        if (!strcmp(json_string_value(json_object_get(p, "id")), id))
            return p;
    return NULL;
}

/* The principals of a person as the demo's people.json flattened them. */
static size_t principals_of(json_t *p, const char **out, size_t max)
{
    json_t *arr = json_object_get(p, "principals"), *v;
    size_t i, n = 0;
    json_array_foreach(arr, i, v)
        if (n < max)
            out[n++] = json_string_value(v);
    return n;
}

static void title_of(demo_t *d, const cordon_subject *s, const char *id, char *buf, size_t n)
{
    cordon_record *r;
    snprintf(buf, n, "%s", id);
    if (cordon_get(d->db, "demo", s, id, &r, NULL) == 0) {
        for (size_t i = 0; i < r->n_fields; i++)
            if (!strcmp(r->fields[i].name, "title"))
                snprintf(buf, n, "%s", r->fields[i].value);
        cordon_record_free(r);
    }
}

static int ask(demo_t *d, size_t qi, const cordon_subject *s, const char *who, int k,
               char first_id[64])
{
    cordon_query q = {.vector = d->qvecs + qi * d->dim, .k = (size_t)k};
    cordon_result *r;
    cordon_error err;
    char title[160];
    if (cordon_search(d->db, "demo", s, &q, &r, &err))
        return cli_fail("demo", &err);
    printf("  as %-44s (may read %llu of the chunks; plan %s, %s)\n", who,
           (unsigned long long)r->readable, r->plan, r->complete ? "complete" : "incomplete");
    for (size_t i = 0; i < r->n_hits; i++) {
        title_of(d, s, r->hits[i].id, title, sizeof title);
        printf("      %zu. %-60.60s %.3f\n", i + 1, title, r->hits[i].score);
    }
    if (first_id && r->n_hits)
        snprintf(first_id, 64, "%s", r->hits[0].id);
    cordon_result_free(r);
    return 0;
}

static int ask_as(demo_t *d, size_t qi, const char *pid, char first_id[64])
{
    const char *prin[64];
    char who[128];
    json_t *p = person(d, pid);
    if (!p)
        return 1;
    cordon_subject s = {.principals = prin, .n_principals = principals_of(p, prin, 64)};
    snprintf(who, sizeof who, "%s (%s)", pid, json_string_value(json_object_get(p, "title")));
    who[44] = '\0';
    return ask(d, qi, &s, who, 3, first_id);
}

static int questions(demo_t *d, size_t max)
{
    json_t *qs = json_object_get(d->questions, "questions"), *q, *a;
    size_t i, j;
    json_array_foreach(qs, i, q) {
        if (i >= max || i >= d->nq)
            break;
        printf("\nQ%zu. \"%s\"\n", i + 1, json_string_value(json_object_get(q, "text")));
        json_array_foreach(json_object_get(q, "ask_as"), j, a)
            if (ask_as(d, i, json_string_value(json_object_get(a, "person")), NULL))
                return 1;
    }
    return 0;
}

/* Bob asks the salary question; HR then takes group:hr off the documents he reached through
 * it; his very next query no longer finds them. */
static int revocation(demo_t *d)
{
    const char *prin[64];
    char first[64] = "";
    json_t *bob = person(d, "bob");
    cordon_error err;
    if (!bob)
        return 0;
    cordon_subject s = {.principals = prin, .n_principals = principals_of(bob, prin, 64)};
    printf("\nRevocation: bob (a recruiter helping HR) asks Q1, HR withdraws group:hr from the "
           "document he sees first, bob asks again.\n");
    if (ask(d, 0, &s, "bob, before", 3, first))
        return 1;
    cordon_record *r;
    const char *hr_only[] = {"group:team-compensation"};
    if (cordon_get(d->db, "demo", &s, first, &r, &err))
        return cli_fail("demo", &err);
    printf("  -> set ACL of %s from [", first);
    for (size_t i = 0; i < r->n_allowed; i++)
        printf("%s%s", i ? ", " : "", r->allowed[i]);
    printf("] to [group:team-compensation]\n");
    cordon_record_free(r);
    cordon_acl_change ch = {.id = first, .allowed = hr_only, .n_allowed = 1};
    uint64_t rev;
    if (cordon_set_acl(d->db, "demo", &ch, 1, &rev, &err))
        return cli_fail("demo", &err);
    printf("  -> acknowledged at revision %llu\n", (unsigned long long)rev);
    return ask(d, 0, &s, "bob, after (next query)", 3, NULL);
}

static json_t *load_json(const char *dir, const char *name)
{
    char path[4096];
    json_error_t je;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        fprintf(stderr, "cordon demo: cannot read %s: %s (line %d)\n", path, je.text, je.line);
    return j;
}

static int setup(demo_t *d, const char *corpus)
{
    char jsonl[4096], fvecs[4096], qfile[4096];
    const char *fields[] = {"title", "text"};
    cordon_collection_spec spec = {.name = "demo", .dim = 512, .metric = CORDON_METRIC_COSINE,
                                   .text_fields = fields, .n_text_fields = 2};
    loader_opts_t lo = {.collection = "demo", .jsonl = jsonl, .fvecs = fvecs};
    cordon_error err;
    cdn_err_t e;
    size_t loaded;
    snprintf(jsonl, sizeof jsonl, "%s/corpus.jsonl", corpus);
    snprintf(fvecs, sizeof fvecs, "%s/corpus.fvecs", corpus);
    snprintf(qfile, sizeof qfile, "%s/questions.fvecs", corpus);
    if (!(d->people = load_json(corpus, "people.json")) ||
        !(d->questions = load_json(corpus, "questions.json")))
        return 1;
    if (cdn_fvecs_read(qfile, &d->qvecs, &d->nq, &d->dim, &e)) {
        fprintf(stderr, "cordon demo: %s\n", e.msg);
        return 1;
    }
    cordon_collection_drop(d->db, "demo", NULL); /* start from the sample every time */
    if (cordon_collection_create(d->db, &spec, &err) || loader_run(d->db, &lo, &loaded, &err))
        return cli_fail("demo", &err);
    printf("Loaded %zu documents of Northwind Aerial (a fictional company) with their access "
           "lists.\n", loaded);
    return 0;
}

int cli_demo(int argc, char **argv)
{
    static const struct option opts[] = {{"data", 1, 0, 'd'},
                                         {"corpus", 1, 0, 'c'},
                                         {"questions", 1, 0, 'n'},
                                         {"help", 0, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *dir = "build/demo-data", *corpus = "data/demo";
    size_t nq = 4;
    demo_t d = {0};
    int c, rc = 1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'c': corpus = optarg; break;
        case 'n': if (cli_parse_size("--questions", optarg, &nq)) return 2; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (cli_open(dir, &d.db) == 0 && setup(&d, corpus) == 0 && questions(&d, nq) == 0 &&
        revocation(&d) == 0)
        rc = 0;
    cordon_close(d.db);
    json_decref(d.people);
    json_decref(d.questions);
    cdn_free(d.qvecs);
    return rc;
}
