/* cordon.h: the public C API of cordon, a permission-aware retrieval engine.
 *
 * One handle (cordon_t) is one open data directory. Every function is safe to call from many
 * threads at once on the same handle; writes are serialised inside, searches run in parallel
 * with each other and with writes, and each search or get reads one state throughout: the
 * subject's authorization, its view and every ACL it checks are of one moment.
 *
 * Conventions:
 * - Every function returns a status: CORDON_OK (0) or a negative CORDON_ERR_* code;
 *   cordon_strerror() names a code. Functions that validate input also take an optional
 *   `cordon_error *err` that receives a message naming the field, the problem and the fix.
 * - Input structs are read during the call only; the caller keeps ownership of everything it
 *   passes in. Zero-initialise input structs (`cordon_query q = {0};`): new fields are only ever
 *   appended, and zero always means "the default".
 * - Output objects are owned by the caller and released with the named *_free function.
 * - A failed write changes nothing.
 */
#ifndef CORDON_H
#define CORDON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status codes (the same numbers as src/base/err.h). ---- */
typedef enum cordon_status {
    CORDON_OK = 0,
    CORDON_ERR_NOMEM = -1,        /* out of memory */
    CORDON_ERR_INVALID = -2,      /* malformed or out-of-range input; err says which field */
    CORDON_ERR_NOT_FOUND = -3,    /* no such collection or chunk, or the subject may not see it */
    CORDON_ERR_EXISTS = -4,       /* a collection of that name exists */
    CORDON_ERR_IO = -5,           /* the disk or the database refused */
    CORDON_ERR_CORRUPT = -6,      /* stored data does not decode */
    CORDON_ERR_DENIED = -7,       /* the subject may not do this */
    CORDON_ERR_LIMIT = -8,        /* a documented size limit was exceeded */
    CORDON_ERR_CONFLICT = -9,     /* contradicts the current state */
    CORDON_ERR_UNSUPPORTED = -10, /* valid but not available in this build */
    CORDON_ERR_INTERNAL = -11,    /* a bug; please report it */
    CORDON_ERR_UNAVAILABLE = -12, /* an outside authorizer did not answer: nothing is read */
} cordon_status;

#define CORDON_ERROR_MAX 256
typedef struct cordon_error {
    int code;
    char message[CORDON_ERROR_MAX];
} cordon_error;

/* A static description of a status code; never NULL. */
const char *cordon_strerror(int code);

/* ---- Opening a data directory. ---- */
typedef struct cordon cordon_t;

typedef struct cordon_options {
    uint64_t map_size;          /* most the database may grow to, bytes; 0 = 64 GiB */
    uint64_t plan_exact_floats; /* the planner scans exactly when readable rows x dim is at
                                   most this; 0 = the measured default (docs/internals) */
    int must_exist;             /* 1: open only a data directory that holds a database, and
                                   create nothing: CORDON_ERR_NOT_FOUND otherwise (for
                                   callers that only read, so a mistyped path is an error);
                                   0 = create it if missing */
    /* 1: cordon_result.candidates counts the scores a search computed, hidden chunks'
     * included (vector distances, BM25 documents): the cost measure benchmarks report. It then
     * tells a subject something about chunks it cannot read, so leave it 0 (the default:
     * candidates counts readable chunks only) wherever subjects see results. */
    int report_work;
    /* The retrieval audit (docs/internals/audit.md): 1 records every search, get and
     * is-authorized decision in the data directory's audit log (who was shown which chunk);
     * 0 (the default for the library; the server turns it on) records nothing, while
     * cordon_audit_query still reads what an earlier recording left. */
    int audit;
    /* 1: a call returns only once its record is durable (fsync; concurrent calls share one).
     * 0: records reach the disk within audit_flush_ms, so a crash can lose that last
     * interval's records (cordon_audit_info says which applies). */
    int audit_sync;
    uint32_t audit_flush_ms;     /* 0 = 200 */
    uint64_t audit_retain_s;     /* records older than this are removed; 0 = kept */
    uint64_t audit_retain_bytes; /* the oldest records go while the log holds more; 0 = none */
    int audit_queries;           /* 1: records carry the query text beside its hash */
    /* Outside policy decision points collections may delegate to (cordon_collection_spec.
     * authorizer), a JSON array, e.g. [{"name": "cerbos", "kind": "cerbos", "url":
     * "http://127.0.0.1:3592", "timeout_ms": 500, "ttl_ms": 5000}]; docs/internals/pdp.md
     * lists the keys. NULL = none. A bad array fails cordon_open with CORDON_ERR_INVALID. */
    const char *authorizers_json;
} cordon_options;

/* Opens (creating it and its parent-less directory if needed, unless opts->must_exist) the data
 * directory `dir`. opts may be NULL. Repairs derived state left behind by a crash. Returns
 * CORDON_OK, CORDON_ERR_NOT_FOUND (must_exist and no database in dir: the message names dir
 * and says how to create one), CORDON_ERR_IO or CORDON_ERR_CORRUPT. Close *out with
 * cordon_close. */
int cordon_open(const char *dir, const cordon_options *opts, cordon_t **out, cordon_error *err);
/* Closes the handle; no call may be running on it. NULL is ignored. */
void cordon_close(cordon_t *db);

/* The revision: a counter bumped by every acknowledged write. */
uint64_t cordon_revision(cordon_t *db);
/* Whether the handle can still serve: CORDON_OK, or CORDON_ERR_IO with a message naming what
 * failed closed and needs cordon_close and cordon_open: the database after a failed sync of
 * its meta page, the permission model after a failed commit, a collection after a write it
 * could not apply in memory. Reads its state only; a few microseconds. */
