/* cmd_load.c: `cordon load`: create a collection if asked and load JSON lines into it.
 * Relies on cli/loader. */
#include "base/mem.h"
#include "cli/cli.h"
#include "cli/load_survey.h"
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
    "[principals], \"tenant\": \"NAME\" (only that tenant's subjects may read it), \"labels\":\n"
    "[names] (subjects the model denies \"label:NAME\" may not), \"object\": \"TYPE:ID\" (whoever\n"
    "holds view on it in the relationship tuples may read it)}. Any other key is an error. A "
    "principal is user:NAME, service:NAME,\n"
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
    "  --int8-scan             keep 8-bit and 1-bit codes of the vectors whatever the\n"
    "                          dimension (the default from 128 dimensions up: exact scans\n"
    "                          read a quarter of the bytes, the float rows stay on disk)\n"
    "  --no-int8-scan          keep float rows only, all of them in memory\n"
    "  --bm25-global-stats     BM25 statistics over every chunk (Elasticsearch's scores; for\n"
    "                          single-tenant data) instead of each subject's readable chunks\n"
    "  --dim N                 vector dimension (default: the --vectors file's, else the\n"
    "                          length of the file's first \"vector\")\n"
    "  --keyword A,B           metadata fields to index for filters (term, terms, range,\n"
    "  --number A,B            exists), by kind; without any of these four, --create\n"
    "  --date A,B              declares the metadata keys of the file's first 10,000 lines\n"
    "  --bool A,B              whose values are all strings, numbers or booleans\n"
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
        fprintf(stderr,
                "cordon load: --metric must be cosine, dot_product or l2_norm; got "
                "\"%s\"\n",
                s);
        return -1;
    }
    return 0;
}

/* Metadata fields declared with --keyword, --number, --date and --bool. */
typedef struct meta_decl {
    cordon_meta_field f[CORDON_META_FIELDS_MAX];
    char names[CORDON_META_FIELDS_MAX][CORDON_NAME_MAX + 1];
    size_t n;
} meta_decl_t;

static int meta_add(meta_decl_t *m, const char *csv, cordon_meta_kind kind)
{
    size_t n = 0;
    char **names = cli_split(csv, &n);
    for (size_t i = 0; names && i < n; i++) {
        if (m->n == CORDON_META_FIELDS_MAX || strlen(names[i]) > CORDON_NAME_MAX) {
            fprintf(stderr, "cordon load: metadata field \"%s\": %s\n", names[i],
                    m->n == CORDON_META_FIELDS_MAX ? "more than 32 metadata fields"
                                                   : "longer than 128 bytes");
            cdn_free(names);
            return -1;
        }
        snprintf(m->names[m->n], sizeof m->names[m->n], "%s", names[i]);
        m->f[m->n] = (cordon_meta_field){.name = m->names[m->n], .kind = kind};
        m->n++;
    }
    int ok = names != NULL;
    cdn_free(names);
    return ok ? 0 : -1;
}

static const char *kind_word(cordon_meta_kind k)
{
    return k == CORDON_META_NUMBER ? "number"
           : k == CORDON_META_DATE ? "date"
           : k == CORDON_META_BOOL ? "bool"
                                   : "keyword";
}

/* What --create takes from the file when the options do not say: the vector dimension (when
 * want_dim) and, without --keyword/--number/--date/--bool, the metadata fields. Says on
 * stderr what it inferred, so the user can declare it instead. */
