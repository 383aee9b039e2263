/* bench_util.c: the benchmarks' shared random generator and option parsing.
 * Relies on libc math for the normal variates. */
#include "bench_util.h"
#include "vector/distance.h"

#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t bench_rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double bench_rng_unit(uint64_t *s)
{
    return ((bench_rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
}

float bench_rng_gauss(uint64_t *s)
{
    return (float)(sqrt(-2.0 * log(bench_rng_unit(s))) *
                   cos(6.283185307179586 * bench_rng_unit(s)));
}

int bench_parse_u64(const char *bench, const char *name, const char *val, uint64_t lo, uint64_t hi,
                    uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = val ? strtoull(val, &end, 10) : 0;
    if (!val || errno || *end || v < lo || v > hi || val[0] == '-') {
        fprintf(stderr, "cordon bench %s: %s needs a whole number from %llu to %llu (got '%s')\n",
                bench, name, (unsigned long long)lo, (unsigned long long)hi, val ? val : "");
        return 2;
    }
    *out = v;
    return 0;
}

void bench_gen_rows(float *out, size_t n, uint32_t dim, const float *centroids, uint32_t nclusters,
                    uint64_t *s)
{
    for (size_t i = 0; i < n; i++) {
        float *row = out + i * dim;
        const float *c = centroids + (bench_rng_next(s) % nclusters) * dim;
        for (uint32_t j = 0; j < dim; j += 2) { /* Box-Muller gives two normals a draw */
            double r = sqrt(-2.0 * log(bench_rng_unit(s)));
            double t = 6.283185307179586 * bench_rng_unit(s);
            row[j] = c[j] + 0.5f * (float)(r * cos(t));
            if (j + 1 < dim)
                row[j + 1] = c[j + 1] + 0.5f * (float)(r * sin(t));
        }
        vec_normalize(row, dim);
    }
}

int bench_parse_size(const char *bench, const char *name, const char *val, size_t lo, size_t hi,
                     size_t *out)
{
    uint64_t v = 0;
    int rc = bench_parse_u64(bench, name, val, lo, hi, &v);
    if (rc == 0)
        *out = (size_t)v;
    return rc;
}

double bench_resident_mb(const void *p, size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!p || !bytes)
        return 0;
    uintptr_t lo = (uintptr_t)p / page * page, hi = ((uintptr_t)p + bytes + page - 1) / page * page;
    size_t pages = (hi - lo) / page, resident = 0;
    unsigned char *vec = malloc(pages);
    if (vec && mincore((void *)lo, hi - lo, vec) == 0)
        for (size_t i = 0; i < pages; i++)
            resident += vec[i] & 1;
    free(vec);
    return (double)(resident * page) / (1024.0 * 1024.0);
}

double bench_file_field(const char *path, const char *key, char sep)
{
    FILE *f = fopen(path, "r");
    char line[256];
    size_t n = strlen(key);
    double v = -1;
    while (f && v < 0 && fgets(line, sizeof line, f))
        if (!n || (!strncmp(line, key, n) && line[n] == sep))
            v = strtod(line + (n ? n + 1 : 0), NULL);
    if (f)
        fclose(f);
    return v;
}

double bench_status_mb(const char *field)
{
    double kb = bench_file_field("/proc/self/status", field, ':');
    return kb < 0 ? 0 : kb / 1024.0;
}

double bench_rss_mb(void)
{
    return bench_status_mb("VmRSS");
}

int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* nftw passes no pointer of the caller's: the sum of one walk lives here (one walk at a time). */
static uint64_t dir_sum;

static int dir_add(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)path;
    (void)ftw;
    if (flag == FTW_F)
        dir_sum += (uint64_t)sb->st_size;
    return 0;
}

uint64_t bench_dir_bytes(const char *dir)
{
    dir_sum = 0;
    nftw(dir, dir_add, 16, FTW_PHYS);
    return dir_sum;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void bench_rmtree(const char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int bench_path_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

int bench_npm_peer(const char *what, const char *src, const char *dir, const char *package,
                   char *where, size_t cap)
{
    char path[1024], cmd[4096];
    const char *at[2] = {src, dir};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/node_modules/%s/package.json", at[i], package);
        if (bench_path_exists(path)) {
            snprintf(where, cap, "%s", at[i]);
            return 0;
        }
    }
    snprintf(path, sizeof path, "%s/package-lock.json", src);
    int lock = bench_path_exists(path), same = !strcmp(src, dir);
    int n = snprintf(cmd, sizeof cmd, "mkdir -p '%s' && ", dir);
    if (!same && n > 0 && (size_t)n < sizeof cmd)
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, "cp '%s/package.json' %s%s%s'%s/' && ", src,
                      lock ? "'" : "", lock ? path : "", lock ? "' " : "", dir);
    if (n > 0 && (size_t)n < sizeof cmd)
        n += snprintf(cmd + n, sizeof cmd - (size_t)n,
                      "npm %s --prefix '%s' --no-audit --no-fund --loglevel=error >'%s/npm.log' "
                      "2>&1",
                      lock ? "ci" : "install", dir, dir);
    snprintf(path, sizeof path, "%s/node_modules/%s/package.json", dir, package);
    if (n <= 0 || (size_t)n >= sizeof cmd || system(cmd) != 0 || !bench_path_exists(path)) {
        fprintf(stderr,
                "note: could not install the %s peer (npm %s --prefix %s failed, see "
                "%s/npm.log); its rows are left out\n",
                what, lock ? "ci" : "install", dir, dir);
        return 1;
    }
    snprintf(where, cap, "%s", dir);
    return 0;
}
