/* loader.h: loading chunks from JSON lines (BEIR corpus.jsonl or cordon NDJSON), with vectors
 * inline or from a parallel fvecs file. Relies on the public API and jansson. */
#ifndef CDN_LOADER_H
#define CDN_LOADER_H

#include <stddef.h>

#include "cordon.h"

typedef struct loader_opts {
    const char *collection;
    const char *jsonl;              /* one JSON object a line */
    const char *fvecs;              /* NULL, or row i is the vector of line i */
    const char *const *allow;       /* principals for lines that name none */
    size_t n_allow;
    size_t batch;                   /* chunks per transaction; 0 = 1000 */
    int progress;                   /* print a progress line on stderr */
} loader_opts_t;

/* Validates the whole file first (nothing is written if any line is bad: the error names the
 * file and line), then loads it in batches. *loaded counts chunks written. */
int loader_run(cordon_t *db, const loader_opts_t *o, size_t *loaded, cordon_error *err);

#endif
