/* config.c: the server's configuration: one table of keys drives both file formats, so a key
 * means the same in `key = value` lines and in JSON. Relies on base/buf.h, jansson, fnmatch and
 * inet_pton. */
#include "http/config.h"
#include "base/buf.h"
#include "base/err.h"
#include "cordon.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KB ((unsigned long long)1 << 10)
#define MB ((unsigned long long)1 << 20)
#define GB ((unsigned long long)1 << 30)

/* How a key's value is read and where it is stored. */
typedef enum kind {
    K_LISTEN,   /* char[128], an address http_config_listen_parts accepts */
    K_UNSIGNED, /* unsigned, a whole number in [min, max] */
    K_SIZE,     /* size_t, a whole number in [min, max] */
    K_BYTES,    /* size_t, bytes with an optional Elasticsearch suffix, in [min, max] */
    K_LOG,      /* char[4096]: stderr, off or a path */
    K_FIELD,    /* char[129]: a document field name */
    K_PATH,     /* char[4096]: a file's path */
} kind_t;

typedef struct key_spec {
    const char *name;
    kind_t kind;
    size_t offset;
    unsigned long long min, max;
    const char *accepted; /* the end of an error message: what the key takes */
} key_spec_t;

#define AT(f) offsetof(http_config_t, f)
#define FIELD_ACCEPTED "a field name of 1 to 128 bytes, without spaces or control characters"
#define BYTES_ACCEPTED(range) range ", in bytes or with a suffix b, kb, mb or gb (\"100mb\")"
static const key_spec_t k_keys[] = {
    {"listen", K_LISTEN, AT(listen), 0, 0,
     "IPV4:PORT or [IPV6]:PORT, such as 127.0.0.1:9200, 0.0.0.0:9200 or [::1]:9200"},
    {"threads", K_UNSIGNED, AT(threads), 0, 1024, "0 (one per online core) to 1024"},
    {"max_body_bytes", K_BYTES, AT(max_body_bytes), KB, 2 * GB, BYTES_ACCEPTED("1kb to 2gb")},
    {"max_bulk_items", K_SIZE, AT(max_bulk_items), 1, 10000000, "1 to 10000000"},
    {"max_header_bytes", K_BYTES, AT(max_header_bytes), KB, MB, BYTES_ACCEPTED("1kb to 1mb")},
    {"json_depth_max", K_UNSIGNED, AT(json_depth_max), 8, 1024, "8 to 1024"},
    {"write_queue", K_UNSIGNED, AT(write_queue), 1, 4096, "1 to 4096"},
    {"request_timeout_s", K_UNSIGNED, AT(request_timeout_s), 1, 86400, "1 to 86400 seconds"},
    {"idle_timeout_s", K_UNSIGNED, AT(idle_timeout_s), 1, 86400, "1 to 86400 seconds"},
    {"max_result_window", K_SIZE, AT(max_result_window), 1, 10000000, "1 to 10000000"},
    {"access_log", K_LOG, AT(access_log), 0, 0,
     "stderr, off, or the path of a file to append to (up to 4095 bytes)"},
    {"tls_cert_file", K_PATH, AT(tls_cert_file), 0, 0,
     "the path of a PEM certificate (chain) file, up to 4095 bytes"},
    {"tls_key_file", K_PATH, AT(tls_key_file), 0, 0,
     "the path of the PEM private key file of tls_cert_file, up to 4095 bytes"},
    {"acl_field", K_FIELD, AT(acl_field), 0, 0, FIELD_ACCEPTED},
    {"denied_field", K_FIELD, AT(denied_field), 0, 0, FIELD_ACCEPTED},
    {"tenant_field", K_FIELD, AT(tenant_field), 0, 0, FIELD_ACCEPTED},
    {"labels_field", K_FIELD, AT(labels_field), 0, 0, FIELD_ACCEPTED},
    {"object_field", K_FIELD, AT(object_field), 0, 0, FIELD_ACCEPTED},
    {"audit", K_UNSIGNED, AT(audit), 0, 1, "1 (record who was shown what) or 0"},
    {"audit_sync", K_UNSIGNED, AT(audit_sync), 0, 1,
     "0 (records reach the disk within audit_flush_ms) or 1 (each answer waits for its "
     "record)"},
    {"audit_flush_ms", K_UNSIGNED, AT(audit_flush_ms), 1, 60000, "1 to 60000 milliseconds"},
    {"audit_retain_days", K_UNSIGNED, AT(audit_retain_days), 0, 36500,
     "0 (keep every record) to 36500 days"},
    {"audit_max_bytes", K_BYTES, AT(audit_max_bytes), 0, 1024 * GB,
     BYTES_ACCEPTED("0 (no bound) to 1024gb")},
    {"audit_queries", K_UNSIGNED, AT(audit_queries), 0, 1,
     "0 (records carry a hash of the query) or 1 (the query text too)"},
    {"history_retain_days", K_UNSIGNED, AT(history_retain_days), 0, 36500,
     "0 (keep the whole permission history) to 36500 days"},
    {"compact_dead_percent", K_UNSIGNED, AT(compact_dead_percent), 0, 99,
     "0 (never compact on its own) to 99 percent of a collection's rows"},
    {"compact_min_dead_rows", K_UNSIGNED, AT(compact_min_dead_rows), 1, 1000000000,
     "1 to 1000000000 rows"},
    {"compact_check_s", K_UNSIGNED, AT(compact_check_s), 1, 86400, "1 to 86400 seconds"},
    {"authorizers_file", K_PATH, AT(authorizers_file), 0, 0,
     "the path of a JSON file holding an array of authorizers, up to 4095 bytes"},
};
#define N_KEYS (sizeof k_keys / sizeof k_keys[0])
#define RULE_PREFIX "index."

