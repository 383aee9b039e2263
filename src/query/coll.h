/* coll.h: one collection in memory: its configuration, vector file, permission index
 * and row-to-id map, with the lock and reference count that let searches run beside writes.
 * Relies on store/, acl/ and vector/. The engine owns collections; searches borrow them. */
#ifndef CDN_COLL_H
#define CDN_COLL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "acl/acl.h"
#include "base/err.h"
#include "query/plan.h"
#include "store/store.h"
#include "store/vecfile.h"
#include "text/textidx.h"
#include "vector/distance.h"
#include "vector/distance_i8.h"
#include "vector/hnsw.h"
#include "vector/quant.h"

#define COLL_NAME_MAX 128
#define COLL_TEXT_FIELDS_MAX 16
#define COLL_META_FIELDS_MAX 32
#define COLL_ANALYZER_MAX 40
#define COLL_AUTHORIZER_MAX 63

typedef struct coll_config {
    char name[COLL_NAME_MAX + 1];
    uint32_t id;  /* key prefix in the store; never reused */
    uint32_t dim; /* 0 = no vectors */
    vec_metric_t metric;
    size_t n_text;
    char text_fields[COLL_TEXT_FIELDS_MAX][COLL_NAME_MAX + 1];
    char acl_field[COLL_NAME_MAX + 1];
    uint32_t hnsw_m, hnsw_efc, hnsw_ef;
    char analyzer[COLL_ANALYZER_MAX];
    size_t n_meta;
    char meta_fields[COLL_META_FIELDS_MAX][COLL_NAME_MAX + 1];
    int meta_kinds[COLL_META_FIELDS_MAX]; /* textidx_kind_t */
    float k1, b;
    int asserted;    /* accepts principals asserted by the caller */
    int int8_scan;   /* keeps 8-bit codes for exact scans */
    int bm25_global; /* BM25 statistics over every chunk, not the subject's readable set */
    /* The outside authorizer its reads also ask (authz/pdp.h), "" for none. */
    char authorizer[COLL_AUTHORIZER_MAX + 1];
    /* The generation of its files: a compaction (query/compact.c) writes the next one beside
     * the current and switches to it in the commit that renumbers the rows. */
    uint32_t gen;
} coll_config_t;

typedef struct coll {
    coll_config_t cfg;
    vecfile_t *vf;              /* NULL when cfg.dim == 0 */
    hnsw_t *hnsw;               /* graph over the live rows; NULL when cfg.dim == 0 */
    uint32_t hnsw_saved;        /* rows the checkpoint on disk reflects (0 = none) */
    int hnsw_dirty;             /* changed since the checkpoint */
    uint32_t repair_next;       /* where the graph repair's sweep goes on (0: none under way) */
    uint32_t ef_auto;           /* calibrated search breadth when cfg.hnsw_ef is 0 (0 = none) */
    uint32_t ef_auto_filtered;  /* the same for filtered traversals (seeded: smaller) */
    uint32_t ef_auto_dense;     /* filtered traversals of nearly every row (0 = not measured) */
    uint32_t ef_auto_rows;      /* rows the graph held when ef_auto was measured */
    double ef_auto_recall;      /* the unfiltered recall@10 measured at ef_auto (0 = unknown) */
    uint32_t ef_auto_deep;      /* unfiltered breadth measured at COLL_CALIB_DEEP (0 = none) */
    double ef_auto_deep_recall; /* the recall@10 measured there */
    float d10;                  /* median distance of a row to its 10th neighbour (0 = unknown) */
    /* 8-bit copy of rows 0..i8_rows-1 under i8_map (room for i8_cap) that batch inserts build
     * the graph on (coll_graph.c), or NULL; touched only by the writer */
    int8_t *i8;
    uint32_t i8_rows, i8_cap;
    vec_i8_map_t i8_map;
    uint32_t i8_unfit;    /* rows when no 8-bit range fitted them (vec_i8_map_fits), or 0 */
    quant_t *quant;       /* 8-bit codes of the rows (cfg.int8_scan), or NULL */
    uint32_t quant_saved; /* rows the codes file on disk holds (0 = none) */
    textidx_t *text;      /* text fields, "_all", metadata filters; always present */
    int text_dirty;
    acl_index_t *acl;
    /* Some chunk's ACL has named an object of the relationship tuples (never cleared): only
     * then does a search look up the subject's objects (engine_subject_resolve). */
    _Atomic int has_objects;
    /* row -> external id: row_id[row] is 1 + the id's offset in id_bytes (NUL-terminated),
     * 0 for dead rows. One arena instead of a string per row: a million ids took 40 MB as
     * separate allocations, 14 MB here. Space of ids cleared is not reused (rows are not). */
    uint32_t *row_id;
    size_t row_cap;
    char *id_bytes;
    size_t id_len, id_cap;
    size_t id_max;     /* arena bytes allowed (COLL_ID_BYTES_MAX; tests lower it) */
    uint32_t next_row; /* rows below this have been handed out */
    uint64_t live;     /* live chunks */
    /* Writers hold it exclusively while they apply a committed write; searches share it. */
    pthread_rwlock_t lock;
    atomic_int refs;
    atomic_int broken;  /* in-memory state missed a committed write: fail closed */
    atomic_int dropped; /* set under lock (held exclusively) as the drop commits */
    /* Set under lock (held exclusively) as a compaction commits a renumbered copy in its place
     * (query/compact.c): readers that find it set look the collection up again. */
    atomic_int superseded;
} coll_t;

