/* main.c: cordon-bench, the benchmark program (`cordon bench NAME ...` runs it), dispatching to
 * one benchmark per name. Relies on each bench/bench_NAME.h exporting bench_NAME_main. */
#include "bench_audit.h"
#include "bench_authz.h"
#include "bench_churn.h"
#include "bench_hnsw.h"
#include "bench_load.h"
#include "bench_permissions.h"
#include "bench_puts.h"
#include "bench_quant.h"
#include "bench_rebac.h"
#include "bench_repair.h"
#include "bench_scan.h"
#include "bench_soak.h"
#include "bench_text.h"
#include "bench_writers.h"

#include <stdio.h>
#include <string.h>

/* Add one line per benchmark (and its #include above). */
static const struct bench_entry {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *what;
} benches[] = {
    {"audit", bench_audit_main, "search latency with the retrieval audit on and off"},
    {"authz", bench_authz_main, "is-authorized and view latency vs Casbin"},
    {"hnsw", bench_hnsw_main, "HNSW build, memory, save/load, recall and latency under filters"},
    {"text", bench_text_main, "BM25 / kNN / hybrid quality and latency on BEIR corpora, vs FTS5"},
    {"scan", bench_scan_main, "exact scan of an allowed set vs a scalar loop"},
    {"quant", bench_quant_main, "exact scan with 8-bit pruning vs the float exact scan"},
    {"permissions", bench_permissions_main,
     "recall, leaks, latency under hierarchical ACLs vs peers"},
    {"writers", bench_writers_main, "search p50/p99 beside permission and bulk writers"},
    {"load", bench_load_main, "concurrent users over HTTP (cordon serve): throughput, leaks"},
    {"soak", bench_soak_main, "mixed reads and writes for a set time: memory, sizes, latency"},
    {"churn", bench_churn_main,
     "replacing chunks over time: recall, latency, sizes vs a fresh build"},
    {"repair", bench_repair_main,
     "the graph alone under replaces: repaired vs fresh, recall and visits at each ef"},
    {"puts", bench_puts_main, "batches of writes into an existing data directory, timed"},
    {"rebac", bench_rebac_main,
     "relationship tuples: check, lookup-resources, share, unshare, move at scale"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: cordon bench NAME [options]   (cordon bench NAME --help for options)\n");
    for (const struct bench_entry *b = benches; b->name; b++)
        fprintf(f, "  %-12s %s\n", b->name, b->what);
}

/* argv[1] names the benchmark; it receives argv from there on, as `cordon bench` passed it. */
int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (const struct bench_entry *b = benches; b->name; b++)
        if (!strcmp(argv[1], b->name))
            return b->main(argc - 1, argv + 1);
    fprintf(stderr, "cordon bench: unknown benchmark '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
