/* fvecs.c: whole-file fvecs reader with row-by-row validation.
 * Relies on stdio; the file is read once, sequentially. */
#include "base/fvecs.h"
#include "base/mem.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int cdn_fvecs_read(const char *path, float **data, size_t *rows, uint32_t *dim, cdn_err_t *err)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    int32_t d0, d;
    size_t n = 0, cap;
    float *out = NULL;
    int rc = CDN_OK;
    if (!f)
        return cdn_err_set(err, CDN_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    if (fstat(fileno(f), &st) != 0 || fread(&d0, 4, 1, f) != 1 || d0 <= 0 || d0 > 65536) {
        fclose(f);
        return cdn_err_set(err, CDN_ERR_INVALID, "%s is not an fvecs file (bad first row)", path);
    }
    cap = (size_t)st.st_size / (4 + 4 * (size_t)d0);
    if (!(out = cdn_malloc((cap ? cap : 1) * (size_t)d0 * sizeof(float)))) {
        fclose(f);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory reading %s", path);
    }
    for (d = d0;; n++) {
        if (n > 0 && fread(&d, 4, 1, f) != 1)
            break; /* clean end of file */
        if (d != d0 || n >= cap) {
            rc = cdn_err_set(err, CDN_ERR_INVALID, "%s row %zu has dimension %d; row 0 has %d",
                             path, n, d, d0);
            break;
        }
        if (fread(out + n * (size_t)d0, sizeof(float), (size_t)d0, f) != (size_t)d0) {
            rc = cdn_err_set(err, CDN_ERR_INVALID, "%s ends in the middle of row %zu", path, n);
            break;
        }
    }
    fclose(f);
    if (rc) {
        cdn_free(out);
        return rc;
    }
    *data = out;
    *rows = n;
    *dim = (uint32_t)d0;
    return CDN_OK;
}
