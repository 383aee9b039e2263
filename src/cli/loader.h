/* loader.h: loading chunks from JSON lines (BEIR corpus.jsonl or cordon NDJSON), with vectors
 * inline or from a parallel fvecs file. Relies on the public API and jansson. */
#ifndef CDN_LOADER_H
#define CDN_LOADER_H

#include <stddef.h>

#include "cordon.h"

typedef struct loader_opts {
    const char *collection;
    const char *jsonl;        /* one JSON object a line */
    const char *fvecs;        /* NULL, or row i is the vector of line i */
    const char *const *allow; /* principals for lines that name none */
    size_t n_allow;
    size_t batch; /* chunks per transaction; 0 = 1000 */
    int progress; /* print a progress line on stderr */
} loader_opts_t;

/* Checks the whole file first, every line by the engine's own rules (cordon_chunk_check) and
 * every key against the ones a line may hold, so nothing is written if any line is bad; then
 * loads it in batches. Every error names the file and line (a batch the engine refuses for
 * want of disk or memory: its first and last line; earlier batches stay written). *loaded
 * counts chunks written. */
int loader_run(cordon_t *db, const loader_opts_t *o, size_t *loaded, cordon_error *err);

#endif