int cordon_check(cordon_t *db, cordon_error *err);

/* ---- Collections. ---- */
typedef enum cordon_metric {
    CORDON_METRIC_COSINE = 0, /* vectors are normalised on ingest */
    CORDON_METRIC_DOT = 1,
    CORDON_METRIC_L2 = 2,
} cordon_metric;

#define CORDON_NAME_MAX 128       /* collection names: [a-z0-9_-], 1..128 bytes */
#define CORDON_ID_MAX 500         /* chunk ids: 1..500 bytes of UTF-8 without controls */
#define CORDON_TEXT_FIELDS_MAX 16 /* text fields per collection */
#define CORDON_DIM_MAX 4096       /* vector dimension */
#define CORDON_CODES_MIN_DIM 128  /* smallest dimension given codes by default (int8_scan 0) */

typedef struct cordon_collection_spec {
    const char *name;
    uint32_t dim; /* 0 = no vectors */
    cordon_metric metric;
    const char *const *text_fields; /* names of the text fields (may be 0 of them) */
    size_t n_text_fields;
    const char *acl_field;         /* metadata field holding allowed principals in the
                                      Elasticsearch API; NULL = "allowed_groups" */
    uint32_t hnsw_m;               /* 0 = default */
    uint32_t hnsw_ef_construction; /* 0 = default (160) */
    uint32_t hnsw_ef_search;       /* 0 = chosen by cordon: 64, then at each checkpoint
                                      the smallest ef measured to reach recall@10 0.99
                                      with confidence (docs/internals/query.md) */
    /* Analyzer of every text field (and of the catch-all field "_all" that a plain text query
     * searches): "standard" (default), "english", "english:snowball", "whitespace",
     * "keyword". */
    const char *analyzer;
    /* Metadata keys indexed for filters (term, terms, range, exists). */
    const struct cordon_meta_field *meta_fields;
    size_t n_meta_fields;
    float bm25_k1; /* 0 = 1.2 */
    float bm25_b;  /* 0 = 0.75 (pass 1e-9 for no length normalisation) */
    /* 1: searches and reads may present principals directly (cordon_subject.principals), for a
     * trusted caller whose groups live in its own identity provider. 0 (the default): only
     * subjects of the permission model (cordon_subject.subject_id) may search. */
    int asserted_principals;
    /* 8-bit and 1-bit codes of the vectors (dim + 64 bytes a row at 384-d, kept in memory):
     * exact scans read a quarter of the bytes and return the same results, graph traversals
     * rank on the codes and re-score their best candidates in float, and the float rows stay
     * in the vector file, read only for those re-scores. 0 (the default): codes when the
     * dimension is at least CORDON_CODES_MIN_DIM, where they pay; 1: always; -1: never (float
     * rows only, all of them paged in at open). */
    int int8_scan;
    /* BM25 statistics (document count, document frequencies, average field length). 0 (the
     * default): computed over the chunks the searching subject may read, so chunks it cannot
     * read change none of its scores. 1: computed over every chunk of the collection, as
     * Elasticsearch does: for single-tenant collections whose scores must match a
     * collection-wide ranking; a subject's scores then reveal term statistics of chunks it
     * cannot read. Identical when the subject reads everything. */
    int bm25_global_stats;
    /* A JSON object kept with the collection for its caller, returned by
     * cordon_collection_attrs (the server keeps its Elasticsearch mapping there); NULL = {}. */
    const char *attrs_json;
    /* The outside authorizer (cordon_options.authorizers) every search and read of this
     * collection also asks which chunks the subject may read: its answer narrows what the
     * model allows, never widens it; when it does not answer, nothing is read
     * (CORDON_ERR_UNAVAILABLE). NULL = none. Only subjects of the model may then search. */
    const char *authorizer;
} cordon_collection_spec;

#define CORDON_ATTRS_MAX (256 * 1024) /* bytes of a collection's attrs JSON */

typedef enum cordon_meta_kind {
    CORDON_META_KEYWORD = 1,
    CORDON_META_NUMBER = 2,
    CORDON_META_DATE = 3, /* ISO-8601 strings or epoch milliseconds */
    CORDON_META_BOOL = 4,
} cordon_meta_kind;

#define CORDON_META_FIELDS_MAX 32

typedef struct cordon_meta_field {
    const char *name; /* a top-level key of the chunks' metadata */
    cordon_meta_kind kind;
} cordon_meta_field;

/* Creates a collection. CORDON_ERR_EXISTS if the name is taken, CORDON_ERR_INVALID for a bad
 * name, dimension or field list. */
int cordon_collection_create(cordon_t *db, const cordon_collection_spec *spec, cordon_error *err);
/* Drops a collection and all its chunks. CORDON_ERR_NOT_FOUND if there is none. */
int cordon_collection_drop(cordon_t *db, const char *name, cordon_error *err);

typedef struct cordon_meta_field_info {
    char name[CORDON_NAME_MAX + 1];
    cordon_meta_kind kind;
} cordon_meta_field_info;