void http_config_defaults(http_config_t *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->listen, sizeof c->listen, "127.0.0.1:9200");
    c->threads = 0;
    c->max_body_bytes = 100 * MB;
    c->max_bulk_items = 100000;
    c->max_header_bytes = 16 * KB;
    c->json_depth_max = 64;
    c->write_queue = 16;
    c->request_timeout_s = 60;
    c->idle_timeout_s = 300;
    c->max_result_window = 10000;
    snprintf(c->access_log, sizeof c->access_log, "stderr");
    snprintf(c->acl_field, sizeof c->acl_field, "allowed_groups");
    snprintf(c->denied_field, sizeof c->denied_field, "denied_groups");
    c->audit = 1;
    c->audit_flush_ms = 200;
    c->compact_dead_percent = 30;
    c->compact_min_dead_rows = 10000;
    c->compact_check_s = 60;
}

void http_config_db_options(const http_config_t *c, cordon_options *o)
{
    memset(o, 0, sizeof *o);
    o->audit = c->audit != 0;
    o->audit_sync = c->audit_sync != 0;
    o->audit_flush_ms = c->audit_flush_ms;
    o->audit_retain_s = (uint64_t)c->audit_retain_days * 86400u;
    o->audit_retain_bytes = c->audit_max_bytes;
    o->audit_queries = c->audit_queries != 0;
}

/* ---- Values ---- */

