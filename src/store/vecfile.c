/* vecfile.c: the vector file: a 4 KiB header, then rows padded to 64 bytes, mapped read-only.
 * Relies on mmap with MAP_SHARED, so rows written with pwrite are seen through the mapping. */
#include "store/vecfile.h"
#include "base/fileio.h"
#include "base/mem.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "CDNVEC01"

struct vecfile {
    int fd;
    uint32_t dim;
    size_t stride; /* floats per row */
    unsigned char *map;
};

static int write_header(int fd, uint32_t dim, cdn_err_t *err)
{
    unsigned char h[VECFILE_HEADER] = {0};
    memcpy(h, MAGIC, 8);
    memcpy(h + 8, &dim, 4);
    if (pwrite(fd, h, sizeof h, 0) != (ssize_t)sizeof h || fdatasync(fd) != 0)
        return cdn_err_set(err, CDN_ERR_IO, "cannot write vector file header: %s", strerror(errno));
    return CDN_OK;
}

static int check_header(int fd, uint32_t dim, const char *path, cdn_err_t *err)
{
    unsigned char h[16];
    uint32_t d;
    if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h, MAGIC, 8) != 0)
        return cdn_err_set(err, CDN_ERR_CORRUPT, "%s is not a cordon vector file", path);
    memcpy(&d, h + 8, 4);
    if (d != dim)
        return cdn_err_set(err, CDN_ERR_CORRUPT, "%s holds %u-d vectors; expected %u", path, d,
                           dim);
    return CDN_OK;
}

int vecfile_open(const char *path, uint32_t dim, vecfile_t **out, cdn_err_t *err)
{
    struct stat st;
    vecfile_t *vf;
    int rc;
    if (dim == 0 || dim > 65536)
        return cdn_err_set(err, CDN_ERR_INVALID, "vector dimension %u out of range 1..65536", dim);
    vf = cdn_calloc(1, sizeof *vf);
    if (!vf)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    vf->dim = dim;
    vf->stride = ((size_t)dim + 15) / 16 * 16;
    vf->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, CDN_FILE_MODE);
    if (vf->fd < 0) {
        rc = cdn_err_set(err, CDN_ERR_IO, "cannot open %s: %s", path, strerror(errno));
        goto fail;
    }
    if (fstat(vf->fd, &st) != 0) {
        rc = cdn_err_set(err, CDN_ERR_IO, "cannot stat %s: %s", path, strerror(errno));
        goto fail;
    }
    rc = st.st_size < (off_t)VECFILE_HEADER ? write_header(vf->fd, dim, err)
                                            : check_header(vf->fd, dim, path, err);
    if (rc)
        goto fail;
    vf->map = mmap(NULL, VECFILE_MAX_BYTES, PROT_READ, MAP_SHARED | MAP_NORESERVE, vf->fd, 0);
    if (vf->map == MAP_FAILED) {
        vf->map = NULL;
        rc = cdn_err_set(err, CDN_ERR_IO, "cannot map %s: %s", path, strerror(errno));
        goto fail;
    }
    *out = vf;
    return CDN_OK;
fail:
    vecfile_close(vf);
    return rc;
}

void vecfile_close(vecfile_t *vf)
{
    if (!vf)
        return;
    if (vf->map)
        munmap(vf->map, VECFILE_MAX_BYTES);
    if (vf->fd >= 0)
        close(vf->fd);
    cdn_free(vf);
}

/* Bytes gathered before one pwrite: large enough that syscalls do not dominate a load. */
#define WRITE_CHUNK (4u << 20)

int vecfile_write(vecfile_t *vf, uint32_t first, const float *const *rows, uint32_t n,
                  cdn_err_t *err)
{
    size_t row_bytes = vf->stride * sizeof(float);
    size_t per = WRITE_CHUNK / row_bytes ? WRITE_CHUNK / row_bytes : 1;
    uint64_t end = VECFILE_HEADER + ((uint64_t)first + n) * row_bytes;
    unsigned char *buf;
    if (end > VECFILE_MAX_BYTES)
        return cdn_err_set(err, CDN_ERR_LIMIT, "vector file would pass %llu bytes",
                           (unsigned long long)VECFILE_MAX_BYTES);
    if (!(buf = cdn_calloc(per < n ? per : n, row_bytes)))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory writing vectors");
    for (uint32_t at = 0; at < n;) {
        uint32_t m = n - at < per ? n - at : (uint32_t)per;
        off_t off = (off_t)(VECFILE_HEADER + ((uint64_t)first + at) * row_bytes);
        for (uint32_t i = 0; i < m; i++) /* padding stays zero from calloc */
            memcpy(buf + i * row_bytes, rows[at + i], vf->dim * sizeof(float));
        if (store_fault_hit()) { /* the test hook: as a disk that refuses the write */
            cdn_free(buf);
            return cdn_err_set(err, CDN_ERR_IO, "cannot write vectors: %s", strerror(EIO));
        }
        if (pwrite(vf->fd, buf, m * row_bytes, off) != (ssize_t)(m * row_bytes)) {
            cdn_free(buf);
            return cdn_err_set(err, CDN_ERR_IO, "cannot write vectors: %s", strerror(errno));
        }
        at += m;
    }
    cdn_free(buf);
    return CDN_OK;
}

int vecfile_sync(vecfile_t *vf, cdn_err_t *err)
{
    if (store_fault_hit())
        return cdn_err_set(err, CDN_ERR_IO, "cannot sync vectors: %s", strerror(EIO));
    if (fdatasync(vf->fd) != 0)
        return cdn_err_set(err, CDN_ERR_IO, "cannot sync vectors: %s", strerror(errno));
    return CDN_OK;
}

const float *vecfile_base(const vecfile_t *vf)
{
    return (const float *)(vf->map + VECFILE_HEADER);
}
size_t vecfile_stride(const vecfile_t *vf)
{
    return vf->stride;
}

/* Bytes of the mapping up to the end of row rows-1, in whole pages. */
static size_t mapped_bytes(const vecfile_t *vf, uint32_t rows)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = VECFILE_HEADER + (size_t)rows * vf->stride * sizeof(float);
    return (bytes + page - 1) / page * page;
}

void vecfile_prefault(vecfile_t *vf, uint32_t rows)
{
    if (rows) /* older kernels: faults on demand */
        (void)madvise(vf->map, mapped_bytes(vf, rows), MADV_POPULATE_READ);
}

void vecfile_release(vecfile_t *vf, uint32_t rows)
{
    /* Past the rows too: the whole reserved range, so that rows appended later are read
     * without read-ahead as well. MADV_DONTNEED on a shared file mapping drops this process's
     * page table entries only; the data stays in the file and the page cache. */
    (void)madvise(vf->map, VECFILE_MAX_BYTES, MADV_RANDOM);
    if (rows)
        (void)madvise(vf->map, mapped_bytes(vf, rows), MADV_DONTNEED);
}
