/* bench_puts.c: `cordon bench puts`. Opens a data directory another benchmark left (for
 * example `cordon bench permissions --data DIR --keep`), then puts batches of new generated
 * chunks into one of its collections through the public API and prints the seconds of each
 * batch and the process's resident and huge-page memory before and after. It adds chunks to
 * the directory: run it on a copy. Relies on cordon.h, bench_gen (the rows) and bench_util. */
#include "bench_puts.h"

#include "base/clock.h"
#include "bench_gen.h"
#include "bench_util.h"
#include "cordon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: cordon bench puts --data DIR [--collection NAME] [--batches N]\n"
               "                         [--batch B] [--seed S]\n"
               "  puts N batches of B new generated chunks (topics, the collection's dimension,\n"
               "  readable by one principal of their own) into collection NAME of the data\n"
               "  directory DIR and prints each batch's seconds and the resident memory (huge\n"
               "  pages apart) after the open and at the end. DIR gains the chunks: use a copy.\n"
               "  defaults: --collection perm --batches 10 --batch 500 --seed 4242\n");
}

/* kB of field in /proc/self/smaps_rollup, or -1 (huge pages: bench_rss_mb reports only RSS). */
static long rollup_kb(const char *field)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n))
            kb = strtol(line + n, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

static void print_memory(const char *when)
{
    printf("# %s: resident %.0f MB, of it anonymous huge pages %.0f MB\n", when, bench_rss_mb(),
           (double)rollup_kb("AnonHugePages:") / 1024);
}

int bench_puts_main(int argc, char **argv)
{
    const char *dir = NULL, *coll = "perm";
    long batches = 10, batch = 500, seed = 4242;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!v || strncmp(a, "--", 2)) {
            usage(stderr);
            return 2;
        }
        i++;
        if (!strcmp(a, "--data"))
            dir = v;
        else if (!strcmp(a, "--collection"))
            coll = v;
        else if (!strcmp(a, "--batches"))
            batches = strtol(v, NULL, 10);
        else if (!strcmp(a, "--batch"))
            batch = strtol(v, NULL, 10);
        else if (!strcmp(a, "--seed"))
            seed = strtol(v, NULL, 10);
        else {
            fprintf(stderr, "cordon bench puts: unknown option %s\n", a);
            return 2;
        }
    }
    if (!dir || batches < 1 || batch < 1 || batch > 100000) {
        fprintf(stderr, "cordon bench puts: --data DIR is required; --batches and --batch "
                        "must be positive (--batch at most 100,000)\n");
        return 2;
    }
    cordon_t *db = NULL;
    cordon_error e = {0};
    cordon_collection_info info;
    uint64_t t0 = cdn_clock_ns();
    if (cordon_open(dir, NULL, &db, &e) || cordon_collection_info_get(db, coll, &info, &e)) {
        fprintf(stderr, "cordon bench puts: %s\n", e.message);
        cordon_close(db);
        return 1;
    }
    if (info.dim == 0) {
        fprintf(stderr, "cordon bench puts: collection %s holds no vectors\n", coll);
        cordon_close(db);
        return 1;
    }
    printf("# %s, collection %s (%u dimensions), opened in %.2f s\n", dir, coll, info.dim,
           (double)(cdn_clock_ns() - t0) / 1e9);
    print_memory("after the open");
    bench_gen_t g;
    bench_gen_init(&g, BENCH_GEN_TOPICS, info.dim, (uint64_t)seed);
    float *rows = malloc(sizeof(float) * (size_t)batch * info.dim);
    uint32_t *cl = malloc(sizeof(uint32_t) * (size_t)batch);
    cordon_chunk *ch = calloc((size_t)batch, sizeof *ch);
    char *ids = malloc((size_t)batch * 96);
    const char *acl[1] = {"bench-puts"};
    int rc = rows && cl && ch && ids ? 0 : 1;
    printf("batch  seconds\n");
    for (long b = 0; b < batches && !rc; b++) {
        bench_gen_rows_of(&g, rows, (size_t)batch, cl);
        for (long i = 0; i < batch; i++) {
            snprintf(ids + i * 96, 96, "bench-puts-%ld-%ld-%ld", seed, b, i);
            ch[i] = (cordon_chunk){.id = ids + i * 96,
                                   .vector = rows + (size_t)i * info.dim,
                                   .allowed = acl,
                                   .n_allowed = 1};
        }
        uint64_t t1 = cdn_clock_ns();
        if ((rc = cordon_put(db, coll, ch, (size_t)batch, NULL, &e)) != 0)
            fprintf(stderr, "cordon bench puts: %s\n", e.message);
        else
            printf("%5ld  %7.3f\n", b, (double)(cdn_clock_ns() - t1) / 1e9);
        fflush(stdout);
    }
    print_memory("at the end");
    bench_gen_free(&g);
    free(rows);
    free(cl);
    free(ch);
    free(ids);
    cordon_close(db);
    return rc ? 1 : 0;
}
