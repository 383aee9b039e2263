/* fuzz_stored.c: any bytes read back as stored state (a graph checkpoint, a text-index
 * checkpoint, a chunk record): refused or loaded, never a crash, an overread or a leak. These
 * are the files a crash or a disk can leave damaged, and an open reads them all.
 * Relies on libFuzzer, vector/hnsw, text/textidx and query/chunkrec. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "query/chunkrec.h"
#include "text/textidx.h"
#include "vector/hnsw.h"

/* Seeds: a real graph and a real text index, saved where CORDON_FUZZ_SEEDS says, each behind
 * its selector byte, so that mutations start from files that load. */
static void write_seed(const char *dir, const char *name, uint8_t sel, const char *src)
{
    char path[4096];
    FILE *in = fopen(src, "rb"), *out;
    int c;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!in || !(out = fopen(path, "wb"))) {
        if (in)
            fclose(in);
        return;
    }
    fputc(sel, out);
    while ((c = fgetc(in)) != EOF)
        fputc(c, out);
    fclose(in);
    fclose(out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("CORDON_FUZZ_SEEDS");
    char path[64];
    hnsw_t *h;
    textidx_t *t;
    cdn_err_t err;
    (void)argc;
    (void)argv;
    if (!dir)
        return 0;
    snprintf(path, sizeof path, "/tmp/cordon-fuzz-seed.%ld", (long)getpid());
    if (hnsw_create(hnsw_params_default(), VEC_METRIC_L2, 4, &h) == CDN_OK) {
        static const float rows[6][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0},
                                         {0, 0, 0, 1}, {1, 1, 0, 0}, {0, 1, 1, 0}};
        vec_view_t v = {.base = &rows[0][0], .stride = 4, .dim = 4, .count = 6};
        for (uint32_t i = 0; i < 6; i++)
            hnsw_insert(h, &v, i);
        if (hnsw_save(h, path, 7) == CDN_OK)
            write_seed(dir, "graph", 0, path);
        hnsw_free(h);
    }
    if (textidx_create(NULL, &t, &err) == CDN_OK) {
        textidx_value_t v[] = {{"title", "alpha beta", 10, 0}, {"dept", "hr", 2, 0}};
        if (textidx_add_field(t, "title", TEXTIDX_TEXT, NULL, &err) == CDN_OK &&
            textidx_add_field(t, "dept", TEXTIDX_KEYWORD, NULL, &err) == CDN_OK &&
            textidx_add_doc(t, 0, v, 2, &err) == CDN_OK &&
            textidx_add_doc(t, 3, v, 1, &err) == CDN_OK && textidx_save(t, path, 7, &err) == CDN_OK)
            write_seed(dir, "text", 1, path);
        textidx_free(t);
    }
    unlink(path);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    FILE *f;
    uint64_t rev;
    cdn_err_t err;
    if (size < 1)
        return 0;
    if (data[0] % 3 == 2) {
        uint32_t row;
        json_t *obj = NULL;
        if (chunkrec_decode(data + 1, size - 1, &row, &obj) == CDN_OK)
            json_decref(obj);
        return 0;
    }
    snprintf(path, sizeof path, "/tmp/cordon-fuzz-stored.%ld", (long)getpid());
    if (!(f = fopen(path, "wb")) || fwrite(data + 1, 1, size - 1, f) != size - 1 || fclose(f))
        abort();
    if (data[0] % 3 == 0) {
        hnsw_t *h = NULL;
        if (hnsw_load(path, &h, &rev) == CDN_OK)
            hnsw_free(h);
    } else {
        textidx_t *t = NULL;
        if (textidx_load(path, &t, &rev, &err) == CDN_OK)
            textidx_free(t);
    }
    unlink(path);
    return 0;
}
