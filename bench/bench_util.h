/* bench_util.h: what the benchmark programs share: a seedable random generator for generated
 * data (splitmix64) and option parsing. Relies on libc only. */
#ifndef CDN_BENCH_UTIL_H
#define CDN_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64: seedable, fast, and good enough for test data; *s is the state. */
uint64_t bench_rng_next(uint64_t *s);
/* Uniform in (0, 1). */
double bench_rng_unit(uint64_t *s);
/* Standard normal (Box-Muller, one value per call). */
float bench_rng_gauss(uint64_t *s);

/* Fills n rows of dim floats: row = centroids[c] + 0.5 * N(0, 1) noise, c uniform among
 * nclusters, then unit length. Clusters give the top-k real structure (not every distance near
 * 1), as embeddings have. The generator of `bench scan` and `bench quant`. */
void bench_gen_rows(float *out, size_t n, uint32_t dim, const float *centroids, uint32_t nclusters,
                    uint64_t *s);

/* Resident memory of this process in MB (VmRSS), 0 when /proc cannot tell. */
double bench_rss_mb(void);
/* qsort order of doubles, ascending. */
int bench_cmp_double(const void *a, const void *b);
/* Bytes of the regular files under dir (their sizes, not their blocks); 0 if unreadable. */
uint64_t bench_dir_bytes(const char *dir);
/* Removes dir and everything under it; best effort. */
void bench_rmtree(const char *dir);
/* The number after `key` and the character sep at the start of a line of the file at path
 * (key "": the first line's number), or -1 when no line has it or the file cannot be read. */
double bench_file_field(const char *path, const char *key, char sep);
/* A field of /proc/self/status in MB ("RssAnon": the heap and stacks; "RssFile": mapped
 * files), 0 when /proc cannot tell. */
double bench_status_mb(const char *field);

/* Resident MB of the bytes at p (mincore), for leaving a benchmark's own arrays out of the
 * process's resident memory. 0 when it cannot tell. */
double bench_resident_mb(const void *p, size_t bytes);

/* Parses a whole number from lo to hi for option `name` of `cordon bench <bench>`; prints what
 * is wrong and returns 2 (the usage exit code) when it is not one, else 0. */
int bench_parse_u64(const char *bench, const char *name, const char *val, uint64_t lo, uint64_t hi,
                    uint64_t *out);

/* The same for size_t options. */
int bench_parse_size(const char *bench, const char *name, const char *val, size_t lo, size_t hi,
                     size_t *out);

/* True when p names something that exists. */
int bench_path_exists(const char *p);

/* A peer's npm packages (Casbin, Cedar, SpiceDB: node scripts the benchmarks run beside cordon):
 * node_modules holding package beside the peer's sources in src (scripts/deps.sh installs
 * there), else in dir, installed now from src's package.json (npm ci when src has a lock, npm
 * install otherwise). Writes the directory holding node_modules to where (cap bytes); 0, or 1
 * after a note naming the peer (what) and dir/npm.log. */
int bench_npm_peer(const char *what, const char *src, const char *dir, const char *package,
                   char *where, size_t cap);

#endif
