/* bench_text_data.c: reading BEIR corpora (jansson per line), qrels, fvecs, and the metrics.
 * Relies on jansson and libc; loads everything in memory (corpora here are a few MB). */
#include "bench_text_data.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "bench_load_data.h"

typedef struct idmap {
    const char *id;
    uint32_t idx;
} idmap_t;

static int cmp_idmap(const void *a, const void *b)
{
    return strcmp(((const idmap_t *)a)->id, ((const idmap_t *)b)->id);
}

static long idmap_find(const idmap_t *m, size_t n, const char *id)
{
    idmap_t key = {id, 0};
    const idmap_t *r = bsearch(&key, m, n, sizeof *m, cmp_idmap);
    return r ? (long)r->idx : -1;
}

static idmap_t *idmap_build(char **ids, size_t n)
{
    idmap_t *m = cdn_malloc((n ? n : 1) * sizeof *m);
    for (size_t i = 0; m && i < n; i++)
        m[i] = (idmap_t){ids[i], (uint32_t)i};
    if (m)
        qsort(m, n, sizeof *m, cmp_idmap);
    return m;
}

static char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return cdn_strdup(s ? s : "");
}

/* Reads a jsonl file: _id and the named text keys (k2 may be NULL). */
static int read_jsonl(const char *path, char ***ids, char ***a, const char *ka, char ***b,
                      const char *kb, size_t *n)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bench text: cannot open %s\n", path);
        return -1;
    }
    char *line = NULL;
    size_t lcap = 0, cap = 0, c1, c2;
    *n = 0;
    while (getline(&line, &lcap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        if (!o)
            continue;
        c1 = c2 = cap;
        cdn_grow((void **)ids, &cap, *n + 1, sizeof **ids);
        cdn_grow((void **)a, &c1, *n + 1, sizeof **a);
        if (b)
            cdn_grow((void **)b, &c2, *n + 1, sizeof **b);
        (*ids)[*n] = jstr(o, "_id");
        (*a)[*n] = jstr(o, ka);
        if (b)
            (*b)[*n] = jstr(o, kb);
        (*n)++;
        json_decref(o);
    }
    free(line);
    fclose(f);
    return 0;
}

static int read_qrels(const char *path, btd_t *d, const idmap_t *dm, const idmap_t *qm)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bench text: cannot open %s\n", path);
        return -1;
    }
    d->qrels = cdn_calloc(d->nq ? d->nq : 1, sizeof *d->qrels);
    d->nqrels = cdn_calloc(d->nq ? d->nq : 1, sizeof *d->nqrels);
    size_t *caps = cdn_calloc(d->nq ? d->nq : 1, sizeof *caps);
    char q[256], doc[256];
    int rel;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%255s %255s %d", q, doc, &rel) != 3)
            continue; /* the header line */
        long qi = idmap_find(qm, d->nq, q), di = idmap_find(dm, d->ndocs, doc);
        if (qi < 0 || di < 0 || rel <= 0)
            continue;
        cdn_grow((void **)&d->qrels[qi], &caps[qi], d->nqrels[qi] + 1, sizeof **d->qrels);
        d->qrels[qi][d->nqrels[qi]++] = (btd_qrel_t){(uint32_t)di, rel};
    }
    cdn_free(caps);
    fclose(f);
    return 0;
}

/* fvecs rows in the order of the ids file; rows whose id is unknown are skipped. */
static float *read_fvecs(const char *vpath, const char *ipath, const idmap_t *m, size_t n,
                         uint32_t *dim, int **ok)
{
    FILE *fv = fopen(vpath, "rb"), *fi = fopen(ipath, "r");
    float *out = NULL;
    char line[512];
    int32_t dm;
    if (!fv || !fi || fread(&dm, 4, 1, fv) != 1 || dm <= 0 || dm > 65536)
        goto done;
    rewind(fv);
    *dim = (uint32_t)dm;
    out = cdn_calloc(n * (size_t)dm, sizeof *out);
    *ok = cdn_calloc(n ? n : 1, sizeof **ok);
    float *row = cdn_malloc((size_t)dm * sizeof *row);
    while (out && row && fgets(line, sizeof line, fi)) {
        line[strcspn(line, "\r\n")] = 0;
        int32_t d2;
        if (fread(&d2, 4, 1, fv) != 1 || d2 != dm || fread(row, 4, (size_t)dm, fv) != (size_t)dm)
            break;
        long idx = idmap_find(m, n, line);
        if (idx >= 0) {
            memcpy(out + (size_t)idx * (size_t)dm, row, (size_t)dm * sizeof *row);
            (*ok)[idx] = 1;
        }
    }
    cdn_free(row);
done:
    if (fv)
        fclose(fv);
    if (fi)
        fclose(fi);
    return out;
}