/* Why listen is malformed, or NULL when it is not (then host and port are set). */
static const char *listen_problem(const char *s, char *host, size_t hostsz, unsigned *port)
{
    char addr[128];
    const char *colon, *p;
    size_t hlen;
    unsigned long v = 0;
    int v6 = s[0] == '[';
    unsigned char bin[16];
    if (strlen(s) >= sizeof addr)
        return "is longer than 127 bytes";
    if (v6) {
        const char *close = strchr(s, ']');
        if (!close)
            return "opens a bracket it does not close";
        if (close[1] != ':')
            return "has no :PORT after the bracketed address";
        colon = close + 1;
        hlen = (size_t)(close - s - 1);
        memcpy(addr, s + 1, hlen);
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return "has no :PORT";
        if (memchr(s, ':', (size_t)(colon - s)))
            return "looks like an IPv6 address; put it in brackets, as [::1]:9200";
        hlen = (size_t)(colon - s);
        memcpy(addr, s, hlen);
    }
    addr[hlen] = '\0';
    if (!hlen)
        return "has no host; 0.0.0.0 listens on every IPv4 interface, [::] on every IPv6 one";
    if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, bin) != 1)
        return v6 ? "does not hold a numeric IPv6 address inside the brackets"
                  : "does not start with a numeric IPv4 address (host names are not resolved)";
    for (p = colon + 1; *p >= '0' && *p <= '9' && p - colon <= 5; p++)
        v = v * 10 + (unsigned long)(*p - '0');
    if (p == colon + 1 || *p || v > 65535)
        return "has a port that is not a number from 0 to 65535";
    if (hlen >= hostsz)
        return "has a host longer than the caller's buffer";
    memcpy(host, addr, hlen + 1);
    *port = (unsigned)v;
    return NULL;
}

int http_config_listen_parts(const char *listen, char *host, size_t hostsz, unsigned *port,
                             cdn_err_t *err)
{
    const char *why = listen_problem(listen, host, hostsz, port);
    if (why)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "listen address \"%.127s\" %s; write IPV4:PORT (127.0.0.1:9200) or "
                           "[IPV6]:PORT ([::1]:9200)",
                           listen, why);
    return CDN_OK;
}

/* Reads a whole number, with an Elasticsearch byte-size suffix when bytes is set; NULL or why
 * not. */
static const char *parse_number(const char *s, int bytes, unsigned long long *out)
{
    static const struct {
        const char *suffix;
        unsigned long long mul;
    } units[] = {{"b", 1}, {"kb", KB}, {"k", KB}, {"mb", MB}, {"m", MB}, {"gb", GB}, {"g", GB}};
    unsigned long long v = 0, mul = 1;
    const char *p = s;
    if (*p == '-')
        return "is negative";
    if (*p < '0' || *p > '9')
        return "is not a whole number";
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (ULLONG_MAX - (unsigned long long)(*p - '0')) / 10)
            return "is too large";
        v = v * 10 + (unsigned long long)(*p - '0');
    }
    if (*p && bytes) {
        size_t i;
        while (*p == ' ')
            p++;
        for (i = 0; i < sizeof units / sizeof units[0]; i++)
            if (!strcasecmp(p, units[i].suffix))
                break;
        if (i == sizeof units / sizeof units[0])
            return "has a suffix other than b, kb, mb or gb";
        mul = units[i].mul;
        p += strlen(p);
    }
    if (*p)
        return bytes ? "is not a whole number of bytes" : "is not a whole number";
    if (v > ULLONG_MAX / mul)
        return "is too large";
    *out = v * mul;
    return NULL;
}

/* A field name: 1 to max bytes, no space or control character. */
static int field_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (!n || n > max)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 0x7f)
            return 0;
    return 1;
}

static int no_controls(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < ' ' || *s == 0x7f)
            return 0;
    return 1;
}

/* Stores v as k says, or returns why v is not accepted (c unchanged). */
static const char *apply(const key_spec_t *k, http_config_t *c, const char *v)
{
    char *at = (char *)c + k->offset;
    unsigned long long n;
    const char *why;
    char host[64];
    unsigned port;
    switch (k->kind) {
    case K_LISTEN:
        if ((why = listen_problem(v, host, sizeof host, &port)))
            return why;
        snprintf(at, sizeof c->listen, "%s", v);
        return NULL;
    case K_UNSIGNED:
    case K_SIZE:
    case K_BYTES:
        if ((why = parse_number(v, k->kind == K_BYTES, &n)))
            return why;
        if (n < k->min || n > k->max)
            return "is out of range";
        if (k->kind == K_UNSIGNED)
            *(unsigned *)(void *)at = (unsigned)n;
        else
            *(size_t *)(void *)at = (size_t)n;
        return NULL;
    case K_LOG:
        if (!*v || strlen(v) >= sizeof c->access_log || !no_controls(v))
            return "is empty, too long or holds control characters";
        snprintf(at, sizeof c->access_log, "%s", v);
        return NULL;
    case K_PATH:
        if (!*v || strlen(v) >= sizeof c->tls_cert_file || !no_controls(v))
            return "is empty, too long or holds control characters";
        snprintf(at, sizeof c->tls_cert_file, "%s", v);
        return NULL;
    case K_FIELD:
        if (!field_ok(v, sizeof c->acl_field - 1))
            return "is not a field name";
        snprintf(at, sizeof c->acl_field, "%s", v);
        return NULL;
    }
    return "has an unknown kind";
}

