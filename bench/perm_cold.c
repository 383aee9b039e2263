/* perm_cold.c: `cordon bench permissions --cold`: the data directory's files dropped from the
 * page cache before the reopen, as after a restart of the machine, so that the first searches
 * read from the disk whatever the engine did not load into memory at open (the float rows of a
 * collection that searches on codes). Relies on POSIX posix_fadvise, mmap/mincore and nftw. */
#define _XOPEN_SOURCE 700
#include "perm_int.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static double cached_total, evicted_total;

/* Bytes of fd's st_size bytes in the page cache (mincore of a mapping of our own). */
static double cached_bytes(int fd, off_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), np = ((size_t)size + page - 1) / page;
    unsigned char *vec = malloc(np);
    void *m = size > 0 ? mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    double n = 0;
    if (vec && m != MAP_FAILED && mincore(m, (size_t)size, vec) == 0)
        for (size_t i = 0; i < np; i++)
            n += vec[i] & 1;
    if (m != MAP_FAILED)
        munmap(m, (size_t)size);
    free(vec);
    return n * (double)page;
}

static int evict_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag != FTW_F || !S_ISREG(sb->st_mode))
        return 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    cached_total += cached_bytes(fd, sb->st_size);
    (void)fdatasync(fd); /* dirty pages cannot be dropped */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    evicted_total += cached_bytes(fd, sb->st_size);
    close(fd);
    return 0;
}

void perm_evict_dir(const char *dir, double *before_mb, double *after_mb)
{
    cached_total = evicted_total = 0;
    nftw(dir, evict_one, 16, FTW_PHYS);
    *before_mb = cached_total / 1048576.0;
    *after_mb = evicted_total / 1048576.0;
}
