/* cmd_demo.c: `cordon demo`: loads the sample corpus of a fictional company, asks the same
 * questions as different employees, then revokes access and asks again.
 * Relies on cli/loader, jansson for the demo's people and questions, and base/fvecs. */
#include "base/fvecs.h"
#include "base/mem.h"
#include "cli/cli.h"
#include "cli/demo.h"
#include "cli/loader.h"

#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: cordon demo [--data DIR] [--corpus DIR] [--questions N] [--serve [--listen H:P]]\n\n"
    "Loads the sample corpus (default data/demo) into the collection \"demo\" of the data\n"
    "directory (default build/demo-data), asks each demo question as three employees, and\n"
    "shows a revocation taking effect on the very next query.\n"
    "  --serve        then serve it over HTTP (the Elasticsearch API) with a key and curl\n"
    "                 commands to try, until Ctrl-C (what make demo runs)\n"
    "  --listen H:P   where to listen with --serve (default 127.0.0.1:9200)\n";

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
    json_array_foreach(json_object_get(d->people, "people"), i,
                       p) if (!strcmp(json_string_value(json_object_get(p, "id")), id)) return p;
    return NULL;
}

static int apply(demo_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int apply(demo_t *d, const char *fmt, ...)
{
    char op[1024];
    cordon_error err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(op, sizeof op, fmt, ap);
    va_end(ap);
    if (cordon_model_apply(d->db, op, NULL, &err)) {
        fprintf(stderr, "cordon demo: model operation %s failed: %s\n", op, err.message);
        return 1;
    }
    return 0;
}

/* Builds the permission model from people.json: nested groups, people and their roles, and
 * a "reader" role (search and read on the demo collection) granted to all-staff. */
static int setup_model(demo_t *d)
{
    json_t *groups = json_object_get(d->people, "groups"), *people, *g, *x;
    size_t i, j;
    int bad = 0;
    cordon_error err;
    if (cordon_model_import(d->db, "{\"version\":1}", NULL, &err))
        return cli_fail("demo", &err);
    json_array_foreach(groups, i, g) bad |= apply(d, "{\"op\":\"put_group\",\"id\":\"%s\"}",
                                                  json_string_value(json_object_get(g, "id")));
    json_array_foreach(groups, i, g) json_array_foreach(json_object_get(g, "member_of"), j, x)
        bad |= apply(d,
                     "{\"op\":\"add_member\",\"group\":\"%s\",\"member\":\"%s\","
                     "\"member_kind\":\"group\"}",
                     json_string_value(x), json_string_value(json_object_get(g, "id")));
    bad |= apply(d, "{\"op\":\"put_role\",\"id\":\"reader\",\"permissions\":["
                    "{\"resource\":\"collection:demo\",\"action\":\"search\"},"
                    "{\"resource\":\"collection:demo\",\"action\":\"read\"}]}");
    bad |= apply(d, "{\"op\":\"grant\",\"to\":\"all-staff\",\"to_kind\":\"group\","
                    "\"role\":\"reader\"}");
    people = json_object_get(d->people, "people");
    json_array_foreach(people, i, g)
    {
        const char *id = json_string_value(json_object_get(g, "id"));
        bad |= apply(d, "{\"op\":\"put_subject\",\"id\":\"%s\",\"kind\":\"user\"}", id);
        json_array_foreach(json_object_get(g, "groups"), j, x) bad |=
            apply(d, "{\"op\":\"add_member\",\"group\":\"%s\",\"member\":\"%s\"}",
                  json_string_value(x), id);
        json_array_foreach(json_object_get(g, "roles"), j, x)
        {
            bad |= apply(d, "{\"op\":\"put_role\",\"id\":\"%s\",\"permissions\":[]}",
                         json_string_value(x));
            bad |= apply(d, "{\"op\":\"grant\",\"to\":\"%s\",\"role\":\"%s\"}", id,
                         json_string_value(x));
        }
    }
    return bad;
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
    /* Hybrid: BM25 on the question's words and the question's vector, fused by rank. */
    json_t *qj = json_array_get(json_object_get(d->questions, "questions"), qi);
    cordon_query q = {.vector = d->qvecs + qi * d->dim,
                      .k = (size_t)k,
                      .text = json_string_value(json_object_get(qj, "text"))};
    cordon_result *r;
    cordon_error err;
    char title[160];
    if (cordon_search(d->db, "demo", s, &q, &r, &err))
        return cli_fail("demo", &err);
    printf("  as %-44s (may read %llu of the chunks; plan %s, %s)\n", who,
           (unsigned long long)r->readable, r->plan, r->complete ? "complete" : "incomplete");
    for (size_t i = 0; i < r->n_hits; i++) {
        title_of(d, s, r->hits[i].id, title, sizeof title);
        printf("      %zu. %-60.60s %.4f\n", i + 1, title, r->hits[i].score);
    }
    if (first_id && r->n_hits)
        snprintf(first_id, 64, "%s", r->hits[0].id);
    cordon_result_free(r);
    return 0;
}

static int ask_as(demo_t *d, size_t qi, const char *pid, char first_id[64])
{
    char who[128];
    json_t *p = person(d, pid);
    if (!p)
        return 1;
    cordon_subject s = {.subject_id = pid};
    snprintf(who, sizeof who, "%s (%s)", pid, json_string_value(json_object_get(p, "title")));
    who[44] = '\0';
    return ask(d, qi, &s, who, 3, first_id);
}

static int questions(demo_t *d, size_t max)
{
    json_t *qs = json_object_get(d->questions, "questions"), *q, *a;
    size_t i, j;
    json_array_foreach(qs, i, q)
    {
        if (i >= max || i >= d->nq)
            break;
        printf("\nQ%zu. \"%s\"\n", i + 1, json_string_value(json_object_get(q, "text")));
        json_array_foreach(
            json_object_get(q, "ask_as"), j,
            a) if (ask_as(d, i, json_string_value(json_object_get(a, "person")), NULL)) return 1;
    }
    return 0;
}

/* The scenario of questions.json: bob (in group:hr directly) asks the salary question, is
 * removed from group:hr, and asks again: the very next query no longer finds the bands. */
static int revocation(demo_t *d)
{
    cordon_subject s = {.subject_id = "bob"};
    char **view;
    size_t n;
    uint64_t rev;
    cordon_error err;
    if (!person(d, "bob"))
        return 0;
    printf("\nRevocation: bob, a recruiter added to group:hr to help with offers, asks Q1; HR "
           "removes him from group:hr; he asks again.\n");
    if (ask(d, 0, &s, "bob, before", 3, NULL))
        return 1;
    if (cordon_model_apply(d->db,
                           "{\"op\":\"remove_member\",\"group\":\"hr\","
                           "\"member\":\"bob\"}",
                           &rev, &err))
        return cli_fail("demo", &err);
    printf("  -> remove_member hr bob: acknowledged at revision %llu\n", (unsigned long long)rev);
    if (cordon_view(d->db, "bob", &view, &n, NULL, &err) == 0) {
        printf("  -> bob's view is now:");
        for (size_t i = 0; i < n; i++)
            printf(" %s", view[i]);
        printf("\n");
        cordon_strings_free(view, n);
    }
    return ask(d, 0, &s, "bob, after (the next query)", 3, NULL);
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
    cordon_meta_field meta[] = {
        {"kind", CORDON_META_KEYWORD}, {"team", CORDON_META_KEYWORD}, {"date", CORDON_META_DATE}};
    cordon_collection_spec spec = {.name = "demo",
                                   .dim = 512,
                                   .metric = CORDON_METRIC_COSINE,
                                   .text_fields = fields,
                                   .n_text_fields = 2,
                                   .analyzer = "english",
                                   .meta_fields = meta,
                                   .n_meta_fields = 3};
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
    if (setup_model(d))
        return 1;
    printf("Loaded %zu documents of Northwind Aerial (a fictional company) with their access "
           "lists,\nand a permission model of %zu people in nested teams, departments and "
           "divisions.\nEach question is asked as three people; each sees only what they may "
           "read.\n",
           loaded, json_array_size(json_object_get(d->people, "people")));
    return 0;
}

int cli_demo(int argc, char **argv)
{
    static const struct option opts[] = {
        {"data", 1, 0, 'd'},  {"corpus", 1, 0, 'c'}, {"questions", 1, 0, 'n'},
        {"serve", 0, 0, 's'}, {"listen", 1, 0, 'l'}, {"help", 0, 0, 'h'},
        {0, 0, 0, 0}};
    const char *dir = "build/demo-data", *corpus = "data/demo", *listen = "127.0.0.1:9200";
    int serve = 0;
    size_t nq = 4;
    demo_t d = {0};
    int c, rc = 1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'c': corpus = optarg; break;
        case 'n':
            if (cli_parse_size("--questions", optarg, &nq))
                return 2;
            break;
        case 's': serve = 1; break;
        case 'l': listen = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    /* Served, it records who was shown what, as cordon serve does by default. */
    cordon_options o = {.audit = serve};
    if (cli_open_with(dir, &o, &d.db) == 0 && setup(&d, corpus) == 0 && questions(&d, nq) == 0 &&
        (serve || revocation(&d) == 0))
        rc = 0;
    if (rc == 0 && serve) {
        /* The first question, asked as the people the sample names for it. */
        json_t *q0 = json_array_get(json_object_get(d.questions, "questions"), 0), *a;
        const char *people[8];
        size_t n = 0, i;
        json_array_foreach(json_object_get(q0, "ask_as"), i, a) if (n < 8) people[n++] =
            json_string_value(json_object_get(a, "person"));
        if (n < 8 && person(&d, "bob"))
            people[n++] = "bob";
        rc = demo_serve(d.db, dir, listen, json_string_value(json_object_get(q0, "text")), people,
                        n);
    }
    cordon_close(d.db);
    json_decref(d.people);
    json_decref(d.questions);
    cdn_free(d.qvecs);
    return rc;
}