/* Checks a collection name: 1..128 bytes of [a-z0-9_-], not starting with '_' or '-'. */
int coll_name_check(const char *name, cdn_err_t *err);

/* Encodes cfg as JSON for STORE_COLLECTIONS (caller frees with cdn_free) and back. */
int coll_config_encode(const coll_config_t *cfg, char **json);
int coll_config_decode(const char *json, size_t len, coll_config_t *cfg, cdn_err_t *err);

/* Opens a collection's in-memory state from the store, inside read transaction t: the vector
 * file under dir, the rows and ACLs. The caller releases it with coll_unref. */
int coll_load(const char *dir, store_txn_t *t, const coll_config_t *cfg, coll_t **out,
              cdn_err_t *err);
/* Creates the in-memory state of a new, empty collection (creating its vector file). */
int coll_create_state(const char *dir, const coll_config_t *cfg, coll_t **out, cdn_err_t *err);

void coll_ref(coll_t *c);
/* Drops a reference; the last one frees the collection. */
void coll_unref(coll_t *c);

/* Path of the collection's vector file (ext "vec") or graph checkpoint ("hnsw") of file
 * generation gen under the data directory, into buf: "coll-ID.EXT", "coll-ID-gGEN.EXT" past
 * generation 0. */
int coll_file_path(const char *dir, uint32_t id, uint32_t gen, const char *ext, char *buf,
                   size_t size);
#define coll_vecfile_path(dir, cfg, buf, size)                                                     \
    coll_file_path(dir, (cfg)->id, (cfg)->gen, "vec", buf, size)
/* The generation a collection file's name (no directory) carries, for a file of collection
 * id: 0 and *gen set, or -1 for any other name. */
int coll_file_gen(const char *name, uint32_t id, uint32_t *gen);

/* Removes every file of cfg's generation (vector file, checkpoints, calibration). */
void coll_files_remove(const char *dir, const coll_config_t *cfg);
/* Removes the files of cfg's collection that belong to another generation than cfg's: those a
 * compaction that stopped half way (before or after its commit) left. */
void coll_files_sweep(const char *dir, const coll_config_t *cfg);
/* Copies a small file (calibration) whole to a new name; 0 or -1. */
int coll_file_copy(const char *from, const char *to);

/* Removes the collection's derived files of generation gen, each rebuilt from the rows when
 * missing: the graph, text index and 8-bit codes checkpoints, and (with_calibration) the
 * calibrated breadths. */