/* ---- Keys ---- */

/* One file being read: where we are, and the line on which each key was set (0: not yet). */
typedef struct parse {
    http_config_t *c;
    const char *path;
    cdn_err_t *err;
    unsigned key_line[N_KEYS];
    unsigned rule_line[HTTP_CONFIG_RULES_MAX][2]; /* acl_field, denied_field */
} parse_t;

static int fail(parse_t *p, int code, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(parse_t *p, int code, unsigned line, const char *fmt, ...)
{
    char msg[CDN_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line)
        return cdn_err_set(p->err, code, "%s:%u: %s", p->path, line, msg);
    return cdn_err_set(p->err, code, "%s: %s", p->path, msg);
}

/* Edit distance of two short strings, for "did you mean"; large when either is long. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[65];
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

static int unknown_key(parse_t *p, unsigned line, const char *key)
{
    const char *best = NULL;
    size_t best_d = 3; /* suggest only within two edits */
    char list[CDN_ERR_MSG_MAX] = "";
    size_t used = 0;
    for (size_t i = 0; i < N_KEYS; i++) {
        size_t d = distance(key, k_keys[i].name);
        if (d < best_d) {
            best_d = d;
            best = k_keys[i].name;
        }
        if (used < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                     k_keys[i].name);
    }
    if (best)
        return fail(p, CDN_ERR_INVALID, line, "unknown key \"%.64s\"; did you mean \"%s\"?", key,
                    best);
    return fail(p, CDN_ERR_INVALID, line,
                "unknown key \"%.64s\"; the keys: %s, index.PATTERN.acl_field|denied_field", key,
                list);
}

/* index.<pattern>.acl_field or index.<pattern>.denied_field = value. */
static int set_rule(parse_t *p, unsigned line, const char *pattern, const char *field,
                    const char *value)
{
    http_config_t *c = p->c;
    size_t r, which;
    if (!strcmp(field, "acl_field"))
        which = 0;
    else if (!strcmp(field, "denied_field"))
        which = 1;
    else
        return fail(p, CDN_ERR_INVALID, line,
                    "unknown index rule key \"%.64s\" for pattern \"%.64s\"; a rule sets "
                    "acl_field or denied_field",
                    field, pattern);
    if (!*pattern || strlen(pattern) >= sizeof c->rules[0].pattern || !no_controls(pattern))
        return fail(p, CDN_ERR_INVALID, line,
                    "index pattern \"%.64s\" must be a glob of 1 to 128 bytes, such as "
                    "\"langchain-*\"",
                    pattern);
    if (!field_ok(value, sizeof c->acl_field - 1))
        return fail(p, CDN_ERR_INVALID, line, "index.%.64s.%s = \"%.64s\" is not a field name; %s",
                    pattern, field, value, FIELD_ACCEPTED);
    for (r = 0; r < c->n_rules && strcmp(c->rules[r].pattern, pattern); r++)
        ;
    if (r == c->n_rules) {
        if (r == HTTP_CONFIG_RULES_MAX)
            return fail(p, CDN_ERR_LIMIT, line,
                        "index pattern \"%.64s\" is one more than the %d patterns allowed; "
                        "merge patterns with globs",
                        pattern, HTTP_CONFIG_RULES_MAX);
        memset(&c->rules[r], 0, sizeof c->rules[r]);
        snprintf(c->rules[r].pattern, sizeof c->rules[r].pattern, "%s", pattern);
        c->n_rules++;
    }
    if (p->rule_line[r][which])
        return fail(p, CDN_ERR_INVALID, line, "index.%.64s.%s is already set on line %u", pattern,
                    field, p->rule_line[r][which]);
    p->rule_line[r][which] = line;
    snprintf(which ? c->rules[r].denied_field : c->rules[r].acl_field, sizeof c->acl_field, "%s",
             value);
    return CDN_OK;
}

