/* compact_testutil.h: what the compaction tests share: a collection of N chunks, 30% of them
 * replaced (new vectors and groups) and 10% deleted, the test's own account of who reads what,
 * and every answer the tests compare as one string. Relies on cmocka (included before), the
 * public API and testutil.h. */
#ifndef CDN_COMPACT_TESTUTIL_H
#define CDN_COMPACT_TESTUTIL_H

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "api_testutil.h"

enum { DIM = 32, N = 2000, GROUPS = 7, QUERIES = 6 };

static float v0[N][DIM], v1[N][DIM], queries[QUERIES][DIM];

static inline int replaced(int i)
{
    return i % 10 < 3;
}

static inline int deleted(int i)
{
    return i % 10 == 9;
}

/* The group that may read chunk i now (replaces move it to the next group). */
static inline int group_of(int i)
{
    return replaced(i) ? (i + 1) % GROUPS : i % GROUPS;
}

static inline void make_vectors(void)
{
    uint64_t s = 5;
    for (int i = 0; i < N; i++)
        for (int d = 0; d < DIM; d++) {
            v0[i][d] = (float)((i % 13) == d % 13) + (float)(tu_rand(&s) % 1000) / 3000.0f;
            v1[i][d] = (float)((i % 11) == d % 11) + (float)(tu_rand(&s) % 1000) / 3000.0f;
        }
    for (int q = 0; q < QUERIES; q++)
        for (int d = 0; d < DIM; d++)
            queries[q][d] = v0[q * 101][d] + (float)(tu_rand(&s) % 100) / 500.0f;
}

static inline void put_range(cordon_t *db, int from, int to, int second)
{
    static char ids[N][16], body[N][48], grp[N][16];
    static const char *allowed[N];
    static cordon_field f[N];
    static cordon_chunk c[N];
    const char *bad = "user:bad";
    size_t n = 0;
    for (int i = from; i < to; i++) {
        if (second && !replaced(i))
            continue;
        snprintf(ids[n], sizeof ids[n], "c%d", i);
        snprintf(body[n], sizeof body[n], "word%d common %s", i % 50, second ? "changed" : "first");
        snprintf(grp[n], sizeof grp[n], "group:g%d", second ? group_of(i) : i % GROUPS);
        allowed[n] = grp[n];
        f[n] = (cordon_field){.name = "body", .value = body[n]};
        c[n] = (cordon_chunk){.id = ids[n],
                              .vector = second ? v1[i] : v0[i],
                              .fields = &f[n],
                              .n_fields = 1,
                              .allowed = &allowed[n],
                              .n_allowed = 1,
                              .denied = i % 11 == 0 ? &bad : NULL,
                              .n_denied = i % 11 == 0};
        n++;
    }
    cordon_error e;
    if (n && cordon_put(db, "docs", c, n, NULL, &e))
        fail_msg("put: %s", e.message);
}

/* Loads N chunks, replaces 30% of them (new vectors and groups), deletes 10%. */
static inline void fill(cordon_t *db)
{
    const char *tf[] = {"body"};
    cordon_collection_spec spec = {.asserted_principals = 1,
                                   .name = "docs",
                                   .dim = DIM,
                                   .metric = CORDON_METRIC_L2,
                                   .text_fields = tf,
                                   .n_text_fields = 1,
                                   .int8_scan = 1};
    assert_int_equal(cordon_collection_create(db, &spec, NULL), 0);
    for (int b = 0; b < N; b += 500)
        put_range(db, b, b + 500, 0);
    for (int b = 0; b < N; b += 500)
        put_range(db, b, b + 500, 1);
    static char ids[N][16];
    const char *del[N];
    size_t nd = 0;
    for (int i = 0; i < N; i++)
        if (deleted(i)) {
            snprintf(ids[nd], sizeof ids[nd], "c%d", i);
            del[nd] = ids[nd];
            nd++;
        }
    assert_int_equal(cordon_delete(db, "docs", del, nd, NULL, NULL, NULL), 0);
}

static inline int live_count(void)
{
    int n = 0;
    for (int i = 0; i < N; i++)
        n += !deleted(i);
    return n;
}

/* Whether a subject holding groups mask (bit g: group:g<g>) and, with bad, user:bad reads
 * chunk id: the test's own account of the ACLs written. */
static inline int readable(const char *id, unsigned mask, int bad)
{
    int i = atoi(id + 1);
    if (id[0] != 'c' || i < 0 || i >= N || deleted(i))
        return 0;
    return (mask >> group_of(i) & 1) && !(bad && i % 11 == 0);
}

static const struct {
    unsigned mask;
    int bad;
} subjects[] = {{1u << 0, 0}, {1u << 1 | 1u << 2, 0}, {1u << 3, 1}, {(1u << GROUPS) - 1, 0}};
#define N_SUBJECTS (sizeof subjects / sizeof subjects[0])

static inline void subject_of(size_t s, char names[GROUPS + 1][24], const char **pr,
                              cordon_subject *out)
{
    size_t n = 0;
    for (int g = 0; g < GROUPS; g++)
        if (subjects[s].mask >> g & 1) {
            snprintf(names[n], sizeof names[n], "group:g%d", g);
            pr[n] = names[n];
            n++;
        }
    if (subjects[s].bad)
        pr[n++] = "user:bad";
    *out = (cordon_subject){.principals = pr, .n_principals = n};
}

