/* load_survey.h: what a JSON-lines file holds before a collection is made for it: its line
 * count, the dimension of its vectors, and the kinds of its metadata fields.
 * Relies on the public API's limits and jansson. */
#ifndef CDN_LOAD_SURVEY_H
#define CDN_LOAD_SURVEY_H

#include <stddef.h>
#include <stdint.h>

#include "cordon.h"

typedef struct load_survey {
    size_t lines_read; /* lines looked at (at most the limit given) */
    uint32_t dim;      /* values in the first "vector" seen; 0 = none */
    size_t n_meta;     /* top-level keys of "metadata" with one scalar kind */
    char meta_names[CORDON_META_FIELDS_MAX][CORDON_NAME_MAX + 1];
    cordon_meta_kind meta_kinds[CORDON_META_FIELDS_MAX];
    size_t meta_left_out; /* keys of mixed or non-scalar kinds, or past the limit */
} load_survey_t;

/* Counts the file's lines that are not blank, fast (no parsing). 0 or CORDON_ERR_IO. */
int load_count_lines(const char *path, size_t *lines, cordon_error *err);

/* Reads up to max_lines lines of path: the first vector's length, and each metadata key's
 * kind (strings: keyword, numbers: number, true/false: bool), in first-seen order. Lines that
 * are not JSON objects are skipped here (the load's check names them). 0 or CORDON_ERR_IO. */
int load_survey(const char *path, size_t max_lines, load_survey_t *out, cordon_error *err);

#endif