/* key = value from either format; value has no quotes left. */
static int set_key(parse_t *p, unsigned line, const char *key, const char *value)
{
    size_t i;
    const char *why;
    if (!strncmp(key, RULE_PREFIX, strlen(RULE_PREFIX))) {
        const char *pattern = key + strlen(RULE_PREFIX), *dot = strrchr(pattern, '.');
        char pat[sizeof p->c->rules[0].pattern + 1]; /* one more: set_rule says it is too long */
        if (!dot)
            return fail(p, CDN_ERR_INVALID, line,
                        "key \"%.64s\" must be index.PATTERN.acl_field or "
                        "index.PATTERN.denied_field",
                        key);
        size_t n = (size_t)(dot - pattern) < sizeof pat ? (size_t)(dot - pattern) : sizeof pat - 1;
        memcpy(pat, pattern, n);
        pat[n] = '\0';
        return set_rule(p, line, pat, dot + 1, value);
    }
    for (i = 0; i < N_KEYS && strcmp(key, k_keys[i].name); i++)
        ;
    if (i == N_KEYS)
        return unknown_key(p, line, key);
    if (p->key_line[i])
        return fail(p, CDN_ERR_INVALID, line, "%s is already set on line %u", key, p->key_line[i]);
    if ((why = apply(&k_keys[i], p->c, value)))
        return fail(p, CDN_ERR_INVALID, line, "%s = \"%.64s\" %s; accepted: %s", key, value, why,
                    k_keys[i].accepted);
    p->key_line[i] = line;
    return CDN_OK;
}

/* The key called name, or NULL. */
static const key_spec_t *spec(const char *name)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (!strcmp(k_keys[i].name, name))
            return &k_keys[i];
    return NULL;
}

static unsigned key_line(const parse_t *p, const char *name)
{
    const key_spec_t *k = spec(name);
    return k ? p->key_line[k - k_keys] : 0;
}

/* After the whole file: rules take the defaults they leave unset, and no rule (nor the
 * defaults) names one field for both lists, which would deny everyone it allows. */
static int finish(parse_t *p)
{
    http_config_t *c = p->c;
    unsigned la = key_line(p, "acl_field"), ld = key_line(p, "denied_field");
    unsigned lc = key_line(p, "tls_cert_file"), lk = key_line(p, "tls_key_file");
    if (!strcmp(c->acl_field, c->denied_field))
        return fail(p, CDN_ERR_INVALID, la > ld ? la : ld,
                    "acl_field and denied_field are both \"%s\"; they must differ", c->acl_field);
    if (!c->tls_cert_file[0] != !c->tls_key_file[0])
        return fail(p, CDN_ERR_INVALID, lc > lk ? lc : lk,
                    "tls_cert_file and tls_key_file go together: give both (HTTPS) or neither");
    for (size_t r = 0; r < c->n_rules; r++) {
        http_index_rule_t *rule = &c->rules[r];
        unsigned l =
            p->rule_line[r][0] > p->rule_line[r][1] ? p->rule_line[r][0] : p->rule_line[r][1];
        if (!rule->acl_field[0])
            memcpy(rule->acl_field, c->acl_field, sizeof rule->acl_field);
        if (!rule->denied_field[0])
            memcpy(rule->denied_field, c->denied_field, sizeof rule->denied_field);
        if (!strcmp(rule->acl_field, rule->denied_field))
            return fail(p, CDN_ERR_INVALID, l,
                        "index pattern \"%.64s\" has \"%s\" as both acl_field and denied_field; "
                        "they must differ",
                        rule->pattern, rule->acl_field);
    }
    return CDN_OK;
}