/* Appends one search's hits ("id score;") to out, checking each against the account. */
static inline void search_into(cordon_t *db, size_t s, const cordon_query *q, char *out, size_t cap)
{
    char names[GROUPS + 1][24];
    const char *pr[GROUPS + 1];
    cordon_subject subj;
    cordon_result *r = NULL;
    cordon_error e;
    subject_of(s, names, pr, &subj);
    if (cordon_search(db, "docs", &subj, q, &r, &e))
        fail_msg("search: %s", e.message);
    for (size_t i = 0; i < r->n_hits; i++) {
        if (!readable(r->hits[i].id, subjects[s].mask, subjects[s].bad))
            fail_msg("subject %zu read %s", s, r->hits[i].id);
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s %.6g;", r->hits[i].id, (double)r->hits[i].score);
    }
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "|%llu|", (unsigned long long)r->readable);
    cordon_result_free(r);
}

/* Every answer the test compares: exact and graph searches, BM25 and gets, as one string. */
static inline void answers(cordon_t *db, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t s = 0; s < N_SUBJECTS; s++)
        for (int q = 0; q < QUERIES; q++) {
            cordon_query exact = {.vector = queries[q], .k = 20, .strategy = CORDON_STRATEGY_EXACT};
            cordon_query text = {.text = "common changed", .k = 20};
            search_into(db, s, &exact, out, cap);
            search_into(db, s, &text, out, cap);
        }
    for (int i = 0; i < N; i += 7) {
        char id[16];
        const char *all[GROUPS];
        char names[GROUPS][24];
        for (int g = 0; g < GROUPS; g++) {
            snprintf(names[g], sizeof names[g], "group:g%d", g);
            all[g] = names[g];
        }
        cordon_subject subj = {.principals = all, .n_principals = GROUPS};
        cordon_record *rec = NULL;
        snprintf(id, sizeof id, "c%d", i);
        int rc = cordon_get(db, "docs", &subj, id, &rec, NULL);
        size_t len = strlen(out);
        if (rc) {
            assert_true(deleted(i));
            snprintf(out + len, cap - len, "%s:%d;", id, rc);
            continue;
        }
        assert_false(deleted(i));
        assert_int_equal(rec->dim, DIM);
        assert_memory_equal(rec->vector, replaced(i) ? v1[i] : v0[i], sizeof v0[i]);
        snprintf(out + len, cap - len, "%s:%s:%s;", id, rec->fields[0].value, rec->allowed[0]);
        cordon_record_free(rec);
    }
}

/* Graph searches cannot be compared hit for hit (the copy routes without the dead nodes):
 * they must leak nothing and find most of the exact answer. */
static inline void check_graph_searches(cordon_t *db)
{
    for (size_t s = 0; s < N_SUBJECTS; s++)
        for (int q = 0; q < QUERIES; q++) {
            static char a[8192], b[8192];
            cordon_query exact = {.vector = queries[q], .k = 10, .strategy = CORDON_STRATEGY_EXACT};
            cordon_query graph = {
                .vector = queries[q], .k = 10, .strategy = CORDON_STRATEGY_PREFILTER};
            a[0] = b[0] = '\0';
            search_into(db, s, &exact, a, sizeof a);
            search_into(db, s, &graph, b, sizeof b);
            int found = 0;
            for (char *p = a; *p && *p != '|'; p = strchr(p, ';') + 1) {
                char id[16];
                sscanf(p, "%15s", id);
                char pat[24];
                snprintf(pat, sizeof pat, "%s ", id);
                found += strstr(b, pat) != NULL;
            }
            assert_true(found >= 8);
        }
}

/* 1 when name is a collection file (coll-ID.* or coll-ID-gG.*), with its generation in *g (0 for
 * coll-ID.*); else 0. */
static inline int coll_file_gen(const char *name, unsigned *g)
{
    unsigned id = 0;
    char c = 0;
    if (sscanf(name, "coll-%u-g%u.", &id, g) == 2)
        return 1;
    *g = 0;
    return sscanf(name, "coll-%u%c", &id, &c) == 2 && c == '.';
}

/* Walks the collection files in dir (the tests keep one collection), each of which must be
 * owner-only: returns the generations below 32 as bits (bit g for coll-ID[-gG].*), and the
 * lowest and highest generation of any number in *lo and *hi (both -1 when there is none). */
static inline unsigned coll_gens_scan(const char *dir, long *lo, long *hi)
{
    unsigned gens = 0, g;
    DIR *d = opendir(dir);
    struct dirent *de;
    assert_non_null(d);
    *lo = *hi = -1;
    while ((de = readdir(d)) != NULL) {
        if (!coll_file_gen(de->d_name, &g))
            continue;
        if (g < 32)
            gens |= 1u << g;
        *lo = *lo == -1 || (long)g < *lo ? (long)g : *lo;
        *hi = (long)g > *hi ? (long)g : *hi;
        char path[512];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        assert_int_equal(stat(path, &st), 0);
        if (st.st_mode & 077) /* owner-only, as every file of a data directory */
            fail_msg("%s has mode %o", path, (unsigned)(st.st_mode & 0777));
    }
    closedir(d);
    return gens;
}

/* The generation numbers of the collection files in dir: bit g set for coll-ID[-gG].*. */
static inline unsigned file_gens(const char *dir)
{
    long lo, hi;
    return coll_gens_scan(dir, &lo, &hi);
}

/* The one generation whose collection files dir holds, or -1 when it holds files of two
 * generations or none: file_gens for any number of generations. */
static inline long file_gen_only(const char *dir)
{
    long lo, hi;
    coll_gens_scan(dir, &lo, &hi);
    return lo == hi ? lo : -1;
}

static inline uint64_t rows_of(cordon_t *db)
{
    cordon_collection_info ci;
    assert_int_equal(cordon_collection_info_get(db, "docs", &ci, NULL), 0);
    assert_int_equal(ci.chunks, (uint64_t)live_count());
    return ci.rows;
}

#endif
