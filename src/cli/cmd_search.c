/* cmd_search.c: `cordon search`: one query as a subject, printed as a table or JSON.
 * Relies on the public API and base/fvecs for query vectors from a file. */
#include "base/buf.h"
#include "base/fvecs.h"
#include "base/mem.h"
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: cordon search --data DIR --collection NAME --as P1,P2 QUERY [options]\n\n"
    "Searches as the subject holding principals P1,P2 (\"user:alice\", \"group:eng\", a bare\n"
    "name is a group) and prints only what that subject may read.\n\n"
    "QUERY is a vector, a text query, or both (hybrid, fused by reciprocal rank):\n"
    "  --vector X1,X2,...      the query vector\n"
    "  --vectors F.fvecs --row N   row N of an fvecs file\n"
    "  --text \"words\"          BM25 over every text field\n"
    "  --query JSON            an Elasticsearch query object, e.g. "
    "'{\"match\":{\"title\":\"x\"}}'\n"
    "  --fusion rrf|linear     how a hybrid query fuses its two sides (default rrf)\n"
    "  --filter JSON           keep only chunks this query object matches, e.g. on metadata:\n"
    "                          '{\"term\":{\"dept\":\"hr\"}}', "
    "'{\"range\":{\"year\":{\"gte\":2020}}}'\n\n"
    "  --subject ID            search as a subject of the permission model instead of --as\n"
    "  --k N                   hits to return (default 10)\n"
    "  --strategy S            auto (default), exact, prefilter or postfilter\n"
    "  --ef N                  HNSW search breadth (default: the collection's)\n"
    "  --max-candidates N      postfilter: widen the traversal up to N chunks (default 1000)\n"
    "  --json                  print one JSON object\n";

static int parse_strategy(const char *s, cordon_strategy *out)
{
    static const char *const names[] = {"auto", "exact", "prefilter", "postfilter"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i])) {
            *out = (cordon_strategy)i;
            return 0;
        }
    fprintf(stderr,
            "cordon search: --strategy must be auto, exact, prefilter or postfilter; "
            "got \"%s\"\n",
            s);
    return -1;
}

static float *parse_vector(const char *csv, size_t *n)
{
    char **parts = cli_split(csv, n);
    float *v = parts ? cdn_malloc((*n ? *n : 1) * sizeof *v) : NULL;
    for (size_t i = 0; v && i < *n; i++) {
        char *end;
        errno = 0;
        v[i] = strtof(parts[i], &end);
        if (errno || *end || end == parts[i] || !isfinite(v[i])) {
            fprintf(stderr, "cordon search: --vector value %zu (\"%s\") is not a finite number\n",
                    i, parts[i]);
            cdn_free(v);
            v = NULL;
        }
    }
    cdn_free(parts);
    return v;
}

static void print_result(const cordon_result *r, int json)
{
    if (!json) {
        for (size_t i = 0; i < r->n_hits; i++)
            printf("%3zu  %9.5f  %s\n", i + 1, r->hits[i].score, r->hits[i].id);
        printf("plan=%s complete=%s readable=%llu candidates=%llu revision=%llu\n", r->plan,
               r->complete ? "true" : "false", (unsigned long long)r->readable,
               (unsigned long long)r->candidates, (unsigned long long)r->revision);
        return;
    }
    cdn_buf_t b;
    cdn_buf_init(&b, 64u << 20);
    cdn_buf_puts(&b, "{\"hits\":[");
    for (size_t i = 0; i < r->n_hits; i++) {
        cdn_buf_puts(&b, i ? ",{\"id\":" : "{\"id\":");
        cdn_buf_json_str(&b, r->hits[i].id);
        cdn_buf_printf(&b, ",\"score\":%.7g}", r->hits[i].score);
    }
    cdn_buf_printf(&b,
                   "],\"complete\":%s,\"plan\":\"%s\",\"readable\":%llu,\"candidates\":%llu,"
                   "\"revision\":%llu}",
                   r->complete ? "true" : "false", r->plan, (unsigned long long)r->readable,
                   (unsigned long long)r->candidates, (unsigned long long)r->revision);
    puts(b.data ? b.data : "{}");
    cdn_buf_free(&b);
}