static int survey_for_create(const loader_opts_t *lo, cordon_collection_spec *spec,
                             meta_decl_t *meta, int want_dim, cordon_error *err)
{
    load_survey_t s;
    int rc;
    if (meta->n) {
        spec->meta_fields = meta->f;
        spec->n_meta_fields = meta->n;
    }
    if (!want_dim && meta->n)
        return CORDON_OK;
    if ((rc = load_survey(lo->jsonl, 10000, &s, err)) != 0)
        return rc;
    if (want_dim && s.dim) {
        spec->dim = s.dim;
        if (lo->progress)
            fprintf(stderr,
                    "cordon load: vectors of %u values (the first line's; --dim to "
                    "say)\n",
                    s.dim);
    }
    if (meta->n || !s.n_meta)
        return CORDON_OK;
    for (size_t i = 0; i < s.n_meta; i++) {
        memcpy(meta->names[i], s.meta_names[i], sizeof meta->names[i]);
        meta->f[i] = (cordon_meta_field){.name = meta->names[i], .kind = s.meta_kinds[i]};
    }
    meta->n = s.n_meta;
    spec->meta_fields = meta->f;
    spec->n_meta_fields = meta->n;
    if (lo->progress) {
        fprintf(stderr, "cordon load: metadata fields for filters:");
        for (size_t i = 0; i < meta->n; i++)
            fprintf(stderr, "%s %s:%s", i ? "," : "", meta->names[i], kind_word(meta->f[i].kind));
        fprintf(stderr, "%s (declare them with --keyword, --number, --date, --bool)\n",
                s.meta_left_out ? "; others of mixed or nested kinds left out" : "");
    }
    return CORDON_OK;
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
    static const struct option opts[] = {{"data", 1, 0, 'd'},
                                         {"collection", 1, 0, 'c'},
                                         {"vectors", 1, 0, 'v'},
                                         {"beir", 1, 0, 'B'},
                                         {"allow", 1, 0, 'a'},
                                         {"create", 0, 0, 'C'},
                                         {"dim", 1, 0, 'D'},
                                         {"metric", 1, 0, 'm'},
                                         {"text-fields", 1, 0, 't'},
                                         {"batch", 1, 0, 'b'},
                                         {"quiet", 0, 0, 'q'},
                                         {"help", 0, 0, 'h'},
                                         {"analyzer", 1, 0, 'A'},
                                         {"asserted-principals", 0, 0, 'P'},
                                         {"int8-scan", 0, 0, 'I'},
                                         {"no-int8-scan", 0, 0, 'i'},
                                         {"bm25-global-stats", 0, 0, 'G'},
                                         {"keyword", 1, 0, 'K'},
                                         {"number", 1, 0, 'N'},
                                         {"date", 1, 0, 'T'},
                                         {"bool", 1, 0, 'O'},
                                         {0, 0, 0, 0}};
    const char *dir = NULL, *fields = "title,text", *beir = NULL;
    char beir_corpus[4096], beir_vecs[4096];
    loader_opts_t lo = {.progress = 1};
    cordon_collection_spec spec = {.metric = CORDON_METRIC_COSINE};
    size_t dim = 0, nallow = 0, nfields = 0, loaded = 0;
    char **allow = NULL, **tf = NULL;
    meta_decl_t meta = {0};
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
        case 'a':
            cdn_free(allow);
            allow = cli_split(optarg, &nallow);
            break;
        case 'C': create = 1; break;
        case 'D':
            if (cli_parse_size("--dim", optarg, &dim))
                return 2;
            break;
        case 'm':
            if (parse_metric(optarg, &spec.metric))
                return 2;
            break;
        case 't': fields = optarg; break;
        case 'b':
            if (cli_parse_size("--batch", optarg, &lo.batch))
                return 2;
            break;
        case 'q': lo.progress = 0; break;
        case 'A': spec.analyzer = optarg; break;
        case 'P': spec.asserted_principals = 1; break;
        case 'I': spec.int8_scan = 1; break;
        case 'i': spec.int8_scan = -1; break;
        case 'G': spec.bm25_global_stats = 1; break;
        case 'K':
        case 'N':
        case 'T':
        case 'O':
            if (meta_add(&meta, optarg,
                         c == 'K'   ? CORDON_META_KEYWORD
                         : c == 'N' ? CORDON_META_NUMBER
                         : c == 'T' ? CORDON_META_DATE
                                    : CORDON_META_BOOL))
                return 2;
            break;
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
        if (survey_for_create(&lo, &spec, &meta, !dim && !lo.fvecs, &err)) {
            cli_fail("load", &err);
            goto done;
        }
        if (cordon_collection_create(db, &spec, &err)) {
            cli_fail("load", &err);
            goto done;
        }
    }
    if (loader_run(db, &lo, &loaded, &err)) {
        if (loaded)
            fprintf(stderr, "cordon load: %s (%zu chunks were loaded before this)\n", err.message,
                    loaded);
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