typedef struct cordon_collection_info {
    char name[CORDON_NAME_MAX + 1];
    uint32_t dim;
    cordon_metric metric;
    uint64_t chunks; /* live chunks */
    size_t n_text_fields;
    char text_fields[CORDON_TEXT_FIELDS_MAX][CORDON_NAME_MAX + 1];
    char acl_field[CORDON_NAME_MAX + 1];
    size_t n_meta_fields; /* the metadata keys indexed for filters */
    cordon_meta_field_info meta_fields[CORDON_META_FIELDS_MAX];
    /* Settings, as created (cordon_collection_spec; defaults filled in). */
    char analyzer[40];
    int asserted_principals;
    int int8_scan; /* 1: the collection keeps codes (the spec's 0 resolved at creation) */
    int bm25_global_stats;
    char authorizer[64]; /* "" when none */
    uint32_t hnsw_m;
    uint32_t hnsw_ef_construction;
    uint32_t hnsw_ef_search;     /* as created: 0 = calibrated */
    uint32_t hnsw_ef_calibrated; /* the breadth unfiltered searches use when it is 0 */
    /* Rows the graph held when that breadth was measured (0: never): at a checkpoint, and
     * while serving whenever the collection has doubled since (from 20,000 live rows). */
    uint64_t calibrated_rows;
    /* Sizes. */
    uint64_t rows;         /* rows written, deleted and replaced ones included */
    uint64_t vector_bytes; /* the vector file's rows (mapped, paged in by the OS) */
    uint64_t graph_bytes;  /* the HNSW graph in memory */
    uint64_t codes_bytes;  /* 8-bit and 1-bit codes in memory (int8_scan) */
    uint64_t acl_bytes;    /* the ACL index in memory */
} cordon_collection_info;

/* A change to an existing collection, applied in one durable write. */
typedef struct cordon_collection_change {
    const char *attrs_json; /* replaces the collection's attrs; NULL = keep them */
    /* Metadata fields to index for filters from now on (those already indexed with the same
     * kind are skipped; another kind is CORDON_ERR_CONFLICT). Values already stored under a
     * new name are indexed at once: the cost of rebuilding the collection's text index, during
     * which its searches wait. */
    const struct cordon_meta_field *add_meta_fields;
    size_t n_add_meta_fields;
    /* Text fields to add (the limit stays CORDON_TEXT_FIELDS_MAX); chunks already stored
     * gain them only when rewritten. */
    const char *const *add_text_fields;
    size_t n_add_text_fields;
} cordon_collection_change;

int cordon_collection_alter(cordon_t *db, const char *name, const cordon_collection_change *change,
                            cordon_error *err);
/* The collection's attrs JSON ("{}" when none were given); free *json with cordon_free. */
int cordon_collection_attrs(cordon_t *db, const char *name, char **json, cordon_error *err);

/* What cordon_collection_compact did. */
typedef struct cordon_compact_stats {
    uint64_t rows_before;  /* rows the collection's files held, dead ones included */
    uint64_t rows_after;   /* rows they hold now */
    int compacted;         /* 0: no row was dead or out of order, nothing was rewritten */
    double ms;             /* how long it took, the wait for other writers included */
    double writes_held_ms; /* of it, how long writes to the data directory waited */
    /* The database file in use before and after: rewritten without its free pages when a
     * quarter or more of it was free (a compaction frees the pages of the records it moves). */
    uint64_t db_bytes_before, db_bytes_after;
} cordon_compact_stats;

/* Gives back the space of deleted and replaced chunks: the collection's live rows are
 * renumbered and its vector file, graph, codes and text index rewritten with them only (a
 * replace leaves the old row behind until then). Rows are numbered by ACL, so that the rows a
 * group may read lie together and scans of them read streams: a collection whose chunks came
 * in with their groups interleaved is renumbered even with no row dead. The graph's repair runs
 * first beside writes; then writes to this data directory wait for the rest; searches and gets go
 * on, against the collection as it was until the new copy commits, then against the copy: no result
 * changes. Takes about as long as copying the live vectors plus reloading the collection
 * (docs/internals/compact.md); it needs room on disk for a second copy of the collection's files
 * meanwhile, and for a copy of the database file when it is rewritten. A crash at any point
 * leaves the collection as before or as after. stats may be NULL.
 * CORDON_ERR_NOT_FOUND for no such collection, CORDON_ERR_IO or CORDON_ERR_LIMIT (disk or database
 * full: nothing changed). */
int cordon_collection_compact(cordon_t *db, const char *name, cordon_compact_stats *stats,
                              cordon_error *err);

/* Lists collections in name order into a new array; free with cordon_free. */
int cordon_collection_list(cordon_t *db, cordon_collection_info **out, size_t *n,
                           cordon_error *err);
/* Describes one collection. */
int cordon_collection_info_get(cordon_t *db, const char *name, cordon_collection_info *out,
                               cordon_error *err);

/* ---- Chunks. ---- */
typedef struct cordon_field {
    const char *name;  /* one of the collection's text fields */
    const char *value; /* UTF-8 */
} cordon_field;

#define CORDON_METADATA_MAX (64 * 1024) /* bytes of metadata JSON per chunk */
#define CORDON_TEXT_MAX (1024 * 1024)   /* bytes of text per field */
#define CORDON_BATCH_MAX 100000         /* chunks per put/delete/set_acl call */

