/* audit.h: the retrieval audit: who was shown which chunk, as one record per search, get and
 * is-authorized decision, appended to the data directory's audit log (store/auditlog).
 * Relies on store/auditlog. A caller records an event (audit_record: the JSON is built and
 * queued at once, a few microseconds) and a writer thread of the recorder appends the queue in
 * batches, each one durable transaction: with sync set the call waits for its batch (group
 * commit), otherwise a record reaches the disk within flush_ms and a crash can lose the
 * records of that last interval. A log that refuses a write fails the calls that record (fail
 * closed) until a retry succeeds. Safe from many threads. docs/internals/audit.md. */
#ifndef CDN_AUDIT_H
#define CDN_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct audit audit_t;

typedef struct audit_options {
    int enabled;           /* 1: record; 0: the log is only read (opened if it exists) */
    int sync;              /* 1: audit_record returns once its record is durable */
    uint32_t flush_ms;     /* most a record waits in the queue; 0 = AUDIT_FLUSH_MS */
    uint64_t retain_s;     /* records older than this are removed; 0 = kept */
    uint64_t retain_bytes; /* the oldest records go while the log holds more; 0 = no bound */
    int queries;           /* 1: records carry the query itself beside its hash */
} audit_options_t;

#define AUDIT_FLUSH_MS 200
#define AUDIT_QUEUE_MAX (64u << 20)  /* bytes queued before recording callers wait */
#define AUDIT_RECORD_MAX (16u << 20) /* bytes of one record's JSON */
#define AUDIT_QUERY_LIMIT_MAX 10000  /* records one audit_query returns */

/* Opens the recorder over the log in dir (created when o->enabled). Close with audit_close,
 * which writes what is queued first. */
int audit_open(const char *dir, const audit_options_t *o, audit_t **out, cdn_err_t *err);
void audit_close(audit_t *a);

/* 1 when events of collection (NULL: events of no collection) are recorded: the recorder is
 * enabled and the collection's recording was not turned off. */
int audit_wants(audit_t *a, const char *collection);
/* Turns the recording of one collection's events off (on 0) or back on, durably. */
int audit_collection_set(audit_t *a, const char *collection, int on, cdn_err_t *err);
/* The options the recorder runs with. */
const audit_options_t *audit_options(const audit_t *a);

typedef struct audit_hit {
    const char *id;
    float score;
} audit_hit_t;

/* One event; every string is borrowed and may be NULL where it does not apply. */
typedef struct audit_event {
    const char *kind;              /* "search", "context", "get", "authorize" */
    const char *subject;           /* a subject of the model, or NULL with principals */
    const char *const *principals; /* asserted principals when there is no subject */
    size_t n_principals;
    const char *caller;     /* who acts for the subject (run-as), or NULL */
    const char *request_id; /* the caller's name for the request, or NULL */
    const char *collection;
    /* search */
    const char *mode, *plan; /* "text", "vector", "hybrid"; the plan that ran */
    uint64_t query_hash;
    const char *query_json; /* with queries: a JSON object describing the query */
    uint64_t revision, readable;
    int complete;
    const audit_hit_t *hits; /* in rank order, the first ranked first_rank */
    size_t n_hits, first_rank;
    /* get */
    const char *requested; /* the id asked for; found: it was returned */
    int found;
    /* authorize: n_decisions resources with their decisions */
    const char *action;
    const char *const *resources;
    const int *authorized;
    const char *const *reasons;
    size_t n_decisions;
} audit_event_t;

/* Records ev; *seq (may be NULL) receives its sequence number. CDN_ERR_IO when the log cannot
 * be written, CDN_ERR_LIMIT past AUDIT_RECORD_MAX; nothing is recorded then. */
int audit_record(audit_t *a, const audit_event_t *ev, uint64_t *seq, cdn_err_t *err);
/* Waits until every record queued before the call is durable. */
int audit_flush(audit_t *a, cdn_err_t *err);

typedef struct audit_filter {
    const char *subject;    /* records of this subject */
    const char *collection; /* of this collection */
    const char *chunk;      /* (with collection) that returned this chunk */
    const char *request_id;
    const char *kind;
    uint64_t since_us, until_us; /* time in [since, until); 0 = unbounded */
    uint64_t after_seq;          /* only records after this one (paging) */
    size_t limit;                /* 0 = AUDIT_QUERY_LIMIT_MAX */
} audit_filter_t;

/* Calls fn with each matching record as one JSON object (seq and time first), oldest first,
 * after flushing the queue so that every event recorded before the call is seen. *more (may
 * be NULL) is the last seq delivered when the limit stopped the scan (pass it as after_seq),
 * else 0. A log that was never created has no records. */
typedef int (*audit_out_fn)(void *ctx, uint64_t seq, const char *json, size_t len);
int audit_query(audit_t *a, const audit_filter_t *f, audit_out_fn fn, void *ctx, uint64_t *more,
                cdn_err_t *err);

typedef struct audit_stats {
    uint64_t records; /* in the log */
    uint64_t bytes;
    uint64_t next_seq;
} audit_stats_t;
int audit_stats(audit_t *a, audit_stats_t *out, cdn_err_t *err);

#endif
