/* audit.c: the audit recorder behind audit.h: a record's JSON and index keys, the queue, the
 * writer thread that appends it in batches, retention, and queries over the log.
 * Relies on store/auditlog, base/buf and jansson (queries check each record they read). */
#include "query/audit.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/utf8.h"
#include "store/auditlog.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define OFF_MAX 256 /* collections whose recording is off */

typedef struct pending {
    auditlog_rec_t rec; /* json and keys owned here */
} pending_t;

struct audit {
    audit_options_t o;
    auditlog_t *log; /* NULL: never created and not enabled */
    pthread_mutex_t lock;
    pthread_cond_t work, done; /* work: the writer has something to do; done: a batch ended */
    pending_t *q;              /* the queue, oldest first */
    size_t nq, capq, qbytes;
    uint64_t next_seq, last_time, durable_seq;
    int waiters; /* sync callers and flushes waiting for their batch */
    int stopping;
    int failed;         /* the last append failed: recording is refused until one succeeds */
    cdn_err_t fail_err; /* what it said */
    pthread_t writer;
    int has_writer;
    char *off[OFF_MAX]; /* collections whose recording is off, under lock */
    size_t noff;
};

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- The writer thread. ---- */

static void free_pending(pending_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cdn_free((void *)p[i].rec.json);
        cdn_free((void *)p[i].rec.keys);
    }
    cdn_free(p);
}

/* Appends batch (n records) and applies retention; called without the lock. */
static int write_batch(audit_t *a, pending_t *batch, size_t n, cdn_err_t *err)
{
    auditlog_rec_t *recs = cdn_malloc(n * sizeof *recs);
    int rc;
    if (!recs)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory writing the audit log");
    for (size_t i = 0; i < n; i++)
        recs[i] = batch[i].rec;
    rc = auditlog_append(a->log, recs, n, err);
    cdn_free(recs);
    if (rc == CDN_OK && (a->o.retain_s || a->o.retain_bytes)) {
        uint64_t now = now_us(), before = 0;
        if (a->o.retain_s && now > a->o.retain_s * 1000000u)
            before = now - a->o.retain_s * 1000000u;
        cdn_err_t ignored; /* retention retries with the next batch */
        (void)auditlog_prune(a->log, before, a->o.retain_bytes, NULL, &ignored);
    }
    return rc;
}