/* ---- `key = value` lines ---- */

static char *trim(char *s)
{
    char *end;
    while (*s == ' ' || *s == '\t')
        s++;
    end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        *--end = '\0';
    return s;
}

/* The value after '=': "quoted" (to the next quote) or bare (to a '#' after a space). */
static const char *line_value(parse_t *p, unsigned line, char *v, const char *key, int *rc)
{
    char *end;
    v = trim(v);
    if (*v == '"') {
        end = strchr(v + 1, '"');
        if (!end) {
            *rc = fail(p, CDN_ERR_INVALID, line,
                       "the value of %.64s opens a quote it does not close", key);
            return NULL;
        }
        *end = '\0';
        char *rest = trim(end + 1);
        if (*rest && *rest != '#') {
            *rc = fail(p, CDN_ERR_INVALID, line,
                       "unexpected text after the quoted value of %.64s: \"%.32s\"", key, rest);
            return NULL;
        }
        return v + 1;
    }
    for (end = v; *end; end++)
        if (*end == '#' && (end == v || end[-1] == ' ' || end[-1] == '\t')) {
            *end = '\0';
            break;
        }
    return trim(v);
}

static int load_lines(parse_t *p, char *text)
{
    unsigned line = 0;
    int rc = CDN_OK;
    for (char *next, *s = text; s && !rc; s = next) {
        char *eq, *key;
        const char *value;
        line++;
        next = strchr(s, '\n');
        if (next)
            *next++ = '\0';
        s = trim(s);
        if (!*s || *s == '#')
            continue;
        eq = strchr(s, '=');
        if (!eq)
            return fail(p, CDN_ERR_INVALID, line, "expected `key = value`, got \"%.64s\"", s);
        *eq = '\0';
        key = trim(s);
        if (!*key)
            return fail(p, CDN_ERR_INVALID, line, "a key is missing before '='");
        if (!(value = line_value(p, line, eq + 1, key, &rc)))
            return rc;
        rc = set_key(p, line, key, value);
    }
    return rc ? rc : finish(p);
}

/* ---- JSON ---- */

/* The line on which the object key at path (path[0] in the top-level object, path[1] in its
 * value, ...) is written, or the line of the deepest part of it found (1 if none). jansson
 * keeps no positions, and an error should point where the user will look. */
static unsigned json_key_line(const char *t, const char *const *path, size_t depth)
{
    unsigned line = 1, best = 1;
    size_t d = 0, matched = 0, pending = 0;
    unsigned char is_obj[16] = {0}, want_key[16] = {0};
    for (; *t; t++) {
        if (*t == '\n') {
            line++;
        } else if (*t == '{' || *t == '[') {
            if (pending == d && *t == '{')
                matched = d;
            pending = 0;
            if (++d < sizeof is_obj)
                is_obj[d] = want_key[d] = *t == '{';
        } else if (*t == '}' || *t == ']') {
            if (d >= 2 && matched > d - 2)
                matched = d - 2;
            d -= d > 0;
        } else if (*t == ',' && d < sizeof is_obj && is_obj[d]) {
            want_key[d] = 1;
        } else if (*t == '"') {
            const char *s = ++t;
            while (*t && *t != '"')
                t += t[0] == '\\' && t[1] ? 2 : 1;
            if (!*t)
                break;
            if (d == 0 || d >= sizeof is_obj || !is_obj[d] || !want_key[d])
                continue;
            want_key[d] = 0;
            pending = 0;
            if (matched != d - 1 || d > depth || strlen(path[d - 1]) != (size_t)(t - s) ||
                memcmp(s, path[d - 1], (size_t)(t - s)))
                continue;
            best = line;
            if (d == depth)
                return line;
            pending = d;
        }
    }
    return best;
}