int cli_search(int argc, char **argv)
{
    static const struct option opts[] = {
        {"data", 1, 0, 'd'},   {"collection", 1, 0, 'c'},     {"as", 1, 0, 'a'},
        {"vector", 1, 0, 'v'}, {"vectors", 1, 0, 'V'},        {"row", 1, 0, 'r'},
        {"k", 1, 0, 'k'},      {"strategy", 1, 0, 's'},       {"ef", 1, 0, 'e'},
        {"json", 0, 0, 'j'},   {"help", 0, 0, 'h'},           {"text", 1, 0, 't'},
        {"query", 1, 0, 'Q'},  {"fusion", 1, 0, 'f'},         {"subject", 1, 0, 'S'},
        {"filter", 1, 0, 'F'}, {"max-candidates", 1, 0, 'M'}, {0, 0, 0, 0}};
    const char *subject = NULL;
    const char *dir = NULL, *coll = NULL, *as = NULL, *vec = NULL, *vfile = NULL;
    size_t row = 0, k = 10, ef = 0, nprin = 0, dim = 0;
    int json = 0, c, rc = 1, has_row = 0;
    cordon_query q = {0};
    cordon_t *db = NULL;
    cordon_result *r = NULL;
    cordon_error err;
    char **prin = NULL;
    float *qv = NULL, *all = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'c': coll = optarg; break;
        case 'a': as = optarg; break;
        case 'v': vec = optarg; break;
        case 'V': vfile = optarg; break;
        case 'r':
            if (cli_parse_size("--row", optarg, &row))
                return 2;
            has_row = 1;
            break;
        case 'k':
            if (cli_parse_size("--k", optarg, &k))
                return 2;
            break;
        case 'e':
            if (cli_parse_size("--ef", optarg, &ef))
                return 2;
            break;
        case 's':
            if (parse_strategy(optarg, &q.strategy))
                return 2;
            break;
        case 'j': json = 1; break;
        case 't': q.text = optarg; break;
        case 'Q': q.query_json = optarg; break;
        case 'S': subject = optarg; break;
        case 'F': q.filter_json = optarg; break;
        case 'M':
            if (cli_parse_size("--max-candidates", optarg, &q.max_candidates))
                return 2;
            break;
        case 'f':
            if (strcmp(optarg, "rrf") && strcmp(optarg, "linear")) {
                fprintf(stderr, "cordon search: --fusion must be rrf or linear\n");
                return 2;
            }
            q.fusion = optarg[0] == 'l' ? CORDON_FUSION_LINEAR : CORDON_FUSION_RRF;
            break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (!coll || (!as && !subject) || (!vec && !(vfile && has_row) && !q.text && !q.query_json)) {
        fprintf(stderr, "cordon search: give --collection, --as (or --subject) and a query\n%s",
                usage);
        return 2;
    }
    if (as)
        prin = cli_split(as, &nprin);
    if (vec && !(qv = parse_vector(vec, &dim)))
        goto done;
    if (!vec && vfile) {
        cdn_err_t e;
        size_t rows;
        uint32_t d;
        if (cdn_fvecs_read(vfile, &all, &rows, &d, &e)) {
            fprintf(stderr, "cordon search: %s\n", e.msg);
            goto done;
        }
        if (row >= rows) {
            fprintf(stderr, "cordon search: --row %zu but %s has %zu rows\n", row, vfile, rows);
            goto done;
        }
        qv = all + row * d;
        dim = d;
    }
    if (cli_open(dir, 1, &db))
        goto done;
    cordon_collection_info info;
    if (cordon_collection_info_get(db, coll, &info, &err)) {
        cli_fail("search", &err);
        goto done;
    }
    if (qv && dim != info.dim) {
        fprintf(stderr,
                "cordon search: the query vector has %zu values; collection \"%s\" "
                "expects %u\n",
                dim, coll, info.dim);
        goto done;
    }
    q.vector = qv;
    q.k = k;
    q.ef_search = (uint32_t)ef;
    cordon_subject s = {
        .principals = (const char *const *)prin, .n_principals = nprin, .subject_id = subject};
    if (cordon_search(db, coll, &s, &q, &r, &err)) {
        cli_fail("search", &err);
        /* The engine answers as for a missing collection (hidden equals missing); whoever
         * runs this command holds the data directory and may know why. */
        if (err.code == CORDON_ERR_NOT_FOUND && !subject && !info.asserted_principals)
            fprintf(stderr,
                    "cordon search: collection \"%s\" takes only subjects of the "
                    "permission model: search with --subject ID, or create it with "
                    "--asserted-principals\n",
                    coll);
        goto done;
    }
    print_result(r, json);
    rc = 0;
done:
    cordon_result_free(r);
    cordon_close(db);
    if (all)
        cdn_free(all);
    else
        cdn_free(qv);
    cdn_free(prin);
    return rc;
}