static void *writer_main(void *arg)
{
    audit_t *a = arg;
    pthread_mutex_lock(&a->lock);
    for (;;) {
        if (!a->nq && a->stopping)
            break;
        if (!a->nq || (!a->waiters && !a->stopping && a->qbytes < AUDIT_QUEUE_MAX / 4)) {
            /* wait for the interval to pass, or for a caller who needs the batch now */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            uint64_t ns = (uint64_t)until.tv_nsec + (uint64_t)a->o.flush_ms * 1000000u;
            until.tv_sec += (time_t)(ns / 1000000000u);
            until.tv_nsec = (long)(ns % 1000000000u);
            int rc = pthread_cond_timedwait(&a->work, &a->lock, &until);
            if (rc != ETIMEDOUT || !a->nq)
                continue;
        }
        pending_t *batch = a->q;
        size_t n = a->nq, bytes = a->qbytes;
        a->q = NULL;
        a->nq = a->capq = a->qbytes = 0;
        pthread_mutex_unlock(&a->lock);
        cdn_err_t e = {0, ""};
        int rc = write_batch(a, batch, n, &e);
        pthread_mutex_lock(&a->lock);
        if (rc == CDN_OK) {
            a->durable_seq = batch[n - 1].rec.seq;
            a->failed = 0;
            free_pending(batch, n);
        } else {
            /* Put the batch back in front of what came meanwhile and try again later: the
             * records keep their order and numbers. */
            pending_t *q = cdn_malloc((n + a->nq) * sizeof *q);
            if (q) {
                memcpy(q, batch, n * sizeof *q);
                if (a->nq)
                    memcpy(q + n, a->q, a->nq * sizeof *q);
                cdn_free(a->q);
                cdn_free(batch);
                a->q = q;
                a->capq = a->nq = n + a->nq;
                a->qbytes += bytes;
            } else {
                free_pending(batch, n); /* lost: said to every caller from now on */
            }
            a->failed = 1;
            a->fail_err = e;
            if (a->stopping) { /* closing: a disk that refuses now will not be waited for */
                pthread_cond_broadcast(&a->done);
                break;
            }
        }
        pthread_cond_broadcast(&a->done);
        if (rc != CDN_OK && !a->stopping) {
            /* back off for an interval before the retry */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 1;
            pthread_cond_timedwait(&a->work, &a->lock, &until);
        }
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* ---- Opening. ---- */

static int add_off(void *ctx, const char *name)
{
    audit_t *a = ctx;
    if (a->noff == OFF_MAX || !(a->off[a->noff] = cdn_strdup(name)))
        return CDN_ERR_LIMIT;
    a->noff++;
    return 0;
}

int audit_open(const char *dir, const audit_options_t *o, audit_t **out, cdn_err_t *err)
{
    audit_t *a = cdn_calloc(1, sizeof *a);
    int rc;
    if (!a)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
    a->o = *o;
    if (!a->o.flush_ms)
        a->o.flush_ms = AUDIT_FLUSH_MS;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->work, NULL);
    pthread_cond_init(&a->done, NULL);
    rc = auditlog_open(dir, o->enabled, &a->log, err);
    if (rc == CDN_ERR_NOT_FOUND && !o->enabled) {
        a->log = NULL; /* nothing recorded here yet, and nothing will be */
        rc = CDN_OK;
    }
    if (rc == CDN_OK && a->log) {
        a->next_seq = auditlog_next_seq(a->log);
        a->durable_seq = a->next_seq - 1;
        a->last_time = auditlog_last_time(a->log);
        if ((rc = auditlog_flags(a->log, add_off, a, err)) != 0)
            cdn_err_set(err, rc, "cannot read the audit log's settings");
    }
    if (rc == CDN_OK && o->enabled) {
        if (pthread_create(&a->writer, NULL, writer_main, a) != 0)
            rc = cdn_err_set(err, CDN_ERR_NOMEM, "cannot start the audit writer");
        else
            a->has_writer = 1;
    }
    if (rc) {
        audit_close(a);
        return rc;
    }
    *out = a;
    return CDN_OK;
}

void audit_close(audit_t *a)
{
    if (!a)
        return;
    if (a->has_writer) {
        pthread_mutex_lock(&a->lock);
        a->stopping = 1;
        pthread_cond_broadcast(&a->work);
        pthread_mutex_unlock(&a->lock);
        pthread_join(a->writer, NULL);
    }
    free_pending(a->q, a->nq);
    for (size_t i = 0; i < a->noff; i++)
        cdn_free(a->off[i]);
    auditlog_close(a->log);
    pthread_cond_destroy(&a->work);
    pthread_cond_destroy(&a->done);
    pthread_mutex_destroy(&a->lock);
    cdn_free(a);
}

const audit_options_t *audit_options(const audit_t *a)
{
    return &a->o;
}

static size_t off_index(const audit_t *a, const char *c)
{
    for (size_t i = 0; i < a->noff; i++)
        if (!strcmp(a->off[i], c))
            return i;
    return a->noff;
}

int audit_wants(audit_t *a, const char *collection)
{
    if (!a || !a->o.enabled)
        return 0;
    if (!collection)
        return 1;
    pthread_mutex_lock(&a->lock);
    int on = !a->noff || off_index(a, collection) == a->noff;
    pthread_mutex_unlock(&a->lock);
    return on;
}

int audit_collection_set(audit_t *a, const char *collection, int on, cdn_err_t *err)
{
    int rc;
    if (!a->log)
        return cdn_err_set(err, CDN_ERR_CONFLICT,
                           "the audit is off: open with audit on to "
                           "change what it records");
    pthread_mutex_lock(&a->lock);
    size_t i = off_index(a, collection);
    if ((on && i == a->noff) || (!on && i < a->noff)) {
        pthread_mutex_unlock(&a->lock);
        return CDN_OK;
    }
    if (!on && a->noff == OFF_MAX) {
        pthread_mutex_unlock(&a->lock);
        return cdn_err_set(err, CDN_ERR_LIMIT, "recording is off for %d collections already",
                           OFF_MAX);
    }
    if ((rc = auditlog_flag_set(a->log, collection, !on, err)) == CDN_OK) {
        if (on) {
            cdn_free(a->off[i]);
            a->off[i] = a->off[--a->noff];
        } else if (!(a->off[a->noff] = cdn_strdup(collection))) {
            rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
        } else {
            a->noff++;
        }
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

/* ---- Recording. ---- */

/* s as a JSON string; text that is not UTF-8 (an asserted principal, a subject id no model
 * knows) keeps its ASCII and shows each other byte as U+FFFD, so every record decodes. */
static int json_str(cdn_buf_t *b, const char *s)
{
    size_t at, n = strlen(s);
    if (cdn_utf8_valid(s, n, &at))
        return cdn_buf_json_str(b, s);
    int rc = cdn_buf_puts(b, "\"");
    for (size_t i = 0; !rc && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80)
            rc = cdn_buf_puts(b, "\\ufffd");
        else if (c == '"' || c == '\\' || c < 0x20)
            rc = cdn_buf_printf(b, "\\u%04x", c);
        else
            rc = cdn_buf_append(b, &s[i], 1);
    }
    return rc ? rc : cdn_buf_puts(b, "\"");
}

static int put_str(cdn_buf_t *b, const char *name, const char *v)
{
    if (!v)
        return CDN_OK;
    int rc = cdn_buf_printf(b, ",\"%s\":", name);
    return rc ? rc : json_str(b, v);
}

/* The record's JSON (without seq and time, which the log keeps beside it). */
static int encode(const audit_t *a, const audit_event_t *ev, cdn_buf_t *b)
{
    int rc = cdn_buf_puts(b, "{\"kind\":");
    if (!rc)
        rc = json_str(b, ev->kind);
    if (!rc)
        rc = put_str(b, "subject", ev->subject);
    if (!rc && !ev->subject) {
        rc = cdn_buf_puts(b, ",\"principals\":[");
        for (size_t i = 0; !rc && i < ev->n_principals; i++)
            if (!(rc = i ? cdn_buf_puts(b, ",") : 0))
                rc = json_str(b, ev->principals[i]);
        if (!rc)
            rc = cdn_buf_puts(b, "]");
    }
    if (!rc)
        rc = put_str(b, "caller", ev->caller);
    if (!rc)
        rc = put_str(b, "request_id", ev->request_id);
    if (!rc)
        rc = put_str(b, "collection", ev->collection);
    if (!rc)
        rc = put_str(b, "mode", ev->mode);
    if (!rc)
        rc = put_str(b, "plan", ev->plan);
    if (!rc && ev->query_hash)
        rc = cdn_buf_printf(b, ",\"query_hash\":\"%016" PRIx64 "\"", ev->query_hash);
    if (!rc && ev->query_json && a->o.queries)
        rc = cdn_buf_printf(b, ",\"query\":%s", ev->query_json);
    if (!rc)
        rc = cdn_buf_printf(b, ",\"revision\":%" PRIu64, ev->revision);
    if (!rc && ev->action) {
        if (!(rc = put_str(b, "action", ev->action)))
            rc = cdn_buf_puts(b, ",\"decisions\":[");
        for (size_t i = 0; !rc && i < ev->n_decisions; i++) {
            if (!(rc = cdn_buf_puts(b, i ? ",{\"resource\":" : "{\"resource\":")) &&
                !(rc = json_str(b, ev->resources[i])) &&
                !(rc = cdn_buf_printf(b, ",\"authorized\":%s",
                                      ev->authorized[i] ? "true" : "false")) &&
                !(rc = put_str(b, "reason", ev->reasons[i])))
                rc = cdn_buf_puts(b, "}");
        }
        if (!rc)
            rc = cdn_buf_puts(b, "]");
    }
    if (!rc && ev->requested) {
        if (!(rc = put_str(b, "requested", ev->requested)))
            rc = cdn_buf_printf(b, ",\"found\":%s", ev->found ? "true" : "false");
    }
    if (!rc && !ev->action) {
        if (ev->mode)
            rc = cdn_buf_printf(b, ",\"complete\":%s,\"readable\":%" PRIu64,
                                ev->complete ? "true" : "false", ev->readable);
        if (!rc)
            rc = cdn_buf_puts(b, ",\"hits\":[");
        for (size_t i = 0; !rc && i < ev->n_hits; i++) {
            if (!(rc = cdn_buf_puts(b, i ? ",{\"id\":" : "{\"id\":")) &&
                !(rc = json_str(b, ev->hits[i].id)))
                rc = cdn_buf_printf(b, ",\"rank\":%zu,\"score\":%.9g}", ev->first_rank + i,
                                    (double)ev->hits[i].score);
        }
        if (!rc)
            rc = cdn_buf_puts(b, "]");
    }
    return rc ? rc : cdn_buf_puts(b, "}");
}

/* The keys the log finds ev by: its subject, its request id, each chunk it returned. */
static int index_keys(const audit_event_t *ev, uint64_t **out, size_t *n)
{
    size_t m = 2 + ev->n_hits;
    uint64_t *k = cdn_malloc(m * sizeof *k);
    *n = 0;
    if (!k)
        return CDN_ERR_NOMEM;
    if (ev->subject)
        k[(*n)++] = auditlog_key('s', ev->subject, NULL);
    if (ev->request_id)
        k[(*n)++] = auditlog_key('r', ev->request_id, NULL);
    for (size_t i = 0; ev->collection && i < ev->n_hits && *n < AUDITLOG_KEYS_MAX; i++)
        k[(*n)++] = auditlog_key('c', ev->collection, ev->hits[i].id);
    *out = k;
    return CDN_OK;
}

int audit_record(audit_t *a, const audit_event_t *ev, uint64_t *seq, cdn_err_t *err)
{
    cdn_buf_t b;
    uint64_t *keys;
    size_t nkeys;
    int rc;
    if (!a || !a->o.enabled || !a->log)
        return cdn_err_set(err, CDN_ERR_INTERNAL, "the audit is not recording");
    cdn_buf_init(&b, AUDIT_RECORD_MAX);
    if ((rc = encode(a, ev, &b)) != 0) {
        cdn_buf_free(&b);
        return cdn_err_set(
            err, rc, rc == CDN_ERR_LIMIT ? "an audit record would pass %u bytes" : "out of memory",
            AUDIT_RECORD_MAX);
    }
    if ((rc = index_keys(ev, &keys, &nkeys)) != 0) {
        cdn_buf_free(&b);
        return cdn_err_set(err, rc, "out of memory");
    }
    pthread_mutex_lock(&a->lock);
    /* A full queue waits for the writer: the audit slows callers rather than lose records. */
    while (!a->failed && a->qbytes >= AUDIT_QUEUE_MAX) {
        a->waiters++;
        pthread_cond_signal(&a->work);
        pthread_cond_wait(&a->done, &a->lock);
        a->waiters--;
    }
    if (a->failed || (a->nq == a->capq && a->capq > SIZE_MAX / 2 / sizeof *a->q)) {
        cdn_err_t fe = a->fail_err;
        pthread_mutex_unlock(&a->lock);
        cdn_buf_free(&b);
        cdn_free(keys);
        return cdn_err_set(err, CDN_ERR_IO,
                           "the audit log cannot be written (%s): nothing is "
                           "answered unrecorded",
                           fe.msg);
    }
    if (a->nq == a->capq) {
        size_t cap = a->capq ? a->capq * 2 : 64;
        pending_t *q = cdn_realloc(a->q, cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&a->lock);
            cdn_buf_free(&b);
            cdn_free(keys);
            return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory");
        }
        a->q = q;
        a->capq = cap;
    }
    uint64_t t = now_us();
    if (t < a->last_time) /* the clock stepped back: keep times ordered along the log */
        t = a->last_time;
    a->last_time = t;
    pending_t *p = &a->q[a->nq++];
    p->rec = (auditlog_rec_t){a->next_seq++, t, keys, nkeys, b.data, b.len};
    a->qbytes += b.len + nkeys * 8 + sizeof *p;
    uint64_t mine = p->rec.seq;
    if (a->qbytes >= AUDIT_QUEUE_MAX / 4) /* big enough to write without waiting */
        pthread_cond_signal(&a->work);
    if (seq)
        *seq = mine;
    rc = CDN_OK;
    if (a->o.sync) {
        a->waiters++;
        pthread_cond_signal(&a->work);
        while (a->durable_seq < mine && !a->failed)
            pthread_cond_wait(&a->done, &a->lock);
        a->waiters--;
        if (a->durable_seq < mine)
            rc = cdn_err_set(err, CDN_ERR_IO, "the audit log cannot be written (%s)",
                             a->fail_err.msg);
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

int audit_flush(audit_t *a, cdn_err_t *err)
{
    int rc = CDN_OK;
    if (!a || !a->has_writer)
        return CDN_OK;
    pthread_mutex_lock(&a->lock);
    uint64_t want = a->next_seq - 1;
    a->waiters++;
    pthread_cond_signal(&a->work);
    while (a->durable_seq < want && !a->failed)
        pthread_cond_wait(&a->done, &a->lock);
    a->waiters--;
    if (a->durable_seq < want)
        rc = cdn_err_set(err, CDN_ERR_IO, "the audit log cannot be written (%s)", a->fail_err.msg);
    pthread_mutex_unlock(&a->lock);
    return rc;
}

/* ---- Reading. ---- */

typedef struct query {
    const audit_filter_t *f;
    size_t limit, n;
    uint64_t last;
    int full; /* one more record matched than the limit takes */
    audit_out_fn fn;
    void *ctx;
    cdn_buf_t out;
} query_t;

static int str_is(json_t *o, const char *key, const char *want)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v && !strcmp(v, want);
}

/* 1 when record j passes every condition of f (index keys are hashes: this is the check). */
static int matches(const audit_filter_t *f, json_t *j)
{
    if (f->subject && !str_is(j, "subject", f->subject))
        return 0;
    if (f->collection && !str_is(j, "collection", f->collection))
        return 0;
    if (f->request_id && !str_is(j, "request_id", f->request_id))
        return 0;
    if (f->kind && !str_is(j, "kind", f->kind))
        return 0;
    if (f->chunk) {
        size_t i;
        json_t *h;
        json_array_foreach(json_object_get(j, "hits"), i, h)
        {
            if (str_is(h, "id", f->chunk))
                return 1;
        }
        return 0;
    }
    return 1;
}

static int on_rec(void *ctx, uint64_t seq, uint64_t time_us, const char *json, size_t len)
{
    query_t *q = ctx;
    char when[40];
    struct tm tm;
    time_t secs = (time_t)(time_us / 1000000u);
    json_t *j = json_loadb(json, len, 0, NULL);
    int rc;
    if (!json_is_object(j) || len < 2) {
        json_decref(j);
        return CDN_ERR_CORRUPT;
    }
    int ok = matches(q->f, j);
    json_decref(j);
    if (!ok)
        return 0;
    if (q->n == q->limit) {
        q->full = 1; /* there is more to page through */
        return 1;
    }
    gmtime_r(&secs, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    q->out.len = 0;
    if ((rc = cdn_buf_printf(&q->out,
                             "{\"seq\":%" PRIu64 ",\"time\":\"%s.%06uZ\",\"time_us\":%" PRIu64 ",",
                             seq, when, (unsigned)(time_us % 1000000u), time_us)) != 0 ||
        (rc = cdn_buf_append(&q->out, json + 1, len - 1)) != 0)
        return rc;
    q->n++;
    q->last = seq;
    return q->fn(q->ctx, seq, q->out.data, q->out.len);
}

int audit_query(audit_t *a, const audit_filter_t *f, audit_out_fn fn, void *ctx, uint64_t *more,
                cdn_err_t *err)
{
    query_t q = {f, f->limit ? f->limit : AUDIT_QUERY_LIMIT_MAX, 0, 0, 0, fn, ctx, {0}};
    uint64_t key = 0, from = f->after_seq + 1;
    int rc;
    if (more)
        *more = 0;
    if (q.limit > AUDIT_QUERY_LIMIT_MAX)
        return cdn_err_set(err, CDN_ERR_LIMIT, "limit is %zu; the most is %d", q.limit,
                           AUDIT_QUERY_LIMIT_MAX);
    if (f->chunk && !f->collection)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "a chunk is named within its collection: give "
                           "the collection too");
    if (!a->log)
        return CDN_OK;
    if ((rc = audit_flush(a, err)) != 0)
        return rc;
    if (f->since_us) {
        uint64_t s;
        if ((rc = auditlog_seq_at(a->log, f->since_us, &s, err)) != 0)
            return rc;
        if (s > from)
            from = s;
    }
    /* the narrowest index first: a request has a few records, a chunk some, a subject many */
    if (f->request_id)
        key = auditlog_key('r', f->request_id, NULL);
    else if (f->chunk)
        key = auditlog_key('c', f->collection, f->chunk);
    else if (f->subject)
        key = auditlog_key('s', f->subject, NULL);
    cdn_buf_init(&q.out, AUDIT_RECORD_MAX + 128);
    rc = auditlog_scan(a->log, key, from, f->until_us, on_rec, &q, err);
    cdn_buf_free(&q.out);
    if (q.full) {
        if (more)
            *more = q.last;
        return CDN_OK;
    }
    if (rc == CDN_ERR_CORRUPT)
        return cdn_err_set(err, rc, "an audit record does not decode");
    return rc;
}

int audit_stats(audit_t *a, audit_stats_t *out, cdn_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (!a->log)
        return CDN_OK;
    uint64_t first;
    int rc = audit_flush(a, err);
    if (rc == CDN_OK && (rc = auditlog_seq_at(a->log, 0, &first, err)) == CDN_OK) {
        out->next_seq = auditlog_next_seq(a->log);
        out->records = out->next_seq - first;
        out->bytes = auditlog_bytes(a->log);
    }
    return rc;
}
