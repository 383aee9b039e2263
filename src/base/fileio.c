/* fileio.c: see fileio.h. */
#include "base/fileio.h"
#include "base/testhook.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"

int cdn_file_write_all(int fd, const void *p, size_t n, XXH3_state_t *xs)
{
    const char *c = p;
    if (xs)
        XXH3_64bits_update(xs, p, n);
    while (n) {
        size_t chunk = n > (1u << 30) ? (1u << 30) : n;
        ssize_t w = write(fd, c, chunk);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return CDN_ERR_IO;
        c += w;
        n -= (size_t)w;
    }
    return CDN_OK;
}

int cdn_file_open_read(const char *path, int *fd, uint64_t *size)
{
    struct stat st;
    *fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (*fd < 0)
        return CDN_ERR_IO;
    if (fstat(*fd, &st)) {
        close(*fd);
        *fd = -1;
        return CDN_ERR_IO;
    }
    *size = (uint64_t)st.st_size;
    return CDN_OK;
}

XXH3_state_t *cdn_file_hash_new(void)
{
    XXH3_state_t *xs = XXH3_createState();
    if (xs)
        XXH3_64bits_reset(xs);
    return xs;
}

int cdn_file_read_all(int fd, void *p, size_t n, XXH3_state_t *xs)
{
    char *c = p;
    size_t total = n;
    while (n) {
        size_t chunk = n > (1u << 30) ? (1u << 30) : n;
        ssize_t r = read(fd, c, chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return CDN_ERR_IO;
        if (r == 0)
            return CDN_ERR_CORRUPT; /* shorter than its header promised */
        c += r;
        n -= (size_t)r;
    }
    if (xs)
        XXH3_64bits_update(xs, p, total);
    return CDN_OK;
}

int cdn_file_fsync_dir_of(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 1;
    if (n == 0)
        n = 1; /* a file in "/" */
    if (n >= sizeof dir)
        return CDN_ERR_IO;
    memcpy(dir, slash ? path : ".", n);
    dir[n] = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return CDN_ERR_IO;
    int rc = fsync(fd) ? CDN_ERR_IO : CDN_OK;
    close(fd);
    return rc;
}

int cdn_file_open_tmp(const char *path, char *tmp, size_t size, int *fd)
{
    *fd = -1;
    if (!path || snprintf(tmp, size, "%s.tmp.%ld", path, (long)getpid()) >= (int)size)
        return CDN_ERR_INVALID;
    *fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, CDN_FILE_MODE);
    return *fd < 0 ? CDN_ERR_IO : CDN_OK;
}

int cdn_file_commit(int fd, const char *tmp, const char *path, int rc)
{
    cdn_hook_run(CDN_HOOK_FILE_WRITTEN);
    if (!rc && fsync(fd))
        rc = CDN_ERR_IO;
    if (close(fd) && !rc)
        rc = CDN_ERR_IO;
    if (!rc && rename(tmp, path))
        rc = CDN_ERR_IO;
    if (rc) {
        unlink(tmp);
        return rc;
    }
    return cdn_file_fsync_dir_of(path);
}