void coll_checkpoints_remove(const char *dir, uint32_t id, uint32_t gen, int with_calibration);

/* Brings the graph up to date at open: loads the checkpoint if it is sound (else starts
 * empty), inserts live rows it lacks and deletes rows that died since. */
int coll_graph_open(const char *dir, coll_t *c, cdn_err_t *err);
/* Inserts rows (already in the vector file) into the graph, in parallel for large batches. */
int coll_graph_insert(coll_t *c, const uint32_t *rows, size_t n);
/* A fill of every row of the 8-bit copy (the first batch after an open, or a batch outside the
 * copy's range) of this many rows or more is converted on the process's pool (base/pool.h):
 * 1M x 384 is most of a reopened collection's first batch. */
#define COLL_GRAPH_COPY_SPLIT_MIN 65536u
/* Frees c's 8-bit copy of its rows (the graph's batch inserts make it again when they need
 * it). */
void coll_graph_copy_drop(coll_t *c);
/* After a write: unlinks deleted graph nodes (hnsw_repair_range) once enough have gathered
 * since the last repair, a slice of the graph per write so that no write waits for a whole
 * pass. Called by the writer without the collection's lock: searches go on meanwhile (the
 * graph's lists are read lock-free). A failed slice is only a missed optimisation (the sweep
 * starts again at the next write). */
void coll_graph_repair_due(coll_t *c);
/* Rows a quantizer is trained on before it encodes anything (fewer: exact scans use floats). */
#define COLL_QUANT_TRAIN_MIN 1000
/* Brings the 8-bit codes up to next_row: trains once enough rows exist, then encodes the rows
 * it lacks. Caller holds the write lock (or is opening). A failure leaves the codes unused. */
int coll_quant_sync(coll_t *c);
/* Writes the codes file if the codes hold rows the file lacks; called with the graph's
 * checkpoint. Returns 0 or an error code (err says which file). */
int coll_codes_save(const char *dir, coll_t *c, cdn_err_t *err);
/* The codes graph traversals score with: the collection's 8-bit codes once trained (an
 * int8_scan collection), else NULL (float rows). Estimates from codes read a quarter of the
 * bytes, and the traversal re-scores its final list in float (hnsw_search_codes). */
static inline const quant_t *coll_codes(const coll_t *c)
{
    return c->quant && quant_is_trained(c->quant) ? c->quant : NULL;
}
/* At the end of an open: collections that search on their codes leave their float rows in the
 * file (vecfile_release: read only to re-score, they need not be resident), the others map
 * every row now (vecfile_prefault), as their scans read them all. */
void coll_map_rows(coll_t *c);
/* Writes the graph checkpoint if it changed; called at close. When the collection holds
 * COLL_CALIB_MIN_ROWS live rows (and a quarter more than at the last measurement), also
 * measures recall at a ladder of ef values (hnsw_calibrate) and records the smallest reaching
 * COLL_CALIB_TARGET and the rows' typical 10th-neighbour distance beside the checkpoint
 * ("efauto"), read back by coll_graph_open. The ef is used only when the collection leaves
 * ef_search to cordon (cfg.hnsw_ef 0); the distance serves the planner's far-set probe. */
int coll_graph_save(const char *dir, coll_t *c, cdn_err_t *err);
/* While serving: when c holds COLL_CALIB_MIN_ROWS live rows and twice the rows of its last
 * measurement (or has none), measures as coll_graph_save does, writes the measurement beside
 * the checkpoint and uses it from the next search on. The caller holds the engine's
 * write lock, so no writer moves c meanwhile; searches go on. Without it a collection loaded
 * into a running server searched at the default breadth until a restart. */
void coll_graph_calibrate_grown(const char *dir, coll_t *c);
/* The same measurement whatever the rows of the last one (when c has COLL_CALIB_MIN_ROWS live
 * rows and leaves its ef to cordon): after a compaction, whose graph is the repaired one, not
 * the one measured. The caller holds the engine's write lock. */
