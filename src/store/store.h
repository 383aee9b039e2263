/* store.h: the durable system of record, an LMDB environment with a fixed set of tables.
 * Relies on LMDB. Values returned by reads point into LMDB's map and are valid until the
 * transaction ends; callers copy what they keep. */
#ifndef CDN_STORE_H
#define CDN_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct store store_t;
typedef struct store_txn store_txn_t;

/* The tables. Keys that belong to a collection start with its id as 4 big-endian bytes, so a
 * collection's records sort together and a prefix scan finds them. */
typedef enum store_table {
    STORE_META = 0,      /* "revision" -> u64, "format" -> u32, "next_coll" -> u32 */
    STORE_COLLECTIONS,   /* name -> collection config (JSON, see query/coll.c) */
    STORE_CHUNKS,        /* coll + external id -> chunk record (query/chunkrec.c) */
    STORE_ROWS,          /* coll + row (u32 BE) -> external id */
    STORE_ACLS,          /* coll + row (u32 BE) -> packed principal ids (acl/acl.h) */
    STORE_PRINCIPALS,    /* principal name -> u32 id */
    STORE_PRINCIPAL_IDS, /* u32 id (BE) -> principal name */
    STORE_MODEL_LOG,     /* revision (u64 BE) -> permission-model operation (JSON) */
    /* The history as-of questions read (store/history.h): */
    STORE_HIST_TIME,  /* commit time (u64 BE µs) + revision (u64 BE) -> nothing */
    STORE_HIST_ACL,   /* coll + xxh64(external id) + revision -> id, NUL, packed ACL or nothing */
    STORE_HIST_MODEL, /* revision -> every model log record, never folded */
    STORE_HIST_SNAP,  /* revision -> the whole model after it (a checkpoint for replay) */
    STORE_NTABLES
} store_table_t;

/* Opens (creating if needed) the LMDB environment in directory `dir` (which must exist).
 * map_size is the most the database may grow to (0 = 64 GiB). Returns 0, CDN_ERR_IO or
 * CDN_ERR_NOMEM. The caller closes *out with store_close. */
int store_open(const char *dir, uint64_t map_size, store_t **out, cdn_err_t *err);
/* 1 when dir holds a database store_open would open rather than create, else 0. */
int store_exists(const char *dir);
/* Opens another environment in dir with its own ntables tables (at most STORE_TABLES_MAX),
 * named by names; its tables are numbered 0..ntables-1 and passed to the functions below as
 * store_table_t values. Returns as store_open. */
#define STORE_TABLES_MAX 16
int store_open_tables(const char *dir, uint64_t map_size, const char *const *names, int ntables,
                      store_t **out, cdn_err_t *err);
void store_close(store_t *s);
/* CDN_OK while the database can begin a transaction. CDN_ERR_IO once LMDB refuses all use of
 * the environment, which it does after it failed to write or sync its meta page (a failed sync
 * of the disk): only a reopen can tell what reached the disk. */
int store_check(store_t *s, cdn_err_t *err);

/* Unmaps from this process the pages of the database file that reads have brought in; they stay
 * in the kernel's page cache and come back on the next read at the cost of a minor fault.
 * Opening scans whole tables to rebuild in-memory state, and the kernel maps pages around each
 * one it faults in, so after open most of the file counts as the process's resident memory
 * (1M chunks: 0.48 GB) though nothing reads it again. Also asks for the file to be read ahead
 * into the page cache, so that a cold cache does not make the first results wait on the disk.
 * Safe at any time (LMDB's map is read-only and shared: no data is lost, only mappings). */
void store_release_pages(store_t *s);

/* Memory after large writes. LMDB keeps every single page a write transaction dirtied on a
 * list of its own for reuse and frees the list only when the environment closes: a compaction's
 * renumbering dirties most of the database (10 MB at 50,000 chunks, hundreds at a million), a
 * drop or a large batch alike. So after a commit that put or deleted 8 MiB or 20,000 records,
 * the store closes and opens the environment again as the last open transaction ends (the
 * thread ending it pays 0.2 - 6 ms at 1M chunks). store_trim does it now: new transactions
 * wait (store_txn_begin blocks) while open ones drain, for at most wait_ms. *trimmed is 1 when it
 * was done, 0 when transactions were still open after wait_ms (nothing changed; try again later) or
 * another trim was under way. Both return or leave CDN_ERR_IO when the environment could not be
 * opened again: every later transaction then fails with CDN_ERR_IO, as store_check does, until the
 * data directory is reopened. A thread that holds a transaction must not call store_trim. */
int store_trim(store_t *s, int wait_ms, int *trimmed, cdn_err_t *err);
/* How many times the environment was opened again since store_open (for tests and metrics). */
uint64_t store_trims(store_t *s);

/* The database file in bytes: *used, its extent in use (up to its last page), and of that
 * *free_bytes, free pages LMDB will reuse. 0 or CDN_ERR_IO. */
int store_file_bytes(store_t *s, uint64_t *used, uint64_t *free_bytes);

