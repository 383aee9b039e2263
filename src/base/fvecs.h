/* fvecs.h: reading the fvecs vector format (per row: int32 dimension, then that many float32,
 * little-endian), as the shared corpora and ann-benchmarks use. Relies on stdio. */
#ifndef CDN_FVECS_H
#define CDN_FVECS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Reads every row of path into *data (rows * dim floats, packed; cdn_free it). Fails with
 * CDN_ERR_INVALID naming the row when dimensions disagree or the file ends mid-row, and
 * CDN_ERR_IO when it cannot be read. */
int cdn_fvecs_read(const char *path, float **data, size_t *rows, uint32_t *dim, cdn_err_t *err);

#endif
