/* vecfile.h: an append-only file of fixed-stride float32 rows, memory-mapped for scans.
 * Relies on POSIX mmap/pwrite. Row r is valid to read once written and synced; the store's
 * LMDB records how many rows are acknowledged, so rows past that after a crash are ignored. */
#ifndef CDN_VECFILE_H
#define CDN_VECFILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct vecfile vecfile_t;

/* Largest vector data one collection may hold: the size of the reserved mapping. */
#define VECFILE_MAX_BYTES (64ull << 30)
#define VECFILE_HEADER 4096u

/* Opens or creates the file at path for rows of dim floats. An existing file with another
 * dimension or a bad header gives CDN_ERR_CORRUPT. Close with vecfile_close. */
int vecfile_open(const char *path, uint32_t dim, vecfile_t **out, cdn_err_t *err);
void vecfile_close(vecfile_t *vf);

/* Writes n rows (rows[i] points at dim floats) at rows first .. first+n-1, in as few system
 * calls as a bounded buffer allows. Not durable until vecfile_sync. Returns 0, CDN_ERR_LIMIT
 * past VECFILE_MAX_BYTES, CDN_ERR_NOMEM or CDN_ERR_IO. */
int vecfile_write(vecfile_t *vf, uint32_t first, const float *const *rows, uint32_t n,
                  cdn_err_t *err);
int vecfile_sync(vecfile_t *vf, cdn_err_t *err);

/* The mapping: row r starts at base + r * stride floats, 64-byte aligned. The pointer is
 * stable for the life of vf (the whole range is reserved at open). */
const float *vecfile_base(const vecfile_t *vf);
size_t vecfile_stride(const vecfile_t *vf);

/* Maps rows 0..rows-1 into this process now (MADV_POPULATE_READ), reading them from disk if the
 * page cache lacks them, so that searches do not take a page fault at each row's first touch
 * (1M x 384 after a reopen: the first 0.1%-readable queries 0.45 -> 1.1 ms without it). Best
 * effort: kernels without it leave the rows to fault in on demand. */
void vecfile_prefault(vecfile_t *vf, uint32_t rows);
/* The opposite, for rows read only now and then (collections that search on codes and read a
 * float row only to re-score it): unmaps rows 0..rows-1 from this process (they stay in the
 * page cache while the kernel has room) and asks for no read-ahead, so a row read later brings
 * in its own pages, not its neighbours'. Best effort. */
void vecfile_release(vecfile_t *vf, uint32_t rows);

#endif
