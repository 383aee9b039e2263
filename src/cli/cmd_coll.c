/* cmd_coll.c: `cordon list`, `cordon info`, `cordon drop` and `cordon compact`: the
 * collections of a data directory, their settings and sizes. Relies on the public API only. */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char list_usage[] =
    "usage: cordon list --data DIR [--json]\n\n"
    "Lists the collections: name, live chunks, vector dimension and metric, text fields.\n"
    "Only reads.\n";

static const char info_usage[] =
    "usage: cordon info --data DIR --collection NAME [--json]\n\n"
    "Prints a collection's settings (vectors, text fields and analyzer, metadata fields,\n"
    "ACL field, HNSW and BM25 settings) and sizes (chunks, rows, the vector file, and the\n"
    "memory of the graph, the codes and the ACL index). Only reads.\n";

static const char drop_usage[] =
    "usage: cordon drop --data DIR --collection NAME\n\n"
    "Drops the collection with every chunk in it, for good (one transaction).\n";

static const char compact_usage[] =
    "usage: cordon compact --data DIR [--collection NAME]\n\n"
    "Gives back the space deleted and replaced chunks hold: each collection's live rows are\n"
    "renumbered and its vector file, graph, codes and text index rewritten with them only.\n"
    "Rows are numbered by ACL, so each group's rows lie together (faster filtered scans): a\n"
    "collection loaded with its groups interleaved is renumbered even with no row dead.\n"
    "Every collection when no --collection is given. Needs room on disk for a second copy of\n"
    "the collection's files while it runs; a crash leaves each collection as before or after.\n";

static const char *metric_name(cordon_metric m)
{
    return m == CORDON_METRIC_DOT ? "dot_product" : m == CORDON_METRIC_L2 ? "l2_norm" : "cosine";
}

static const char *kind_name(cordon_meta_kind k)
{
    switch (k) {
    case CORDON_META_KEYWORD: return "keyword";
    case CORDON_META_NUMBER: return "number";
    case CORDON_META_DATE: return "date";
    case CORDON_META_BOOL: return "bool";
    }
    return "?";
}

/* The options every command here takes; json and coll may be NULL when not accepted, and a
 * --collection is required when need_coll is set. */
static int parse(int argc, char **argv, const char *usage, const char **dir, const char **coll,
                 int need_coll, int *json)
{
    static const struct option opts[] = {{"data", 1, 0, 'd'},
                                         {"collection", 1, 0, 'c'},
                                         {"json", 0, 0, 'j'},
                                         {"help", 0, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'd')
            *dir = optarg;
        else if (c == 'c' && coll)
            *coll = optarg;
        else if (c == 'j' && json)
            *json = 1;
        else {
            fputs(usage, c == 'h' ? stdout : stderr);
            return c == 'h' ? 0 : 2;
        }
    }
    if (optind < argc || (need_coll && !*coll)) {
        fprintf(stderr, "cordon %s: %s\n%s", argv[0],
                optind < argc ? "unexpected argument" : "give --collection NAME", usage);
        return 2;
    }
    return -1; /* go on */
}

static void print_fields(const cordon_collection_info *ci)
{
    for (size_t i = 0; i < ci->n_text_fields; i++)
        printf("%s%s", i ? "," : "", ci->text_fields[i]);
    if (!ci->n_text_fields)
        printf("-");
}

int cli_list(int argc, char **argv)
{
    const char *dir = NULL;
    cordon_collection_info *all = NULL;
    cordon_t *db = NULL;
    cordon_error err;
    size_t n = 0;
    int json = 0, rc = parse(argc, argv, list_usage, &dir, NULL, 0, &json);
    if (rc >= 0)
        return rc;
    if (cli_open(dir, 1, &db))
        return 1;
    if (cordon_collection_list(db, &all, &n, &err)) {
        cordon_close(db);
        return cli_fail("list", &err);
    }
    if (json)
        printf("[");
    for (size_t i = 0; i < n; i++) {
        const cordon_collection_info *ci = &all[i];
        if (json)
            printf("%s{\"name\":\"%s\",\"chunks\":%llu,\"dim\":%u,\"metric\":\"%s\"}", i ? "," : "",
                   ci->name, (unsigned long long)ci->chunks, ci->dim,
                   metric_name(ci->metric)); /* names are [a-z0-9_-]: nothing to escape */
        else {
            printf("%-24s %10llu chunks  dim %-5u %-12s text ", ci->name,
                   (unsigned long long)ci->chunks, ci->dim,
                   ci->dim ? metric_name(ci->metric) : "-");
            print_fields(ci);
            printf("\n");
        }
    }
    if (json)
        printf("]\n");
    else if (!n)
        printf("no collections (create one with cordon load --create)\n");
    cordon_free(all);
    cordon_close(db);
    return 0;
}

