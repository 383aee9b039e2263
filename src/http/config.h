/* config.h: the server's configuration: defaults, a file of `key = value` lines or JSON, and
 * environment overrides. Relies on base/err.h; docs/server-config.md lists every key. */
#ifndef CDN_HTTP_CONFIG_H
#define CDN_HTTP_CONFIG_H

#include "base/err.h"

#include <stddef.h>

#define HTTP_CONFIG_RULES_MAX 32
/* A configuration file larger than this is refused. */
#define HTTP_CONFIG_FILE_MAX ((size_t)1 << 20)

/* The ACL fields of the indices whose names match pattern, a glob like "langchain-*"
 * (fnmatch(3) without flags). An empty field means "the default". */
typedef struct http_index_rule {
    char pattern[129];
    char acl_field[129];
    char denied_field[129];
} http_index_rule_t;

typedef struct http_config {
    char listen[128];           /* "127.0.0.1:9200"; "[::1]:9200" and "0.0.0.0:9200" accepted */
    unsigned threads;           /* 0 = the number of online cores (http_config_threads) */
    size_t max_body_bytes;      /* 100 MiB, as Elasticsearch's http.max_content_length */
    size_t max_bulk_items;      /* 100000 */
    size_t max_header_bytes;    /* 16 KiB */
    unsigned json_depth_max;    /* 64 */
    unsigned write_queue;       /* concurrent write requests admitted; more get 429; 16 */
    unsigned request_timeout_s; /* 60 */
    unsigned idle_timeout_s;    /* 300: keep-alive connections idle this long are closed */
    size_t max_result_window;   /* 10000: from + size bound */
    char access_log[4096];      /* "stderr" (default), "off", or a file path */
    /* TLS: PEM files of the certificate (chain) and its private key; both empty (the
     * default) serves plain HTTP, both set serves HTTPS only. */
    char tls_cert_file[4096], tls_key_file[4096];
    char acl_field[129];    /* default "allowed_groups" */
    char denied_field[129]; /* default "denied_groups" */
    char tenant_field[129]; /* the field holding a document's tenant; "" (default): none */
    char labels_field[129]; /* the field holding its labels; "" (default): none */
    char object_field[129]; /* the field naming its object of the tuples; "" (default): none */
    http_index_rule_t rules[HTTP_CONFIG_RULES_MAX]; /* in file order; the first match wins */
    size_t n_rules;
    char bootstrap_key[200]; /* "" or ID:SECRET; only from CORDON_BOOTSTRAP_KEY */
    /* The retrieval audit (cordon_options' audit fields; docs/internals/audit.md). */
    unsigned audit;             /* 1 (default): record searches, gets and decisions */
    unsigned audit_sync;        /* 1: each answer waits for its record to be durable */
    unsigned audit_flush_ms;    /* 200 */
    unsigned audit_retain_days; /* 0 (default): keep every record */
    size_t audit_max_bytes;     /* 0 (default): no size bound */
    unsigned audit_queries;     /* 1: records carry the query text */
    /* The permission history (docs/internals/asof.md): states older than this are forgotten
     * at start and every hour; 0 (default): kept. */
    unsigned history_retain_days;
    /* Compaction (cordon_collection_compact): every compact_check_s (60), a collection whose
     * dead rows (deleted and replaced chunks' rows) are at least compact_min_dead_rows (10000)
     * and compact_dead_percent (30; 0: never) of its rows is compacted. */
    unsigned compact_dead_percent, compact_min_dead_rows, compact_check_s;
    /* A JSON file holding the outside authorizers collections may delegate to
     * (cordon_options.authorizers_json, docs/internals/pdp.md); "" (default): none. */
    char authorizers_file[4096];
} http_config_t;

struct cordon_options;
/* The options to open the data directory with: the audit's settings of c. */
void http_config_db_options(const http_config_t *c, struct cordon_options *o);

/* Fills c with the defaults above. */
void http_config_defaults(http_config_t *c);

/* Reads a file of `key = value` lines (# comments, blank lines) or, if the first non-space
 * char is '{', a JSON object with the same keys, over what c holds (call
 * http_config_defaults first). Keys: listen, threads, max_body_bytes and max_header_bytes
 * (bytes, or with the suffixes b, kb, mb, gb as Elasticsearch's: "100mb"), max_bulk_items,
 * json_depth_max, write_queue, request_timeout_s, idle_timeout_s, max_result_window,
 * access_log, acl_field, denied_field, audit, audit_sync, audit_flush_ms, audit_retain_days,
 * audit_max_bytes, audit_queries, history_retain_days, compact_dead_percent,
 * compact_min_dead_rows, compact_check_s, and per-pattern rules
 * `index.<pattern>.acl_field` / `index.<pattern>.denied_field` (JSON: "indices": {"<pattern>":
 * {"acl_field": ..}} as well). A rule's field left unset takes the file's acl_field or
 * denied_field. Returns 0; CDN_ERR_IO when the file cannot be read; CDN_ERR_INVALID for an unknown
 * key, a key given twice, a bad value or malformed JSON, with "FILE:LINE: ..." naming the key and
 * what is accepted; CDN_ERR_LIMIT for a file over HTTP_CONFIG_FILE_MAX or more than
 * HTTP_CONFIG_RULES_MAX patterns. On failure c may hold some of the file's values. */
int http_config_load(http_config_t *c, const char *path, cdn_err_t *err);

/* Environment overrides: CORDON_LISTEN, CORDON_BOOTSTRAP_KEY (ID:SECRET), CORDON_ACCESS_LOG.
 * A variable unset or empty changes nothing. Returns 0 or CDN_ERR_INVALID naming the variable;
 * on failure c is unchanged. */
int http_config_env(http_config_t *c, cdn_err_t *err);

/* The ACL and deny fields for an index name: the first matching rule, else the defaults. The
 * strings point into c. */
void http_config_acl_fields(const http_config_t *c, const char *index, const char **acl,
                            const char **denied);

/* Splits listen into host (without brackets for IPv6) and port. The host must be a numeric
 * IPv4 address or an IPv6 address in brackets; the port 0 to 65535 (0: the system picks).
 * Returns 0, or CDN_ERR_INVALID for a malformed address or a host longer than hostsz - 1. */
int http_config_listen_parts(const char *listen, char *host, size_t hostsz, unsigned *port,
                             cdn_err_t *err);

/* The number of server threads: c->threads, or the online cores when it is 0 (at least 1). */
unsigned http_config_threads(const http_config_t *c);

#endif