typedef struct cordon_chunk {
    const char *id;
    const float *vector; /* dim floats; required when the collection has vectors */
    const cordon_field *fields;
    size_t n_fields;
    const char *metadata_json;  /* NULL or a JSON object */
    const char *const *allowed; /* principals that may read it; none = nobody may */
    size_t n_allowed;
    const char *const *denied; /* principals that may not, whatever else they hold */
    size_t n_denied;
    /* The tenant that owns it, or NULL: only subjects of that tenant may read it, through a
     * principal of its ACL (a wall, ANDed with the ACL; a chunk without a tenant is governed
     * by its ACL alone). 1..127 bytes without spaces, control characters or ':'. */
    const char *tenant;
    /* Labels (e.g. "secret"; same rule for names, at most 32): a subject whom the model
     * denies "label:NAME" (a deny permission, docs/internals/authz.md) never reads it. */
    const char *const *labels;
    size_t n_labels;
    /* The object of the relationship tuples it belongs to, "type:id" or "type:id#permission"
     * (permission "view" when none is named), or NULL: whoever holds that permission on the
     * object may read it too (one more allowed principal, "object:type:id#permission"; the
     * tenant and the denies still apply). Kept through cordon_set_acl. */
    const char *object;
} cordon_chunk;

/* Inserts or replaces n chunks in one transaction: all or none. *revision (may be NULL)
 * receives the revision that made them visible. */
int cordon_put(cordon_t *db, const char *collection, const cordon_chunk *chunks, size_t n,
               uint64_t *revision, cordon_error *err);
/* Checks one chunk against collection by the same rules cordon_put applies to each chunk of a
 * batch (id, vector, text fields, metadata, ACL principals), writing nothing, so a loader can
 * refuse a whole input before its first batch is written. Returns CORDON_OK (a put of the
 * chunk can then fail only for reasons outside it: the batch's size, the collection's row
 * numbers, the disk, memory, a concurrent drop), CORDON_ERR_INVALID or
 * CORDON_ERR_LIMIT naming the field, CORDON_ERR_NOT_FOUND for an unknown collection,
 * CORDON_ERR_NOMEM. Messages say "the chunk" where cordon_put's say "chunk <index>". */
int cordon_chunk_check(cordon_t *db, const char *collection, const cordon_chunk *chunk,
                       cordon_error *err);
/* Deletes chunks by id; ids that do not exist are ignored. *deleted (may be NULL) counts the
 * chunks removed. */
int cordon_delete(cordon_t *db, const char *collection, const char *const *ids, size_t n,
                  size_t *deleted, uint64_t *revision, cordon_error *err);

typedef struct cordon_acl_change {
    const char *id;
    const char *const *allowed;
    size_t n_allowed;
    const char *const *denied;
    size_t n_denied;
    const char *const *labels; /* replace the chunk's labels (none: it has none after) */
    size_t n_labels;
} cordon_acl_change;

/* Replaces the ACL (allowed, denied, labels) of existing chunks, all or none; a chunk keeps
 * its tenant (put it again to move it); CORDON_ERR_NOT_FOUND names the first id
 * that does not exist. Visible to the next request once this returns. */
int cordon_set_acl(cordon_t *db, const char *collection, const cordon_acl_change *changes, size_t n,
                   uint64_t *revision, cordon_error *err);

/* ---- Subjects: who is asking. ---- */
typedef struct cordon_subject {
    /* Asserted mode, for a trusted caller whose groups live elsewhere, on collections created
     * with asserted_principals: the principals the subject holds: "user:alice", "group:eng",
     * "role:auditor" (a bare name is a group), "tenant:acme" for each tenant it belongs to (it
     * reads no chunk of another tenant), "label:secret" for each label it may not read. A
     * subject that holds no principal reads nothing. Ignored when subject_id is set. On a
     * collection created without asserted_principals they get CORDON_ERR_NOT_FOUND, as if it did
     * not exist. */
    const char *const *principals;
    size_t n_principals;
    /* Model mode: a subject of the permission model. Its view (itself, its groups
     * transitively, its roles) is computed at the current revision, and it must hold the
     * action ("search" for searches, "read" for cordon_get) on "collection:<name>"; otherwise
     * the collection reads as missing (CORDON_ERR_NOT_FOUND). */
    const char *subject_id;
    /* For the audit only: who acts for the subject (a key with run-as, a service), and the
     * caller's name for this request (Elasticsearch's X-Opaque-Id), at most
     * CORDON_REQUEST_ID_MAX bytes each; NULL = none. */
    const char *caller;
    const char *request_id;
} cordon_subject;

#define CORDON_REQUEST_ID_MAX 256

/* The outside authorizer's part in an answer (cordon_collection_spec.authorizer). */
typedef struct cordon_authorizer_info {
    char name[64];   /* "" when the collection delegates to none */
    int cached;      /* 1: its answer came from the cache */
    uint64_t age_ms; /* how old that answer is: until ttl_ms it may lag the service */
    uint64_t ttl_ms; /* how long the authorizer's answers are kept */
} cordon_authorizer_info;

/* A chunk as a subject reads it. */
typedef struct cordon_record {
    char *id;
    float *vector; /* dim floats, or NULL */
    uint32_t dim;
    cordon_field *fields; /* strings owned by the record */
    size_t n_fields;
    char *metadata_json; /* "{}" when none */
    char **allowed;
    size_t n_allowed;
    char **denied;
    size_t n_denied;
    char *tenant; /* NULL when it has none */
    char *object; /* NULL when it names none */
    char **labels;
    size_t n_labels;
    uint64_t revision;
    uint64_t audit_seq; /* cordon_get: the audit record of this read; 0 when not recorded */
    cordon_authorizer_info authorizer; /* cordon_get: the collection's authorizer, if any */
} cordon_record;

/* Reads one chunk as subject. CORDON_ERR_NOT_FOUND when it does not exist or the subject may
 * not read it: the two cannot be told apart. Free *out with cordon_record_free. */
int cordon_get(cordon_t *db, const char *collection, const cordon_subject *subject, const char *id,
               cordon_record **out, cordon_error *err);
