/* es_vecscan.h: a document line's dense_vector read straight into floats, so that _bulk does
 * not build a JSON tree of hundreds of reals per document. Relies on libc only.
 *
 * The scan is only a shortcut: it succeeds on the plain case (a top-level member named field
 * whose value is an array of exactly dim JSON numbers, each finite and within float range)
 * and declines everything else, and the caller then parses the line as before, so a document
 * that is wrong in any way gets the errors it always got. */
#ifndef CDN_ES_VECSCAN_H
#define CDN_ES_VECSCAN_H

#include <stddef.h>
#include <stdint.h>

/* Where the array lies in the line, and the sum of squares of its values as doubles (summed in
 * element order, as the tree-based conversion sums them). */
typedef struct es_vecscan {
    size_t start, end; /* line[start, end) is the array, brackets included */
    double sumsq;
} es_vecscan_t;

/* Scans the JSON object in line[0, len) for its top-level member field (a name without dots,
 * written without escapes) and reads its array value into out (dim floats). Each number is
 * converted as strtod converts it, then narrowed to float. 0 on success; -1 when the line is
 * not the plain case (no such member, a value that is not an array of dim finite numbers,
 * an integer too long for a 64-bit integer, a line the scan cannot follow); out is then
 * undefined. */
int es_vecscan(const char *line, size_t len, const char *field, uint32_t dim, float *out,
               es_vecscan_t *at);

#endif