/* A JSON value as the text the key's parser reads: strings for every key, whole numbers for
 * the numeric ones. */
static int json_text(parse_t *p, unsigned line, const char *key, json_t *v, int numeric, char *buf,
                     size_t size, const char **out)
{
    if (json_is_string(v)) {
        *out = json_string_value(v);
        return CDN_OK;
    }
    if (numeric && json_is_integer(v)) {
        snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        *out = buf;
        return CDN_OK;
    }
    return fail(p, CDN_ERR_INVALID, line, "%.64s must be %s", key,
                numeric ? "a whole number or a string such as \"100mb\"" : "a string");
}

static int load_indices(parse_t *p, const char *text, json_t *indices)
{
    const char *pattern, *field;
    json_t *rule, *v;
    if (!json_is_object(indices))
        return fail(p, CDN_ERR_INVALID, json_key_line(text, (const char *[]){"indices"}, 1),
                    "indices must be an object of index patterns, such as {\"langchain-*\": "
                    "{\"acl_field\": \"groups\"}}");
    json_object_foreach(indices, pattern, rule)
    {
        const char *at[3] = {"indices", pattern, NULL};
        if (!json_is_object(rule))
            return fail(p, CDN_ERR_INVALID, json_key_line(text, at, 2),
                        "indices.%.64s must be an object with acl_field and/or denied_field",
                        pattern);
        json_object_foreach(rule, field, v)
        {
            const char *value;
            int rc;
            at[2] = field;
            unsigned line = json_key_line(text, at, 3);
            if ((rc = json_text(p, line, field, v, 0, NULL, 0, &value)) ||
                (rc = set_rule(p, line, pattern, field, value)))
                return rc;
        }
    }
    return CDN_OK;
}

static int load_json(parse_t *p, const char *text, size_t len)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr), *v;
    const char *key;
    int rc = CDN_OK;
    if (!root)
        return fail(p, CDN_ERR_INVALID, jerr.line > 0 ? (unsigned)jerr.line : 1,
                    "not valid JSON: %s (column %d)", jerr.text, jerr.column);
    if (!json_is_object(root)) {
        json_decref(root);
        return fail(p, CDN_ERR_INVALID, 1, "the JSON must be an object of keys");
    }
    json_object_foreach(root, key, v)
    {
        char num[32];
        const char *value;
        unsigned line = json_key_line(text, &key, 1);
        size_t i;
        if (!strcmp(key, "indices")) {
            rc = load_indices(p, text, v);
        } else {
            for (i = 0; i < N_KEYS && strcmp(key, k_keys[i].name); i++)
                ;
            int numeric = i < N_KEYS && (k_keys[i].kind == K_UNSIGNED || k_keys[i].kind == K_SIZE ||
                                         k_keys[i].kind == K_BYTES);
            if (i == N_KEYS && strncmp(key, RULE_PREFIX, strlen(RULE_PREFIX)))
                rc = unknown_key(p, line, key);
            else if (!(rc = json_text(p, line, key, v, numeric, num, sizeof num, &value)))
                rc = set_key(p, line, key, value);
        }
        if (rc)
            break;
    }
    json_decref(root);
    return rc ? rc : finish(p);
}

/* ---- Files and the environment ---- */