void cordon_record_free(cordon_record *r);
/* Reads one chunk as stored, with no permission check: for writers that must merge into what
 * is there (a partial update) or know whether an id is taken, never for answering a reader.
 * CORDON_ERR_NOT_FOUND when it does not exist. Free *out with cordon_record_free. */
int cordon_read_stored(cordon_t *db, const char *collection, const char *id, cordon_record **out,
                       cordon_error *err);
/* Whether each of n ids (at most CORDON_BATCH_MAX) names a stored chunk: out[i] 1 or 0, one
 * read for all, no permission check (a writer's question: created or replaced). */
int cordon_exists(cordon_t *db, const char *collection, const char *const *ids, size_t n,
                  unsigned char *out, cordon_error *err);

/* ---- Search. ---- */
typedef enum cordon_strategy {
    CORDON_STRATEGY_AUTO = 0,       /* the planner chooses from the readable set's size */
    CORDON_STRATEGY_EXACT = 1,      /* exact scan of the readable chunks: always complete */
    CORDON_STRATEGY_PREFILTER = 2,  /* graph traversal admitting only readable chunks */
    CORDON_STRATEGY_POSTFILTER = 3, /* unfiltered traversal, drop unreadable, widen */
} cordon_strategy;

#define CORDON_K_MAX 10000

typedef enum cordon_fusion {
    CORDON_FUSION_RRF = 0,    /* reciprocal rank fusion, as Elasticsearch's retriever.rrf */
    CORDON_FUSION_LINEAR = 1, /* weighted sum of min-max normalised scores */
} cordon_fusion;

/* A vector query, a text query, or both (hybrid: each side is permission-filtered, then fused).*/
typedef struct cordon_query {
    const float *vector;      /* dim floats, or NULL for a text-only query */
    size_t k;                 /* 0 = 10 */
    cordon_strategy strategy; /* for the vector side */
    uint32_t ef_search;       /* 0 = the collection's */
    size_t max_candidates;    /* postfilter widening limit; 0 = 1000 */
    const char *text;         /* BM25 match over every text field, or NULL */
    const char *query_json;   /* or an Elasticsearch query object: match, multi_match,
                                 match_phrase, prefix, fuzzy, term, terms, range, exists,
                                 bool; NULL = none */
    cordon_fusion fusion;     /* hybrid only */
    size_t rank_window_size;  /* hybrid: hits taken from each side; 0 = max(k, 100) */
    uint32_t rank_constant;   /* RRF constant; 0 = 60 */
    float text_weight;        /* linear fusion weights; 0 = 0.5 */
    float vector_weight;
    const char *filter_json; /* an Elasticsearch query object that only filters (e.g. term,
                                range, bool.filter on metadata fields): results come from
                                the readable chunks it matches; NULL = none */
    /* Paging. Hits are ranked by score, best first, equal scores by id (bytewise ascending).
     * from: hits of that ranking to skip (from + k at most CORDON_K_MAX, else
     * CORDON_ERR_LIMIT). after_id (with after_score, a finite number): return only hits ranked
     * after the hit (after_score, after_id), as Elasticsearch's search_after; from then counts
     * from there. NULL = from the top. A hybrid ranking holds the fused hits of its rank window
     * (rank_window_size, at least from + k): search_after pages end there. */
    size_t from;
    const char *after_id;
    float after_score;
    /* 1: every hit carries its record (cordon_hit.record), read at the revision the search
     * read, so hits and bodies are one state. */
    int with_records;
    /* 1: fill cordon_result.total. */
    int count_total;
    /* With count_total: 0 counts exactly; n lets a count that has reached n stop there
     * (cordon_result.total_capped), as Elasticsearch's track_total_hits (10,000 by default)
     * does: counting every match of a common term costs a pass over its postings. */
    uint64_t total_max;
    /* What the audit calls this search ("context" for prompt-context assembly); NULL =
     * "search". At most 16 bytes of [a-z_]. */
    const char *audit_kind;
    /* With with_records: 1 leaves cordon_record.vector NULL (dim 0), and the hits' rows of the
     * vector file are not read, for a caller that does not show the vectors. */
    int records_without_vectors;
    /* Hybrid: how many of the vector side's best hits enter the fusion, as the k of an
     * Elasticsearch knn retriever inside rrf (its k nearest, not rank_window_size of them);
     * at most rank_window_size. 0 = rank_window_size. */
    size_t vector_k;
} cordon_query;

typedef struct cordon_hit {
    char *id;
    float score;           /* higher is better */
    cordon_record *record; /* with_records: the chunk as the subject reads it; else NULL */
} cordon_hit;

typedef struct cordon_result {
    cordon_hit *hits; /* best first */
    size_t n_hits;
    int complete;      /* 1 only when these are surely the true top-k readable */
    char plan[32];     /* the plan that ran, e.g. "exact", "hnsw-filtered" */
    uint64_t readable; /* chunks the subject may read in this collection */
    /* The revision the search read: the data directory's write counter, which every write
     * bumps, including writes to chunks the subject cannot read. Pass it as a consistency
     * token; it is the one field chunks a subject cannot read change (see below). */
    uint64_t revision;
    /* Readable chunks the search chose among: readable and, with filter_json, matching the
     * filter (with cordon_options.report_work: the scores computed, hidden chunks included). */
    uint64_t candidates;
    /* count_total: the readable chunks the query matches, as Elasticsearch's hits.total: the
     * text query's matches among the candidates, a vector query's hits (the best from + k),
     * or for hybrid the text matches together with the hits the vector side added to the best
     * from + k. 0 without count_total. */
    uint64_t total;
    int total_capped;   /* total is the query's total_max; the true count may be larger */
    uint64_t audit_seq; /* the audit record of this search; 0 when the audit is off */
    cordon_authorizer_info authorizer; /* the collection's authorizer, if any */
} cordon_result;