int btd_load(const char *dir, btd_t *d)
{
    char p[4096], p2[4096];
    memset(d, 0, sizeof *d);
    snprintf(p, sizeof p, "%s/corpus.jsonl", dir);
    if (read_jsonl(p, &d->doc_id, &d->title, "title", &d->text, "text", &d->ndocs))
        return -1;
    snprintf(p, sizeof p, "%s/queries.jsonl", dir);
    if (read_jsonl(p, &d->q_id, &d->q_text, "text", NULL, NULL, &d->nq))
        return -1;
    idmap_t *dm = idmap_build(d->doc_id, d->ndocs), *qm = idmap_build(d->q_id, d->nq);
    snprintf(p, sizeof p, "%s/qrels/test.tsv", dir);
    int rc = dm && qm ? read_qrels(p, d, dm, qm) : -1;
    snprintf(p, sizeof p, "%s/use-lite/corpus.fvecs", dir);
    snprintf(p2, sizeof p2, "%s/use-lite/corpus.ids", dir);
    if (!rc)
        d->dvec = read_fvecs(p, p2, dm, d->ndocs, &d->dim, &d->dvec_ok);
    snprintf(p, sizeof p, "%s/use-lite/queries.fvecs", dir);
    snprintf(p2, sizeof p2, "%s/use-lite/queries.ids", dir);
    if (!rc && d->dvec)
        d->qvec = read_fvecs(p, p2, qm, d->nq, &d->dim, &d->qvec_ok);
    cdn_free(dm);
    cdn_free(qm);
    return rc;
}

int btd_generate(size_t n, size_t nq, uint64_t seed, btd_t *d)
{
    char buf[24], q[96];
    memset(d, 0, sizeof *d);
    d->doc_id = cdn_calloc(n ? n : 1, sizeof *d->doc_id);
    d->title = cdn_calloc(n ? n : 1, sizeof *d->title);
    d->text = cdn_calloc(n ? n : 1, sizeof *d->text);
    d->q_id = cdn_calloc(nq ? nq : 1, sizeof *d->q_id);
    d->q_text = cdn_calloc(nq ? nq : 1, sizeof *d->q_text);
    d->nqrels = cdn_calloc(nq ? nq : 1, sizeof *d->nqrels);
    if (!d->doc_id || !d->title || !d->text || !d->q_id || !d->q_text || !d->nqrels)
        return -1;
    for (size_t i = 0; i < n; i++, d->ndocs++) {
        snprintf(buf, sizeof buf, "%zu", i);
        d->doc_id[i] = cdn_strdup(buf);
        load_doc_words(seed, i, &d->title[i], &d->text[i]);
        if (!d->doc_id[i] || !d->title[i] || !d->text[i])
            return -1;
    }
    for (size_t i = 0; i < nq; i++, d->nq++) {
        snprintf(buf, sizeof buf, "q%zu", i);
        load_query_terms(seed, i, 2 + (int)(i % 3), q, sizeof q);
        d->q_id[i] = cdn_strdup(buf);
        d->q_text[i] = cdn_strdup(q);
        if (!d->q_id[i] || !d->q_text[i])
            return -1;
    }
    return 0;
}

void btd_free(btd_t *d)
{
    for (size_t i = 0; i < d->ndocs; i++) {
        cdn_free(d->doc_id[i]);
        cdn_free(d->title[i]);
        cdn_free(d->text[i]);
    }
    for (size_t i = 0; i < d->nq; i++) {
        cdn_free(d->q_id[i]);
        cdn_free(d->q_text[i]);
        if (d->qrels)
            cdn_free(d->qrels[i]);
    }
    cdn_free(d->doc_id);
    cdn_free(d->title);
    cdn_free(d->text);
    cdn_free(d->q_id);
    cdn_free(d->q_text);
    cdn_free(d->qrels);
    cdn_free(d->nqrels);
    cdn_free(d->dvec);
    cdn_free(d->qvec);
    cdn_free(d->dvec_ok);
    cdn_free(d->qvec_ok);
}

static int cmp_int_desc(const void *a, const void *b)
{
    return *(const int *)b - *(const int *)a;
}

int btd_eval(const btd_t *d, size_t q, const uint32_t *ranked, size_t n,
             const roaring_bitmap_t *readable, double *ndcg10, double *recall100)
{
    int rels[1024];
    size_t nr = 0;
    for (size_t i = 0; i < d->nqrels[q] && nr < 1024; i++)
        if (!readable || roaring_bitmap_contains(readable, d->qrels[q][i].doc))
            rels[nr++] = d->qrels[q][i].rel;
    if (!nr)
        return 0;
    qsort(rels, nr, sizeof *rels, cmp_int_desc);
    double dcg = 0, idcg = 0, found = 0;
    for (size_t i = 0; i < nr && i < 10; i++)
        idcg += rels[i] / log2((double)i + 2);
    for (size_t r = 0; r < n && r < 100; r++) {
        for (size_t i = 0; i < d->nqrels[q]; i++) {
            if (d->qrels[q][i].doc != ranked[r])
                continue;
            if (r < 10)
                dcg += d->qrels[q][i].rel / log2((double)r + 2);
            found++;
        }
    }
    *ndcg10 = dcg / idcg;
    *recall100 = found / (double)nr;
    return 1;
}
