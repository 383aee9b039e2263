/* compact.h: closing the gaps deletes and replaces leave in a collection's rows (compact.c).
 * Relies on engine.h. */
#ifndef CDN_COMPACT_H
#define CDN_COMPACT_H

#include "query/engine.h"

typedef struct engine_compact_stats {
    uint32_t rows_before;                     /* rows the files held (live and dead) */
    uint32_t rows_after;                      /* rows they hold now: the live ones when compacted */
    int compacted;                            /* 0: there was no dead row, nothing was written */
    double ms;                                /* wall time, the wait for the writer lock included */
    double locked_ms;                         /* of it, the time writers were held off */
    uint64_t db_bytes_before, db_bytes_after; /* the database file in use, rewritten without
                                                 its free pages when a quarter or more was */
} engine_compact_stats_t;

/* Renumbers the collection's live rows 0..live-1 (their order kept) and replaces its vector
 * file, graph, codes and text index with copies that hold them only, in one commit. The graph
 * repair runs first, beside writers; then writers wait for the rest; searches go on against the
 * current copy and move to the new one as it commits. A crash at any point leaves the collection as
 * before or as after (the next open removes the other generation's files). Returns 0,
 * CDN_ERR_NOT_FOUND, CDN_ERR_IO, CDN_ERR_NOMEM or CDN_ERR_LIMIT (disk or database full), with
 * nothing changed on an error before the commit. */
int engine_coll_compact(engine_t *e, const char *name, engine_compact_stats_t *st, cdn_err_t *err);

#endif