static void print_info(const cordon_collection_info *ci)
{
    printf("collection         %s\n", ci->name);
    printf("chunks             %llu (rows written %llu)\n", (unsigned long long)ci->chunks,
           (unsigned long long)ci->rows);
    if (ci->dim)
        printf("vectors            %u-d, %s%s\n", ci->dim, metric_name(ci->metric),
               ci->int8_scan ? ", 8-bit and 1-bit codes" : "");
    else
        printf("vectors            none\n");
    printf("text fields        ");
    print_fields(ci);
    printf(" (analyzer %s)\n", ci->analyzer);
    printf("metadata fields    ");
    for (size_t i = 0; i < ci->n_meta_fields; i++)
        printf("%s%s:%s", i ? "," : "", ci->meta_fields[i].name,
               kind_name(ci->meta_fields[i].kind));
    printf("%s\n", ci->n_meta_fields ? "" : "-");
    printf("ACL field          %s\n", ci->acl_field);
    printf("subjects           %s\n", ci->asserted_principals
                                          ? "model subjects and asserted principals"
                                          : "model subjects only");
    printf("BM25 statistics    %s\n",
           ci->bm25_global_stats ? "over every chunk" : "over each subject's readable chunks");
    if (ci->dim) {
        printf("HNSW               m %u, ef_construction %u, ef_search ", ci->hnsw_m,
               ci->hnsw_ef_construction);
        if (ci->hnsw_ef_search)
            printf("%u\n", ci->hnsw_ef_search);
        else
            printf("calibrated (%u)\n", ci->hnsw_ef_calibrated);
        printf("vector file        %.1f MiB\n", ci->vector_bytes / 1048576.0);
        printf("graph memory       %.1f MiB\n", ci->graph_bytes / 1048576.0);
        if (ci->int8_scan)
            printf("codes memory       %.1f MiB\n", ci->codes_bytes / 1048576.0);
    }
    printf("ACL index memory   %.1f MiB\n", ci->acl_bytes / 1048576.0);
}

static void print_info_json(const cordon_collection_info *ci)
{
    printf("{\"name\":\"%s\",\"chunks\":%llu,\"rows\":%llu,\"dim\":%u,\"metric\":\"%s\","
           "\"int8_scan\":%s,\"text_fields\":[",
           ci->name, (unsigned long long)ci->chunks, (unsigned long long)ci->rows, ci->dim,
           metric_name(ci->metric), ci->int8_scan ? "true" : "false");
    for (size_t i = 0; i < ci->n_text_fields; i++) {
        printf("%s", i ? "," : "");
        cli_print_json_str(ci->text_fields[i]);
    }
    printf("],\"analyzer\":\"%s\",\"metadata_fields\":{", ci->analyzer);
    for (size_t i = 0; i < ci->n_meta_fields; i++) {
        printf("%s", i ? "," : "");
        cli_print_json_str(ci->meta_fields[i].name);
        printf(":\"%s\"", kind_name(ci->meta_fields[i].kind));
    }
    printf("},\"acl_field\":\"%s\",\"asserted_principals\":%s,\"bm25_global_stats\":%s,"
           "\"hnsw\":{\"m\":%u,\"ef_construction\":%u,\"ef_search\":%u,\"ef_calibrated\":%u},"
           "\"bytes\":{\"vectors\":%llu,\"graph\":%llu,\"codes\":%llu,\"acl\":%llu}}\n",
           ci->acl_field, ci->asserted_principals ? "true" : "false",
           ci->bm25_global_stats ? "true" : "false", ci->hnsw_m, ci->hnsw_ef_construction,
           ci->hnsw_ef_search, ci->hnsw_ef_calibrated, (unsigned long long)ci->vector_bytes,
           (unsigned long long)ci->graph_bytes, (unsigned long long)ci->codes_bytes,
           (unsigned long long)ci->acl_bytes);
}

int cli_info(int argc, char **argv)
{
    const char *dir = NULL, *coll = NULL;
    cordon_collection_info ci;
    cordon_t *db = NULL;
    cordon_error err;
    int json = 0, rc = parse(argc, argv, info_usage, &dir, &coll, 1, &json);
    if (rc >= 0)
        return rc;
    if (cli_open(dir, 1, &db))
        return 1;
    rc = cordon_collection_info_get(db, coll, &ci, &err);
    cordon_close(db);
    if (rc)
        return cli_fail("info", &err);
    if (json)
        print_info_json(&ci);
    else
        print_info(&ci);
    return 0;
}

int cli_drop(int argc, char **argv)
{
    const char *dir = NULL, *coll = NULL;
    cordon_t *db = NULL;
    cordon_error err;
    int rc = parse(argc, argv, drop_usage, &dir, &coll, 1, NULL);
    if (rc >= 0)
        return rc;
    if (cli_open(dir, 1, &db))
        return 1;
    rc = cordon_collection_drop(db, coll, &err);
    if (rc == 0)
        printf("dropped \"%s\"; revision %llu\n", coll, (unsigned long long)cordon_revision(db));
    cordon_close(db);
    return rc ? cli_fail("drop", &err) : 0;
}

static int compact_one(cordon_t *db, const char *name)
{
    cordon_compact_stats st;
    cordon_error err;
    if (cordon_collection_compact(db, name, &st, &err))
        return cli_fail("compact", &err);
    if (st.compacted)
        printf("%-24s %llu rows -> %llu, database file %.1f -> %.1f MB (%.1f s, writes held "
               "%.1f s)\n",
               name, (unsigned long long)st.rows_before, (unsigned long long)st.rows_after,
               (double)st.db_bytes_before / 1e6, (double)st.db_bytes_after / 1e6, st.ms / 1e3,
               st.writes_held_ms / 1e3);
    else
        printf("%-24s %llu rows, none dead and all in order: nothing to do\n", name,
               (unsigned long long)st.rows_before);
    return 0;
}

int cli_compact(int argc, char **argv)
{
    const char *dir = NULL, *coll = NULL;
    cordon_collection_info *all = NULL;
    cordon_t *db = NULL;
    cordon_error err;
    size_t n = 0;
    int rc = parse(argc, argv, compact_usage, &dir, &coll, 0, NULL);
    if (rc >= 0)
        return rc;
    if (cli_open(dir, 1, &db))
        return 1;
    if (coll)
        rc = compact_one(db, coll);
    else if (cordon_collection_list(db, &all, &n, &err))
        rc = cli_fail("compact", &err);
    else
        for (size_t i = 0; i < n && rc <= 0; i++)
            rc = compact_one(db, all[i].name);
    cordon_free(all);
    cordon_close(db);
    return rc > 0 ? rc : 0;
}