static int read_file(const char *path, cdn_buf_t *b, cdn_err_t *err)
{
    char chunk[65536];
    size_t n;
    int rc = CDN_OK;
    FILE *f = fopen(path, "rb");
    if (!f)
        return cdn_err_set(err, CDN_ERR_IO, "%s: cannot open the configuration file: %s", path,
                           strerror(errno));
    cdn_buf_init(b, HTTP_CONFIG_FILE_MAX);
    rc = cdn_buf_append(b, "", 0); /* an empty file is text too */
    while (!rc && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rc = cdn_buf_append(b, chunk, n);
    if (!rc && ferror(f))
        rc = cdn_err_set(err, CDN_ERR_IO, "%s: cannot read the configuration file: %s", path,
                         strerror(errno));
    else if (rc == CDN_ERR_LIMIT)
        cdn_err_set(err, rc, "%s: the configuration file is over %zu bytes", path,
                    HTTP_CONFIG_FILE_MAX);
    else if (rc)
        cdn_err_set(err, rc, "%s: out of memory reading the configuration file", path);
    else if (memchr(b->data, '\0', b->len))
        rc = cdn_err_set(err, CDN_ERR_INVALID, "%s: holds a NUL byte; is it a text file?", path);
    fclose(f);
    if (rc)
        cdn_buf_free(b);
    return rc;
}

int http_config_load(http_config_t *c, const char *path, cdn_err_t *err)
{
    cdn_buf_t b;
    parse_t p = {.c = c, .path = path, .err = err};
    char *text;
    int rc = read_file(path, &b, err);
    if (rc)
        return rc;
    text = b.data;
    if (!strncmp(text, "\xef\xbb\xbf", 3)) /* a UTF-8 byte order mark: not part of the text */
        text += 3;
    const char *first = text + strspn(text, " \t\r\n");
    if (*first == '{') {
        rc = load_json(&p, text, b.len - (size_t)(text - b.data));
    } else if (*first == '[') { /* JSON, but not the object of keys it must be */
        unsigned line = 1;
        for (const char *s = text; s < first; s++)
            line += *s == '\n';
        rc = fail(&p, CDN_ERR_INVALID, line, "a JSON configuration must be an object of keys");
    } else {
        rc = load_lines(&p, text);
    }
    cdn_buf_free(&b);
    return rc;
}

int http_config_env(http_config_t *c, cdn_err_t *err)
{
    const char *listen = getenv("CORDON_LISTEN"), *key = getenv("CORDON_BOOTSTRAP_KEY");
    const char *log = getenv("CORDON_ACCESS_LOG"), *why;
    char host[64];
    unsigned port;
    if (listen && *listen && (why = listen_problem(listen, host, sizeof host, &port)))
        return cdn_err_set(err, CDN_ERR_INVALID, "CORDON_LISTEN=\"%.127s\" %s; accepted: %s",
                           listen, why, spec("listen")->accepted);
    if (key && *key) {
        const char *colon = strchr(key, ':');
        int printable = 1;
        for (const char *s = key; *s; s++)
            printable &= *s > ' ' && *s < 0x7f;
        if (!colon || colon == key || !colon[1] || !printable ||
            strlen(key) >= sizeof c->bootstrap_key)
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "CORDON_BOOTSTRAP_KEY must be ID:SECRET, both parts non-empty, "
                               "printable ASCII without spaces, %zu bytes at most",
                               sizeof c->bootstrap_key - 1);
    }
    if (log && *log && (strlen(log) >= sizeof c->access_log || !no_controls(log)))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "CORDON_ACCESS_LOG is too long or holds control characters; "
                           "accepted: %s",
                           spec("access_log")->accepted);
    if (listen && *listen)
        snprintf(c->listen, sizeof c->listen, "%s", listen);
    if (key && *key)
        snprintf(c->bootstrap_key, sizeof c->bootstrap_key, "%s", key);
    if (log && *log)
        snprintf(c->access_log, sizeof c->access_log, "%s", log);
    return CDN_OK;
}

void http_config_acl_fields(const http_config_t *c, const char *index, const char **acl,
                            const char **denied)
{
    *acl = c->acl_field;
    *denied = c->denied_field;
    for (size_t r = 0; r < c->n_rules; r++) {
        const http_index_rule_t *rule = &c->rules[r];
        if (fnmatch(rule->pattern, index, 0) == 0) {
            if (rule->acl_field[0])
                *acl = rule->acl_field;
            if (rule->denied_field[0])
                *denied = rule->denied_field;
            return;
        }
    }
}

unsigned http_config_threads(const http_config_t *c)
{
    long n;
    if (c->threads)
        return c->threads;
    n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}
