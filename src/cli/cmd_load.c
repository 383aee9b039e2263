/* cmd_load.c: `cordon load`: create a collection if asked and load JSON lines into it.
 * Relies on cli/loader. */
#include "base/mem.h"
#include "cli/cli.h"
#include "cli/loader.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char usage[] =
    "usage: cordon load --data DIR --collection NAME [options] FILE.jsonl\n"
    "       cordon load --data DIR --collection NAME --beir CORPUS_DIR [options]\n\n"
    "Loads one JSON object a line: {\"id\" (or \"_id\"), text fields by name (or under\n"
    "\"fields\"), \"vector\": [...], \"metadata\": {...} (metadata fields may also stand at the\n"
    "top level), \"allowed\" (or the collection's ACL field): [principals], \"denied\":\n"
    "[principals]}. Any other key is an error. A principal is user:NAME, service:NAME,\n"
    "group:NAME, role:NAME or a plain group name. The whole file is checked before anything\n"
    "is written: a bad line loads nothing.\n\n"
    "  --vectors FILE.fvecs    vectors for lines without \"vector\": row i for line i\n"
    "  --beir DIR              DIR/corpus.jsonl with DIR/use-lite/corpus.fvecs if present,\n"
    "                          text fields title and text\n"
    "  --allow P1,P2           principals for lines that name none (else nobody may read them)\n"
    "  --create                create the collection first (with --dim, --metric, --text-fields,\n"
    "                          --analyzer, --asserted-principals)\n"
    "  --analyzer A            standard (default), english, english:snowball, whitespace, keyword\n"
    "  --asserted-principals   let searches present principals (cordon search --as) instead of\n"
    "                          only subjects of the permission model\n"
    "  --int8-scan             keep 8-bit codes so exact scans of large readable sets run\n"
    "                          faster (results stay exact; about dim + 8 bytes a row)\n"
    "  --bm25-global-stats     BM25 statistics over every chunk (Elasticsearch's scores; for\n"
    "                          single-tenant data) instead of each subject's readable chunks\n"
    "  --dim N                 vector dimension (default: the --vectors file's)\n"
    "  --metric M              cosine (default), dot_product or l2_norm\n"
    "  --text-fields A,B       text field names (default title,text)\n"
    "  --batch N               chunks per transaction (default 1000)\n"
    "  --quiet                 no progress line\n";

static int parse_metric(const char *s, cordon_metric *m)
{
    if (!strcmp(s, "cosine"))
        *m = CORDON_METRIC_COSINE;
    else if (!strcmp(s, "dot_product") || !strcmp(s, "dot"))
        *m = CORDON_METRIC_DOT;
    else if (!strcmp(s, "l2_norm") || !strcmp(s, "l2"))
        *m = CORDON_METRIC_L2;
    else {
        fprintf(stderr, "cordon load: --metric must be cosine, dot_product or l2_norm; got "
                        "\"%s\"\n", s);
        return -1;
    }
    return 0;
}

static uint32_t fvecs_dim(const char *path)
{
    FILE *f = fopen(path, "rb");
    int32_t d = 0;
    if (f) {
        if (fread(&d, 4, 1, f) != 1)
            d = 0;
        fclose(f);
    }
    return d > 0 ? (uint32_t)d : 0;
}

int cli_load(int argc, char **argv)
{
    static const struct option opts[] = {
        {"data", 1, 0, 'd'},   {"collection", 1, 0, 'c'}, {"vectors", 1, 0, 'v'},
        {"beir", 1, 0, 'B'},   {"allow", 1, 0, 'a'},      {"create", 0, 0, 'C'},
        {"dim", 1, 0, 'D'},    {"metric", 1, 0, 'm'},     {"text-fields", 1, 0, 't'},
        {"batch", 1, 0, 'b'},  {"quiet", 0, 0, 'q'},      {"help", 0, 0, 'h'},
        {"analyzer", 1, 0, 'A'}, {"asserted-principals", 0, 0, 'P'}, {"int8-scan", 0, 0, 'I'},
        {"bm25-global-stats", 0, 0, 'G'}, {0, 0, 0, 0}};
    const char *dir = NULL, *fields = "title,text", *beir = NULL;
    char beir_corpus[4096], beir_vecs[4096];
    loader_opts_t lo = {.progress = 1};
    cordon_collection_spec spec = {.metric = CORDON_METRIC_COSINE};
    size_t dim = 0, nallow = 0, nfields = 0, loaded = 0;
    char **allow = NULL, **tf = NULL;
    int create = 0, c, rc = 1;
    cordon_t *db = NULL;
    cordon_error err;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'c': lo.collection = optarg; break;
        case 'v': lo.fvecs = optarg; break;
        case 'B': beir = optarg; break;
        case 'a': cdn_free(allow); allow = cli_split(optarg, &nallow); break;
        case 'C': create = 1; break;
        case 'D': if (cli_parse_size("--dim", optarg, &dim)) return 2; break;
        case 'm': if (parse_metric(optarg, &spec.metric)) return 2; break;
        case 't': fields = optarg; break;
        case 'b': if (cli_parse_size("--batch", optarg, &lo.batch)) return 2; break;
        case 'q': lo.progress = 0; break;
        case 'A': spec.analyzer = optarg; break;
        case 'P': spec.asserted_principals = 1; break;
        case 'I': spec.int8_scan = 1; break;
        case 'G': spec.bm25_global_stats = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (beir) {
        struct stat st;
        snprintf(beir_corpus, sizeof beir_corpus, "%s/corpus.jsonl", beir);
        snprintf(beir_vecs, sizeof beir_vecs, "%s/use-lite/corpus.fvecs", beir);
        lo.jsonl = beir_corpus;
        if (!lo.fvecs && stat(beir_vecs, &st) == 0)
            lo.fvecs = beir_vecs;
    } else if (optind < argc) {
        lo.jsonl = argv[optind];
    }
    if (!lo.collection || !lo.jsonl) {
        fprintf(stderr, "cordon load: give --collection and a FILE (or --beir DIR)\n%s", usage);
        goto done;
    }
    if (cli_open(dir, !create, &db))
        goto done;
    lo.allow = (const char *const *)allow;
    lo.n_allow = nallow;
    if (create) {
        tf = cli_split(fields, &nfields);
        spec.name = lo.collection;
        spec.dim = dim ? (uint32_t)dim : lo.fvecs ? fvecs_dim(lo.fvecs) : 0;
        spec.text_fields = (const char *const *)tf;
        spec.n_text_fields = nfields;
        if (cordon_collection_create(db, &spec, &err)) {
            cli_fail("load", &err);
            goto done;
        }
    }
    if (!nallow && lo.progress)
        fprintf(stderr, "cordon load: note: lines without \"allowed\" will be readable by "
                        "nobody (give --allow to change that)\n");
    if (loader_run(db, &lo, &loaded, &err)) {
        if (loaded)
            fprintf(stderr, "cordon load: %s (%zu chunks were loaded before this)\n",
                    err.message, loaded);
        else
            fprintf(stderr, "cordon load: %s (nothing was loaded)\n", err.message);
        if (create) /* leave no half-made collection behind */
            cordon_collection_drop(db, lo.collection, NULL);
        goto done;
    }
    printf("loaded %zu chunks into \"%s\"; revision %llu\n", loaded, lo.collection,
           (unsigned long long)cordon_revision(db));
    rc = 0;
done:
    cordon_close(db);
    cdn_free(allow);
    cdn_free(tf);
    return rc;
}