/* Gives back the database file's free pages to the disk: LMDB reuses them but never shrinks its
 * file. Writes a copy without them (STORE_COMPACT_TMP, synced) while reads go on and new write
 * transactions wait; then, as store_trim, waits for open transactions to end, closes the
 * environment, renames the copy over data.mdb and opens it (which also hands back the memory
 * store_trim does). Open write transactions are waited for at most wait_ms before the copy, and
 * readers drained at most wait_ms after it; past either, or when another process has the
 * database open, nothing changes and *done is 0. A failed copy (CDN_ERR_LIMIT for a full disk,
 * CDN_ERR_IO) changes nothing; a failure to open again is as store_trim's. A kill at any point
 * leaves the old file or the new one, whole: open removes a copy left behind. A thread that
 * holds a transaction must not call it. */
#define STORE_COMPACT_TMP "data.mdb.compact"
int store_compact_file(store_t *s, int wait_ms, int *done, cdn_err_t *err);

/* Begins a transaction: write != 0 for the single writer. Returns 0 or CDN_ERR_IO. A
 * transaction is used by one thread and ends with exactly one of commit or abort. Waits while
 * a store_trim drains transactions (a thread already holding one waits until the trim gives
 * up). */
int store_txn_begin(store_t *s, int write, store_txn_t **out, cdn_err_t *err);
/* Makes a write durable (fsync) before returning 0; CDN_ERR_IO if the disk refused. The
 * transaction is gone either way. */
int store_txn_commit(store_txn_t *t, cdn_err_t *err);
void store_txn_abort(store_txn_t *t);

/* Reads: 0 with val and vlen pointing into the map, or CDN_ERR_NOT_FOUND. */
int store_get(store_txn_t *t, store_table_t tb, const void *key, size_t klen, const void **val,
              size_t *vlen);
/* Writes and deletes: 0, CDN_ERR_LIMIT (database full) or CDN_ERR_IO. Deleting a missing key
 * returns CDN_ERR_NOT_FOUND. */
int store_put(store_txn_t *t, store_table_t tb, const void *key, size_t klen, const void *val,
              size_t vlen);
int store_del(store_txn_t *t, store_table_t tb, const void *key, size_t klen);

/* Calls fn for each record whose key starts with prefix, in key order, until fn returns
 * non-zero (which is then returned). Returns 0, fn's value, or CDN_ERR_IO. */
typedef int (*store_iter_fn)(void *ctx, const void *key, size_t klen, const void *val, size_t vlen);
int store_scan_prefix(store_txn_t *t, store_table_t tb, const void *prefix, size_t plen,
                      store_iter_fn fn, void *ctx);
/* As store_scan_prefix, starting at the first key at or after start (which should itself
 * start with prefix). */
int store_scan_from(store_txn_t *t, store_table_t tb, const void *prefix, size_t plen,
                    const void *start, size_t slen, store_iter_fn fn, void *ctx);
/* The table's last record: 0 with key and val pointing into the map, CDN_ERR_NOT_FOUND when
 * the table is empty, or CDN_ERR_IO. */
int store_last(store_txn_t *t, store_table_t tb, const void **key, size_t *klen, const void **val,
               size_t *vlen);
/* As store_scan_prefix, backwards: from the last key at or before start (which should start
 * with prefix) down to the first key with prefix. */
int store_scan_back(store_txn_t *t, store_table_t tb, const void *prefix, size_t plen,
                    const void *start, size_t slen, store_iter_fn fn, void *ctx);
/* Deletes every record whose key starts with prefix. */
int store_del_prefix(store_txn_t *t, store_table_t tb, const void *prefix, size_t plen);

/* A u64 (8 bytes BE) under key in STORE_META: 0 with *val, and *set (may be NULL) 1 when it
 * is there; *val 0 and *set 0 when it is not; CDN_ERR_CORRUPT for another length. */
int store_meta_u64(store_txn_t *t, const char *key, uint64_t *val, int *set);

/* The revision counter in STORE_META (0 in a new store). Setting it also records when the
 * revision was committed (STORE_HIST_TIME: the wall clock, never before the last one). */
int store_revision_get(store_txn_t *t, uint64_t *rev);
int store_revision_set(store_txn_t *t, uint64_t rev);

/* Big-endian key helpers. */
static inline void store_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}
static inline uint32_t store_rd32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void store_be64(unsigned char *p, uint64_t v)
{
    store_be32(p, (uint32_t)(v >> 32));
    store_be32(p + 4, (uint32_t)v);
}
static inline uint64_t store_rd64(const unsigned char *p)
{
    return (uint64_t)store_rd32(p) << 32 | store_rd32(p + 4);
}

/* Test hook, like the allocator's (base/mem.h): the n-th write from now fails with CDN_ERR_IO as
 * a full or failing disk would (0 = the next one); -1 disables. Writes are store_put,
 * store_del, store_txn_commit (the transaction is then aborted, as LMDB does on a failed
 * commit), each gathered pwrite of vecfile_write, and vecfile_sync. Process-wide; tests only. */
void store_fail_after(long n);

/* For the store module's files: 1 when the write about to happen is the one store_fail_after chose.
 */
int store_fault_hit(void);

#endif