/* Searches collection as subject. Returns only chunks the subject may read. Free *out with
 * cordon_result_free. Hidden equals missing: where the collection keeps BM25 statistics over
 * the readable set (bm25_global_stats 0) and the plan is exact (every text plan; a vector
 * plan "exact"), everything in the result but `revision` is the same as if the chunks the
 * subject cannot read did not exist. Graph plans route through every row of the graph, so
 * which readable chunks they find, their `complete` and the plan auto picks (it weighs the
 * readable share of the collection) may depend on hidden ones: ask CORDON_STRATEGY_EXACT
 * where that matters. */
int cordon_search(cordon_t *db, const char *collection, const cordon_subject *subject,
                  const cordon_query *query, cordon_result **out, cordon_error *err);
void cordon_result_free(cordon_result *r);

/* ---- Outside authorizers (docs/internals/pdp.md). ---- */

/* What each configured authorizer has answered since the handle opened. */
typedef struct cordon_authorizer_stats {
    char name[64];
    char kind[8];                       /* "cerbos" or "opa" */
    uint64_t allowed, denied, filtered; /* answers: every chunk, none, a filter */
    uint64_t cached;                    /* answers served from the cache */
    uint64_t unavailable;               /* down, an HTTP error, an answer cordon cannot apply */
    uint64_t timeouts;                  /* no answer within timeout_ms */
} cordon_authorizer_stats;

/* Copies the counters of every configured authorizer into a new array (*n of them, possibly
 * 0 with *out NULL); free with cordon_free. */
int cordon_authorizer_stats_get(cordon_t *db, cordon_authorizer_stats **out, size_t *n,
                                cordon_error *err);

/* ---- The permission model (docs/internals/authz.md has the operation vocabulary). ---- */

/* Applies one model operation, e.g.
 * {"op":"add_member","group":"eng","member":"alice","member_kind":"subject"}; durable and
 * visible to every later check and search once this returns. A bad operation (unknown
 * operator, malformed condition, cyclic group, unknown subject) changes nothing. */
int cordon_model_apply(cordon_t *db, const char *op_json, uint64_t *revision, cordon_error *err);
/* Applies a JSON array of operations ([{"op": ...}, ...]) in order as one change: all or none,
 * durable and visible together, one revision. The first that fails is named ("ops[3]: ...")
 * and nothing changes. Costs a copy of the model, so for one operation use
 * cordon_model_apply. */
int cordon_model_apply_batch(cordon_t *db, const char *ops_json, uint64_t *revision,
                             cordon_error *err);
/* Replaces the whole model by one JSON document (the shape cordon_model_export writes). */
int cordon_model_import(cordon_t *db, const char *doc_json, uint64_t *revision, cordon_error *err);
/* The whole model as one JSON document; free *json with cordon_free. */
int cordon_model_export(cordon_t *db, char **json, cordon_error *err);

typedef struct cordon_authz_request {
    const char *subject;       /* subject id */
    const char *resource;      /* "type:id", e.g. "collection:hr-payroll" */
    const char *action;        /* case-insensitive */
    const char *context_json;  /* NULL or a JSON object: operands "context.*" */
    const char *resource_json; /* NULL or a JSON object: operands "resource.*" */
    const char *scope_type;    /* both NULL for no scope */
    const char *scope_id;
    /* For the audit: as cordon_subject's; no_audit 1 leaves the decision unrecorded (a
     * check a server makes to gate a request that is itself recorded). */
    const char *caller;
    const char *request_id;
    int no_audit;
    /* As of (docs/internals/asof.md): decide by the model as it stood after as_of_revision,
     * or at the moment as_of_us (microseconds since 1970) when the revision is 0; both 0 =
     * now. A decision as of the past is not cached and not recorded by the audit. */
    uint64_t as_of_revision;
    uint64_t as_of_us;
} cordon_authz_request;

/* Sizes of a decision's text fields, NUL included: each is the permission model's own limit,
 * enforced when the model is written, so every value a decision can carry fits whole. */
#define CORDON_REASON_MAX 48    /* the longest reason code, with room to spare */
#define CORDON_RESOURCE_MAX 256 /* resource strings and patterns */
#define CORDON_ACTION_MAX 64
#define CORDON_CONDITION_MAX 1024 /* a condition as compact JSON */
#define CORDON_ROLE_MAX 128       /* subject, group and role ids */
#define CORDON_PRINCIPAL_MAX 144  /* "service:" + an id */

typedef struct cordon_decision {
    int authorized;
    char reason[CORDON_REASON_MAX];     /* e.g. "PERMISSION_GRANTED_NO_CONDITION" */
    char resource[CORDON_RESOURCE_MAX]; /* the matched permission's resource pattern, or "" */
    char action[CORDON_ACTION_MAX];
    char condition[CORDON_CONDITION_MAX];  /* its condition as JSON, or "" */
    char role[CORDON_ROLE_MAX];            /* the role that carried it, "" for a direct grant */
    char granted_to[CORDON_PRINCIPAL_MAX]; /* "user:alice", "group:eng", ... */
    uint64_t revision;
    uint64_t audit_seq; /* the audit record of the decision (one for a batch); 0 = none */
    /* When the matching permission is delegated ("authorizer" in the model): who decided,
     * and how old its answer is. reason is then PERMISSION_GRANTED_BY_AUTHORIZER,
     * PERMISSION_DENIED_BY_AUTHORIZER, or AUTHORIZER_UNAVAILABLE (not authorized: fail
     * closed); as of the past, PERMISSION_DELEGATED (the authorizer is not asked). */
    cordon_authorizer_info authorizer;
} cordon_decision;

