/* testutil.h: helpers shared by the unit tests: temporary data directories, a seeded RNG,
 * and the location of the shared corpora. Relies on POSIX nftw and mkdtemp. */
#ifndef CDN_TESTUTIL_H
#define CDN_TESTUTIL_H

#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int tu_rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

/* Makes an empty temporary directory; the caller passes buf of at least 64 bytes. */
static inline char *tu_tmpdir(char *buf, size_t size)
{
    snprintf(buf, size, "/tmp/cordon-test-XXXXXX");
    return mkdtemp(buf);
}

static inline void tu_rmrf(const char *dir)
{
    nftw(dir, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Sums a /proc/self/smaps field (e.g. "Rss:", "AnonHugePages:") in kB over the mappings that
 * overlap [lo, hi) or, with name set, whose header line names it. 0 without /proc. */
static inline long tu_smaps_kb(const char *field, uintptr_t lo, uintptr_t hi, const char *name)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    size_t flen = strlen(field);
    long kb = 0;
    int inside = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long a, b;
        char dash;
        if (sscanf(line, "%lx%c%lx", &a, &dash, &b) == 3 && dash == '-')
            inside = name ? strstr(line, name) != NULL : a < hi && b > lo;
        else if (inside && !strncmp(line, field, flen))
            kb += strtol(line + flen, NULL, 10);
    }
    if (f)
        fclose(f);
    return kb;
}

/* xorshift64*: deterministic, seeded, good enough for test data. */
static inline uint64_t tu_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}
static inline float tu_randf(uint64_t *s)
{
    return (float)(tu_rand(s) >> 40) / (float)(1 << 24);
}

/* The decimal number at the start of s (tests parse ids like "r42" with s + 1). */
static inline int tu_num(const char *s)
{
    return (int)strtol(s, NULL, 10);
}

/* Where ../shared/data is: $CORDON_SHARED_DATA, else /work/shared/data-like default. */
static inline const char *tu_shared_data(void)
{
    const char *d = getenv("CORDON_SHARED_DATA");
    return d && *d ? d : "../shared/data";
}

#endif