void coll_graph_calibrate(const char *dir, coll_t *c);
#define COLL_CALIB_MIN_ROWS 20000
#define COLL_CALIB_TARGET 0.99
/* Rows asked: as many as the exact scans of 64 over a million 384-d rows allow (the figure a
 * calibration at that size costs, 5 - 8 s), from 64 up to 256. Smaller collections get more:
 * 640 answers tell 0.990 from 0.995 only roughly, and the bound (vector/hnsw.h) then asks for
 * 0.9953 measured where 2,560 answers need 0.9918. */
#define COLL_CALIB_QUERIES 64
#define COLL_CALIB_QUERIES_MAX 256
#define COLL_CALIB_SCAN_BUDGET (64ull * 1000000 * 384)
/* The unfiltered recall the plans reading deep into the list need (query/plan.h). */
#define COLL_CALIB_DEEP PLAN_POOL_MIN_RECALL

/* The search breadth a query without its own ef uses: the collection's, else the calibrated
 * one for the traversal (COLL_EF_*), else the graph's default. */
enum { COLL_EF_UNFILTERED = 0, COLL_EF_FILTERED = 1, COLL_EF_DENSE = 2 };
uint32_t coll_search_ef(const coll_t *c, int kind);

/* The vectors as a view (count = next_row). Caller holds the lock. */
static inline void coll_view(const coll_t *c, vec_view_t *v)
{
    v->base = c->vf ? vecfile_base(c->vf) : NULL;
    v->stride = c->vf ? vecfile_stride(c->vf) : 0;
    v->dim = c->cfg.dim;
    v->count = c->next_row;
}

/* Most bytes of ids one collection's arena holds (offsets are 32-bit). */
#define COLL_ID_BYTES_MAX ((size_t)UINT32_MAX - 1)
/* Records row -> id in the row map (copying id), growing it. A full arena is first compacted
 * (the ids of cleared rows dropped), so the limit is on live ids. 0, CDN_ERR_NOMEM, or
 * CDN_ERR_LIMIT past c->id_max bytes of live ids. */
int coll_row_set(coll_t *c, uint32_t row, const char *id);
/* The external id of row, or NULL for a dead or unknown row. Valid until the next write. */
static inline const char *coll_row_id(const coll_t *c, uint32_t row)
{
    return row < c->row_cap && c->row_id[row] ? c->id_bytes + c->row_id[row] - 1 : NULL;
}
void coll_row_clear(coll_t *c, uint32_t row);

/* Creates the empty text index a configuration describes: each text field and "_all" with the
 * collection's analyzer, and the metadata fields. */
int coll_text_create(const coll_config_t *cfg, textidx_t **out, cdn_err_t *err);
/* The text index (text/textidx) at open: loads its checkpoint (else starts empty) and indexes
 * the live rows it lacks, reading their records inside t; removes rows that died since. */
int coll_text_open(const char *dir, store_txn_t *t, coll_t *c, cdn_err_t *err);
/* Indexes one row's text fields (names/values) and metadata JSON. Caller holds the lock. */
int coll_text_add(coll_t *c, uint32_t row, const char *const *names, const char *const *values,
                  size_t n, const char *metadata_json, cdn_err_t *err);
/* Writes the text checkpoint if it changed; called at close. */
int coll_text_save(const char *dir, coll_t *c, cdn_err_t *err);

/* Chunk ids are 1..COLL_ID_MAX bytes: LMDB keys hold at most 511 bytes, 4 go to the
 * collection, so a chunk key is at most COLL_KEY_MAX bytes. */
#define COLL_ID_MAX 500
#define COLL_KEY_MAX (4 + COLL_ID_MAX)

/* Store keys: collection id then a row (8 bytes) or an external id (4 + len bytes). */
void coll_row_key(uint32_t coll_id, uint32_t row, unsigned char key[8]);
size_t coll_chunk_key(uint32_t coll_id, const char *id, unsigned char *key, size_t size);

#endif