/* Decides whether subject may do action on resource. Returns CORDON_OK whenever a decision was
 * made (denials included: see out->reason). */
int cordon_is_authorized(cordon_t *db, const cordon_authz_request *req, cordon_decision *out,
                         cordon_error *err);

#define CORDON_AUTHZ_BATCH_MAX 10000 /* resources per cordon_is_authorized_batch call */

/* Decides n requests that differ only in resource: req->resource is ignored and resources[i]
 * asked, all in one read of the model (one revision, the same in every out[i]); out holds n
 * decisions. Returns as cordon_is_authorized, or CORDON_ERR_LIMIT past
 * CORDON_AUTHZ_BATCH_MAX. */
int cordon_is_authorized_batch(cordon_t *db, const cordon_authz_request *req,
                               const char *const *resources, size_t n, cordon_decision *out,
                               cordon_error *err);

/* The principals of a subject's view, sorted; free with cordon_strings_free. */
int cordon_view(cordon_t *db, const char *subject_id, char ***principals, size_t *n,
                uint64_t *revision, cordon_error *err);
void cordon_strings_free(char **v, size_t n);

/* ---- Relationships (docs/internals/rebac.md). ---- */

/* A schema of object types, relations and permissions, and tuples such as
 * "document:7#parent@folder:3" or "folder:3#viewer@group:eng#member", are written with
 * cordon_model_apply: {"op": "put_schema", "schema": {...}} and {"op": "write_tuples",
 * "writes": [...], "deletes": [...]} (at most 100,000 tuples an op), with the revision, the
 * log and the export of every other change of the model. Subjects and objects are "type:id";
 * a cycle in the tuples counts as no path. Errors: CORDON_ERR_NOT_FOUND (no schema yet),
 * CORDON_ERR_INVALID (a name the schema lacks), CORDON_ERR_LIMIT (more than 64 nested
 * relations). */
int cordon_rebac_check(cordon_t *db, const char *subject, const char *permission,
                       const char *object, int *allowed, uint64_t *revision, cordon_error *err);
/* Calls fn with the id of each object of type the subject holds permission on (lookup
 * resources), or with "type:id" of each subject of subject_type holding permission on object
 * (lookup subjects; "type:*" for a wildcard), once each, in no order, with no ceiling on the
 * count, until fn returns non-zero (then returned). fn runs while the model is read: it must
 * not call back into db. */
typedef int (*cordon_name_fn)(void *ctx, const char *name);
int cordon_rebac_lookup_resources(cordon_t *db, const char *subject, const char *type,
                                  const char *permission, cordon_name_fn fn, void *ctx,
                                  uint64_t *revision, cordon_error *err);
int cordon_rebac_lookup_subjects(cordon_t *db, const char *object, const char *permission,
                                 const char *subject_type, cordon_name_fn fn, void *ctx,
                                 uint64_t *revision, cordon_error *err);
/* Why: the tree of relations, usersets and set operations below object#permission, as JSON
 * in *json (free with cordon_free). */
int cordon_rebac_expand(cordon_t *db, const char *object, const char *permission, char **json,
                        cordon_error *err);

typedef struct cordon_explanation {
    int readable;
    char principal[CORDON_PRINCIPAL_MAX]; /* the view principal that decided, or "" */
    char message[256];                    /* one sentence */
    uint64_t revision;
} cordon_explanation;

/* Explains why subject_id may or may not read chunk id (an administrator's question: it
 * names the chunk's ACL principals). CORDON_ERR_NOT_FOUND if the chunk does not exist. */
int cordon_explain(cordon_t *db, const char *collection, const char *subject_id, const char *id,
                   cordon_explanation *out, cordon_error *err);

/* ---- The retrieval audit (cordon_options.audit; docs/internals/audit.md). ---- */

/* Which records to read; zero fields do not filter. Times are microseconds since 1970 (UTC),
 * [since_us, until_us). */
typedef struct cordon_audit_filter {
    const char *subject;    /* records of this subject */
    const char *collection; /* of this collection */
    const char *chunk_id;   /* with collection: the records that returned this chunk */
    const char *request_id;
    const char *kind; /* "search", "context", "get", "authorize" */
    uint64_t since_us, until_us;
    uint64_t after_seq; /* records after this sequence number: pass the last one to page */
    size_t limit;       /* 0 = CORDON_AUDIT_LIMIT_MAX */
} cordon_audit_filter;

#define CORDON_AUDIT_LIMIT_MAX 10000

/* Called with each record as one JSON object ({"seq", "time", "time_us", "kind", "subject",
 * ..., "hits": [{"id", "rank", "score"}]}, docs/internals/audit.md), oldest first; valid
 * during the call. Return 0 to go on, anything else stops the read and is returned. */
typedef int (*cordon_audit_fn)(void *ctx, uint64_t seq, const char *json, size_t len);

/* Reads the records that match f (every event recorded before the call is seen). *more (may
 * be NULL) is the last sequence number delivered when the limit cut the read short (pass it
 * as after_seq for the next page), else 0. No log yet: no records. */
