/* auditlog.h: the durable retrieval audit, an append-only log of records in an LMDB
 * environment of its own (the data directory's audit/), so that recording never waits on the
 * data's single writer nor it on the audit.
 * Relies on store/store. A record is a sequence number (1, 2, 3, ... in the order appended),
 * a time in microseconds that never decreases with the sequence, index keys (hashes the log
 * can find the record by: a subject, a returned chunk, a request id) and JSON text the log
 * does not read. Values handed to a scan callback are valid during the call only. */
#ifndef CDN_AUDITLOG_H
#define CDN_AUDITLOG_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct auditlog auditlog_t;

typedef struct auditlog_rec {
    uint64_t seq;         /* the next sequence number, then one more for each record of a batch */
    uint64_t time_us;     /* microseconds since 1970, at least the previous record's */
    const uint64_t *keys; /* index keys (auditlog_key); borrowed */
    size_t nkeys;
    const char *json; /* the record itself; borrowed */
    size_t len;
} auditlog_rec_t;

#define AUDITLOG_KEYS_MAX 20000 /* index keys per record: a page of CORDON_K_MAX hits and more */

/* Opens the log in directory dir, creating the directory and the log if create is 1;
 * create 0 and no log there: CDN_ERR_NOT_FOUND. Close with auditlog_close. */
int auditlog_open(const char *dir, int create, auditlog_t **out, cdn_err_t *err);
void auditlog_close(auditlog_t *l);

/* The sequence number the next record gets, and the last record's time (0 when empty). */
uint64_t auditlog_next_seq(const auditlog_t *l);
uint64_t auditlog_last_time(const auditlog_t *l);
/* Bytes the records hold (JSON, keys and index entries), as retention counts them. */
uint64_t auditlog_bytes(auditlog_t *l);

/* Appends n records in one durable transaction (fsync before it returns 0): all or none.
 * Each record's seq must be auditlog_next_seq() then one more each: CDN_ERR_INTERNAL
 * otherwise. CDN_ERR_IO or CDN_ERR_LIMIT (the disk or the map is full) write nothing. */
int auditlog_append(auditlog_t *l, const auditlog_rec_t *recs, size_t n, cdn_err_t *err);

/* An index key: a hash of the kind letter and the strings (b may be NULL), never 0.
 * Different strings may share a key: whoever scans by key checks the records it gets. */
uint64_t auditlog_key(char kind, const char *a, const char *b);

/* Calls fn for each record with seq >= from_seq and time < until_us (0 = no bound), in
 * sequence order, until fn returns non-zero (then returned); with key != 0 only records
 * carrying that index key. Returns 0, fn's value, or CDN_ERR_IO / CDN_ERR_CORRUPT. */
typedef int (*auditlog_fn)(void *ctx, uint64_t seq, uint64_t time_us, const char *json, size_t len);
int auditlog_scan(auditlog_t *l, uint64_t key, uint64_t from_seq, uint64_t until_us, auditlog_fn fn,
                  void *ctx, cdn_err_t *err);

/* The first sequence number whose record's time is at least time_us (auditlog_next_seq when
 * none is), found by bisection: times never decrease along the sequence. */
int auditlog_seq_at(auditlog_t *l, uint64_t time_us, uint64_t *seq, cdn_err_t *err);

/* Retention: removes the oldest records while their time is below before_us (0 = no age
 * bound) or the log holds more than max_bytes (0 = no size bound), with their index
 * entries, in one durable transaction. *removed (may be NULL) counts them. */
int auditlog_prune(auditlog_t *l, uint64_t before_us, uint64_t max_bytes, uint64_t *removed,
                   cdn_err_t *err);

/* Named flags the log keeps for its owner (collections whose recording is off):
 * auditlog_flag_set writes (on 1) or removes (on 0) durably; auditlog_flags calls fn with
 * each name set, in name order. */
int auditlog_flag_set(auditlog_t *l, const char *name, int on, cdn_err_t *err);
typedef int (*auditlog_flag_fn)(void *ctx, const char *name);
int auditlog_flags(auditlog_t *l, auditlog_flag_fn fn, void *ctx, cdn_err_t *err);

#endif