int cordon_audit_query(cordon_t *db, const cordon_audit_filter *f, cordon_audit_fn fn, void *ctx,
                       uint64_t *more, cordon_error *err);

/* Turns recording of one collection's events off (on 0) or back on, durably; needs the audit
 * on. */
int cordon_audit_collection(cordon_t *db, const char *collection, int on, cordon_error *err);

typedef struct cordon_audit_info {
    int recording;     /* the audit is on */
    int durable;       /* 1: each call waits for its record (audit_sync) */
    uint32_t flush_ms; /* otherwise records wait at most this long */
    uint64_t records;  /* in the log */
    uint64_t bytes;    /* the records' size, as retention counts it */
    uint64_t next_seq;
} cordon_audit_info;

int cordon_audit_info_get(cordon_t *db, cordon_audit_info *out, cordon_error *err);

/* ---- As of: permissions in the past (docs/internals/asof.md). ---- */

/* A question about one chunk (or every chunk, cordon_asof_readable) as things stood after
 * revision, or when revision is 0 at the moment time_us (microseconds since 1970, the time a
 * write was committed: transaction time). The history starts when the data directory started
 * keeping it (older ones: at their first open by a version that keeps it). Grants with a
 * validity window ("valid" in the model's grant op) are judged at time_us when it is given
 * (valid time: a revision and a moment may be asked together), else at the moment the
 * revision was committed. */
typedef struct cordon_asof_request {
    const char *collection;        /* by name: the collection it named then (one dropped since
                                      included) */
    const cordon_subject *subject; /* a subject of the model, or asserted principals */
    const char *chunk_id;
    const char *action; /* the permission asked on the collection: NULL = "read" (a get);
                           "search" for a search's hits */
    uint64_t revision;
    uint64_t time_us;
} cordon_asof_request;

typedef struct cordon_asof_answer {
    int readable;
    /* READABLE, DENIED (a denied principal of the view), NO_MATCHING_PRINCIPAL, NO_ACL,
     * CHUNK_NOT_FOUND (it did not exist then), NO_PERMISSION (no action on the collection
     * then), SUBJECT_NOT_FOUND */
    char reason[CORDON_REASON_MAX];
    char principal[CORDON_PRINCIPAL_MAX]; /* the principal that decided, or "" */
    uint64_t revision;                    /* the revision answered about */
} cordon_asof_answer;

/* Could the subject read the chunk then? CORDON_ERR_NOT_FOUND for a collection that does not
 * exist now or a moment before the history; CORDON_ERR_INVALID for a revision or time not
 * reached yet. An administrator's question: the answer names ACL principals. */
int cordon_asof_check(cordon_t *db, const cordon_asof_request *q, cordon_asof_answer *out,
                      cordon_error *err);

/* What could the subject read then: calls fn with each chunk id (in no particular order) until
 * fn returns non-zero (then returned); *n counts the ids fn was given, *revision (may be NULL)
 * is the revision answered. */
typedef int (*cordon_asof_id_fn)(void *ctx, const char *id);
int cordon_asof_readable(cordon_t *db, const cordon_asof_request *q, cordon_asof_id_fn fn,
                         void *ctx, size_t *n, uint64_t *revision, cordon_error *err);

/* Who could read one chunk at some moment of a range: calls fn with each subject of the model
 * that could (holding action, NULL = "read", on the collection), once, with the first
 * revision of the range at which it could, until fn returns non-zero; *n counts them. The
 * range runs from from_revision (0: the one current at from_us; both 0: the history's start)
 * to to_revision (0: the one at to_us; both 0: now). At most 4096 model changes and writes of
 * the chunk's ACL may fall in the range (CORDON_ERR_LIMIT: ask about a shorter one). */
typedef struct cordon_asof_range {
    const char *collection;
    const char *chunk_id;
    const char *action;
    uint64_t from_revision, from_us;
    uint64_t to_revision, to_us;
} cordon_asof_range;
typedef int (*cordon_asof_reader_fn)(void *ctx, const char *subject_id, uint64_t first_revision);
int cordon_asof_readers(cordon_t *db, const cordon_asof_range *r, cordon_asof_reader_fn fn,
                        void *ctx, size_t *n, cordon_error *err);

/* Retention of the permission history: forgets what only the states before a moment need,
 * keeping every state from it on answerable (as-of questions about earlier moments then get
 * CORDON_ERR_NOT_FOUND). The moment is before_revision, or when it is 0 the revision current
 * at before_us. *start (may be NULL) receives the revision the history now starts at,
 * *removed (may be NULL) the rows deleted. */
int cordon_history_prune(cordon_t *db, uint64_t before_revision, uint64_t before_us,
                         uint64_t *start, uint64_t *removed, cordon_error *err);

/* The audit of cordon's own enforcement: replays the audit records f selects (searches,
 * contexts, gets) against the permission history, asking of every recorded hit whether its
 * subject could read it at the record's revision. Counts records, hits, and hits that were
 * not readable when shown (which must be 0); fn (may be NULL) is called with each of those
 * as (record seq, chunk id). */
typedef struct cordon_audit_replay {
    uint64_t records, hits, unreadable, unjudged; /* unjudged: before the history */
} cordon_audit_replay;
typedef int (*cordon_audit_bad_fn)(void *ctx, uint64_t seq, const char *chunk_id);
int cordon_audit_verify(cordon_t *db, const cordon_audit_filter *f, cordon_audit_bad_fn fn,
                        void *ctx, cordon_audit_replay *out, cordon_error *err);

/* Frees memory the API handed out as a plain array (cordon_collection_list) or string. */
void cordon_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
