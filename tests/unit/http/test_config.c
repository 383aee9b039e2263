/* test_config.c: the server's configuration: defaults, both file formats, every key, byte-size
 * suffixes, error messages that name the line, environment overrides, index rules and listen
 * addresses. Relies on cmocka and temporary files under /tmp. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/err.h"
#include "http/config.h"

#define MIB ((size_t)1 << 20)

/* Writes text to a new temporary file; path receives its name (at least 32 bytes). */
static void write_file(char *path, const char *text)
{
    snprintf(path, 32, "/tmp/cordon-conf-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* Loads text over the defaults into c; returns the status, err holding the message. */
static int load(const char *text, http_config_t *c, cdn_err_t *err, char *path)
{
    char own[32];
    if (!path)
        path = own;
    write_file(path, text);
    http_config_defaults(c);
    memset(err, 0, sizeof *err);
    int rc = http_config_load(c, path, err);
    unlink(path);
    return rc;
}

/* Asserts that text fails with code and a message that starts with "PATH:line: " and holds
 * every one of the NULL-ended fragments. */
static void expect_error(const char *text, int code, unsigned line, ...)
{
    http_config_t c;
    cdn_err_t err;
    char path[32], prefix[64];
    va_list ap;
    assert_int_equal(load(text, &c, &err, path), code);
    snprintf(prefix, sizeof prefix, "%s:%u: ", path, line);
    if (strncmp(err.msg, prefix, strlen(prefix)))
        fail_msg("message \"%s\" does not start with \"%s\" (input:\n%s)", err.msg, prefix, text);
    va_start(ap, line);
    for (const char *f; (f = va_arg(ap, const char *));)
        if (!strstr(err.msg, f))
            fail_msg("message \"%s\" lacks \"%s\"", err.msg, f);
    va_end(ap);
}

static void test_defaults_are_the_documented_ones(void **state)
{
    (void)state;
    http_config_t c;
    memset(&c, 0x5a, sizeof c);
    http_config_defaults(&c);
    assert_string_equal(c.listen, "127.0.0.1:9200");
    assert_int_equal(c.threads, 0);
    assert_int_equal(c.max_body_bytes, 100 * MIB);
    assert_int_equal(c.max_bulk_items, 100000);
    assert_int_equal(c.max_header_bytes, 16 * 1024);
    assert_int_equal(c.json_depth_max, 64);
    assert_int_equal(c.write_queue, 16);
    assert_int_equal(c.request_timeout_s, 60);
    assert_int_equal(c.idle_timeout_s, 300);
    assert_int_equal(c.max_result_window, 10000);
    assert_string_equal(c.access_log, "stderr");
    assert_string_equal(c.acl_field, "allowed_groups");
    assert_string_equal(c.denied_field, "denied_groups");
    assert_string_equal(c.tenant_field, ""); /* documents have no tenant unless asked */
    assert_string_equal(c.labels_field, "");
    assert_string_equal(c.object_field, "");
    assert_int_equal(c.n_rules, 0);
    assert_string_equal(c.bootstrap_key, "");
    assert_true(http_config_threads(&c) >= 1);
    assert_int_equal(sysconf(_SC_NPROCESSORS_ONLN), http_config_threads(&c));
    c.threads = 3;
    assert_int_equal(http_config_threads(&c), 3);
}

static void check_every_key(const http_config_t *c)
{
    assert_string_equal(c->listen, "[::1]:9300");
    assert_int_equal(c->threads, 6);
    assert_int_equal(c->max_body_bytes, 200 * MIB);
    assert_int_equal(c->max_bulk_items, 5000);
    assert_int_equal(c->max_header_bytes, 32 * 1024);
    assert_int_equal(c->json_depth_max, 32);
    assert_int_equal(c->write_queue, 4);
    assert_int_equal(c->request_timeout_s, 30);
    assert_int_equal(c->idle_timeout_s, 120);
    assert_int_equal(c->max_result_window, 50000);
    assert_string_equal(c->access_log, "/var/log/cordon #1/access.log");
    assert_string_equal(c->acl_field, "acl.allow");
    assert_string_equal(c->denied_field, "acl.deny");
    assert_string_equal(c->tenant_field, "org.tenant");
    assert_string_equal(c->labels_field, "labels");
    assert_string_equal(c->object_field, "doc.object");
    assert_string_equal(c->tls_cert_file, "/etc/cordon/cert.pem");
    assert_string_equal(c->tls_key_file, "/etc/cordon/key.pem");
    assert_int_equal(c->n_rules, 2);
    assert_string_equal(c->rules[0].pattern, "langchain-*");
    assert_string_equal(c->rules[0].acl_field, "metadata.groups");
    assert_string_equal(c->rules[0].denied_field, "metadata.blocked");
    assert_string_equal(c->rules[1].pattern, "logs.2024-*");
    assert_string_equal(c->rules[1].acl_field, "readers");
    assert_string_equal(c->rules[1].denied_field, "acl.deny"); /* unset: the file's default */
    assert_string_equal(c->bootstrap_key, "");                 /* not a file key */
}

static void test_key_value_file_sets_every_key(void **state)
{
    (void)state;
    http_config_t c;
    cdn_err_t err;
    const char *text = "# cordon serve\n"
                       "\n"
                       "listen = [::1]:9300\n"
                       "threads=6   # one per core of the box\n"
                       "  max_body_bytes = 200mb\r\n"
                       "max_bulk_items = 5000\n"
                       "max_header_bytes = 32kb\n"
                       "json_depth_max = 32\n"
                       "write_queue = 4\n"
                       "request_timeout_s = 30\n"
                       "idle_timeout_s = 120\n"
                       "max_result_window = 50000\n"
                       "access_log = \"/var/log/cordon #1/access.log\"  # quoted: keeps the #\n"
                       "acl_field = acl.allow\n"
                       "denied_field = acl.deny\n"
                       "tenant_field = org.tenant\n"
                       "labels_field = labels\n"
                       "object_field = doc.object\n"
                       "tls_cert_file = /etc/cordon/cert.pem\n"
                       "tls_key_file = /etc/cordon/key.pem\n"
                       "index.langchain-*.acl_field = metadata.groups\n"
                       "index.logs.2024-*.acl_field = readers\n"
                       "index.langchain-*.denied_field = metadata.blocked\n";
    if (load(text, &c, &err, NULL))
        fail_msg("%s", err.msg);
    check_every_key(&c);
}

static void test_json_file_sets_every_key(void **state)
{
    (void)state;
    http_config_t c;
    cdn_err_t err;
    const char *text = "\n  {\n"
                       "  \"listen\": \"[::1]:9300\",\n"
                       "  \"threads\": 6,\n"
                       "  \"max_body_bytes\": \"200mb\",\n"
                       "  \"max_bulk_items\": \"5000\",\n"
                       "  \"max_header_bytes\": 32768,\n"
                       "  \"json_depth_max\": 32,\n"
                       "  \"write_queue\": 4,\n"
                       "  \"request_timeout_s\": 30,\n"
                       "  \"idle_timeout_s\": 120,\n"
                       "  \"max_result_window\": 50000,\n"
                       "  \"access_log\": \"/var/log/cordon #1/access.log\",\n"
                       "  \"acl_field\": \"acl.allow\",\n"
                       "  \"denied_field\": \"acl.deny\",\n"
                       "  \"tenant_field\": \"org.tenant\",\n"
                       "  \"labels_field\": \"labels\",\n"
                       "  \"object_field\": \"doc.object\",\n"
                       "  \"tls_cert_file\": \"/etc/cordon/cert.pem\",\n"
                       "  \"tls_key_file\": \"/etc/cordon/key.pem\",\n"
                       "  \"indices\": {\n"
                       "    \"langchain-*\": {\"acl_field\": \"metadata.groups\",\n"
                       "                    \"denied_field\": \"metadata.blocked\"},\n"
                       "    \"logs.2024-*\": {\"acl_field\": \"readers\"}\n"
                       "  }\n"
                       "}\n";
    if (load(text, &c, &err, NULL))
        fail_msg("%s", err.msg);
    check_every_key(&c);
    /* The flat rule keys work in JSON too. */
    if (load("{\"index.a-*.denied_field\": \"nope\"}", &c, &err, NULL))
        fail_msg("%s", err.msg);
    assert_int_equal(c.n_rules, 1);
    assert_string_equal(c.rules[0].denied_field, "nope");
    assert_string_equal(c.rules[0].acl_field, "allowed_groups");
}

static void test_tls_files_go_together(void **state)
{
    (void)state;
    http_config_t c;
    cdn_err_t err;
    expect_error("threads = 2\ntls_cert_file = /tmp/c.pem\n", CDN_ERR_INVALID, 2,
                 "tls_cert_file and tls_key_file go together", NULL);
    expect_error("{\"tls_key_file\": \"/tmp/k.pem\"}", CDN_ERR_INVALID, 1, "go together", NULL);
    if (load("tls_cert_file = /tmp/c.pem\ntls_key_file = /tmp/k.pem\n", &c, &err, NULL))
        fail_msg("%s", err.msg);
    assert_string_equal(c.tls_key_file, "/tmp/k.pem");
}

static void test_byte_sizes_take_elasticsearch_suffixes(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        size_t bytes;
    } ok[] = {{"100mb", 100 * MIB}, {"100MB", 100 * MIB}, {"1gb", 1024 * MIB},  {"2g", 2048 * MIB},
              {"64kb", 65536},      {"64 KB", 65536},     {"512k", 512 * 1024}, {"3m", 3 * MIB},
              {"2048b", 2048},      {"1024", 1024},       {"2gb", 2048 * MIB}};
    static const char *const bad[] = {"1.5mb", "10tb", "100", "3gb", "mb", "-1kb", "1 0kb", ""};
    http_config_t c;
    cdn_err_t err;
    char text[128];
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        snprintf(text, sizeof text, "max_body_bytes = %s\n", ok[i].value);
        if (load(text, &c, &err, NULL))
            fail_msg("%s: %s", ok[i].value, err.msg);
        assert_int_equal(c.max_body_bytes, ok[i].bytes);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "\nmax_body_bytes = %s\n", bad[i]);
        expect_error(text, CDN_ERR_INVALID, 2, "max_body_bytes", "1kb to 2gb", NULL);
    }
    if (load("max_header_bytes = 8kb\n", &c, &err, NULL))
        fail_msg("%s", err.msg);
    assert_int_equal(c.max_header_bytes, 8192);
    expect_error("max_header_bytes = 2mb", CDN_ERR_INVALID, 1, "max_header_bytes", "1kb to 1mb",
                 NULL);
    /* Only the byte sizes take suffixes. */
    expect_error("max_bulk_items = 10k", CDN_ERR_INVALID, 1, "max_bulk_items",
                 "is not a whole number", NULL);
}

static void test_unknown_keys_name_the_line_and_the_keys(void **state)
{
    (void)state;
    expect_error("# x\nlisten = 0.0.0.0:9200\nthread = 4\n", CDN_ERR_INVALID, 3,
                 "unknown key \"thread\"", "did you mean \"threads\"?", NULL);
    expect_error("colour = blue\n", CDN_ERR_INVALID, 1, "unknown key \"colour\"",
                 "the keys: listen, threads", NULL);
    expect_error("\n\nindex.logs-*.acl = x\n", CDN_ERR_INVALID, 3, "\"acl\"", "logs-*",
                 "acl_field or denied_field", NULL);
    expect_error("index.acl_field = x\n", CDN_ERR_INVALID, 1, "index.PATTERN.acl_field", NULL);
    expect_error("{\n \"threads\": 2,\n \"colour\": \"blue\"\n}", CDN_ERR_INVALID, 3,
                 "unknown key \"colour\"", NULL);
    expect_error("{\"indices\": {\n  \"a-*\": {\n    \"acl_field\": \"g\",\n    \"allow\": \"x\""
                 "}}}",
                 CDN_ERR_INVALID, 4, "\"allow\"", "acl_field or denied_field", NULL);
}

static void test_bad_values_name_the_line_key_and_what_is_accepted(void **state)
{
    (void)state;
    expect_error("threads = 4\nthreads = abc\n", CDN_ERR_INVALID, 2, "threads",
                 "already set on line 1", NULL);
    expect_error("threads = abc\n", CDN_ERR_INVALID, 1, "threads = \"abc\"",
                 "is not a whole number", "0 (one per online core) to 1024", NULL);
    expect_error("\nthreads = 2000\n", CDN_ERR_INVALID, 2, "out of range", "to 1024", NULL);
    expect_error("write_queue = 0\n", CDN_ERR_INVALID, 1, "write_queue", "1 to 4096", NULL);
    expect_error("json_depth_max = -1\n", CDN_ERR_INVALID, 1, "is negative", "8 to 1024", NULL);
    expect_error("request_timeout_s = 99999999999999999999999\n", CDN_ERR_INVALID, 1,
                 "is too large", NULL);
    expect_error("idle_timeout_s = 0\n", CDN_ERR_INVALID, 1, "idle_timeout_s", "1 to 86400", NULL);
    expect_error("max_result_window = 10 000\n", CDN_ERR_INVALID, 1, "max_result_window", NULL);
    expect_error("listen = localhost:9200\n", CDN_ERR_INVALID, 1, "listen", "IPv4",
                 "127.0.0.1:9200", NULL);
    expect_error("listen = ::1:9200\n", CDN_ERR_INVALID, 1, "brackets", NULL);
    expect_error("access_log =\n", CDN_ERR_INVALID, 1, "access_log", "stderr, off", NULL);
    expect_error("acl_field = \"my groups\"\n", CDN_ERR_INVALID, 1, "acl_field",
                 "is not a field name", NULL);
    expect_error("denied_field = allowed_groups\n", CDN_ERR_INVALID, 1, "both", "must differ",
                 NULL);
    expect_error("index.x-*.acl_field = a\nindex.x-*.denied_field = a\n", CDN_ERR_INVALID, 2, "x-*",
                 "must differ", NULL);
    expect_error("index.x-*.acl_field = a\nindex.x-*.acl_field = b\n", CDN_ERR_INVALID, 2,
                 "already set on line 1", NULL);
    expect_error("listen 127.0.0.1:9200\n", CDN_ERR_INVALID, 1, "expected `key = value`", NULL);
    expect_error(" = 3\n", CDN_ERR_INVALID, 1, "key is missing", NULL);
    expect_error("access_log = \"/tmp/x\n", CDN_ERR_INVALID, 1, "quote", NULL);
    expect_error("access_log = \"/tmp/x\" y\n", CDN_ERR_INVALID, 1, "after the quoted value", NULL);

    char text[33 * 40 + 1] = "";
    size_t used = 0;
    for (int i = 0; i < 33; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "index.p%d-*.acl_field = g\n", i);
    expect_error(text, CDN_ERR_LIMIT, 33, "p32-*", "32 patterns", NULL);
}

static void test_json_errors_name_the_line(void **state)
{
    (void)state;
    expect_error("{\n  \"threads\": 4,\n  \"write_queue\": 4,,\n}", CDN_ERR_INVALID, 3,
                 "not valid JSON", NULL);
    expect_error("{\n  \"threads\": 4,\n  \"threads\": 5\n}", CDN_ERR_INVALID, 3, "duplicate",
                 NULL);
    expect_error("{\n  \"threads\": 4,\n  \"write_queue\": 99999\n}", CDN_ERR_INVALID, 3,
                 "write_queue = \"99999\"", "1 to 4096", NULL);
    expect_error("{\n  \"threads\": 4.5\n}", CDN_ERR_INVALID, 2, "threads must be a whole number",
                 NULL);
    expect_error("{\"acl_field\":\n\n 7}", CDN_ERR_INVALID, 1, "acl_field must be a string", NULL);
    /* The nested acl_field is found inside its pattern, not the top-level key of that name. */
    expect_error("{\n\"acl_field\": \"a\",\n\"indices\": {\n \"x-*\": {\n  \"acl_field\": \"b c\"\n"
                 " }\n}\n}",
                 CDN_ERR_INVALID, 5, "index.x-*.acl_field", "not a field name", NULL);
    expect_error("{\n \"indices\": [1]\n}", CDN_ERR_INVALID, 2, "indices must be an object", NULL);
    expect_error("[1, 2]", CDN_ERR_INVALID, 1, "must be an object", NULL);
}

static void test_missing_or_binary_file_is_refused(void **state)
{
    (void)state;
    http_config_t c;
    cdn_err_t err;
    char path[32];
    http_config_defaults(&c);
    assert_int_equal(http_config_load(&c, "/nonexistent/cordon.conf", &err), CDN_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent/cordon.conf"));
    write_file(path, "threads = 2\n");
    FILE *f = fopen(path, "ab");
    fputc('\0', f);
    fclose(f);
    assert_int_equal(http_config_load(&c, path, &err), CDN_ERR_INVALID);
    assert_non_null(strstr(err.msg, "NUL"));
    unlink(path);
    /* An empty file and a byte order mark are fine. */
    assert_int_equal(load("", &c, &err, NULL), 0);
    assert_int_equal(load("\xef\xbb\xbfthreads = 2\n", &c, &err, NULL), 0);
    assert_int_equal(c.threads, 2);
    assert_int_equal(load("\xef\xbb\xbf{\"threads\": 3}", &c, &err, NULL), 0);
    assert_int_equal(c.threads, 3);
}

static void test_environment_overrides_the_file(void **state)
{
    (void)state;
    http_config_t c;
    cdn_err_t err;
    assert_int_equal(load("listen = 127.0.0.1:9201\naccess_log = off\n", &c, &err, NULL), 0);
    setenv("CORDON_LISTEN", "0.0.0.0:9400", 1);
    setenv("CORDON_BOOTSTRAP_KEY", "admin:s3cr3t-value", 1);
    setenv("CORDON_ACCESS_LOG", "/tmp/access.log", 1);
    assert_int_equal(http_config_env(&c, &err), 0);
    assert_string_equal(c.listen, "0.0.0.0:9400");
    assert_string_equal(c.bootstrap_key, "admin:s3cr3t-value");
    assert_string_equal(c.access_log, "/tmp/access.log");

    /* A bad variable changes nothing, and the message names it. */
    http_config_t before = c;
    setenv("CORDON_ACCESS_LOG", "stderr", 1);
    setenv("CORDON_LISTEN", "[::1]9200", 1);
    assert_int_equal(http_config_env(&c, &err), CDN_ERR_INVALID);
    assert_non_null(strstr(err.msg, "CORDON_LISTEN"));
    assert_memory_equal(&c, &before, sizeof c);
    setenv("CORDON_LISTEN", "[::]:9200", 1);
    static const char *const bad_keys[] = {"nosecret", ":secret", "id:", "id:se cret"};
    for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++) {
        setenv("CORDON_BOOTSTRAP_KEY", bad_keys[i], 1);
        assert_int_equal(http_config_env(&c, &err), CDN_ERR_INVALID);
        assert_non_null(strstr(err.msg, "CORDON_BOOTSTRAP_KEY"));
        assert_memory_equal(&c, &before, sizeof c);
    }

    /* Empty variables count as unset. */
    setenv("CORDON_LISTEN", "", 1);
    setenv("CORDON_BOOTSTRAP_KEY", "", 1);
    setenv("CORDON_ACCESS_LOG", "", 1);
    assert_int_equal(http_config_env(&c, &err), 0);
    assert_memory_equal(&c, &before, sizeof c);
    unsetenv("CORDON_LISTEN");
    unsetenv("CORDON_BOOTSTRAP_KEY");
    unsetenv("CORDON_ACCESS_LOG");
    assert_int_equal(http_config_env(&c, &err), 0);
    assert_memory_equal(&c, &before, sizeof c);
}

static void test_first_matching_rule_gives_the_acl_fields(void **state)
{
    (void)state;
    http_config_t c;
    cdn_err_t err;
    const char *acl, *denied;
    const char *text = "index.langchain-secret-*.acl_field = clearance\n"
                       "index.langchain-*.acl_field = metadata.groups\n"
                       "index.langchain-*.denied_field = metadata.blocked\n"
                       "index.*-logs.denied_field = banned\n"
                       "index.[ab]?.acl_field = short\n";
    if (load(text, &c, &err, NULL))
        fail_msg("%s", err.msg);
    http_config_acl_fields(&c, "langchain-secret-hr", &acl, &denied);
    assert_string_equal(acl, "clearance");
    assert_string_equal(denied, "denied_groups"); /* the rule left it unset */
    http_config_acl_fields(&c, "langchain-docs", &acl, &denied);
    assert_string_equal(acl, "metadata.groups");
    assert_string_equal(denied, "metadata.blocked");
    /* Both the second and third rules match; the second comes first. */
    http_config_acl_fields(&c, "langchain-logs", &acl, &denied);
    assert_string_equal(acl, "metadata.groups");
    http_config_acl_fields(&c, "app-logs", &acl, &denied);
    assert_string_equal(acl, "allowed_groups");
    assert_string_equal(denied, "banned");
    http_config_acl_fields(&c, "b1", &acl, &denied);
    assert_string_equal(acl, "short");
    http_config_acl_fields(&c, "products", &acl, &denied);
    assert_string_equal(acl, "allowed_groups");
    assert_string_equal(denied, "denied_groups");

    /* A rule built by hand with an empty field falls back to the defaults. */
    http_config_defaults(&c);
    snprintf(c.rules[0].pattern, sizeof c.rules[0].pattern, "x*");
    snprintf(c.rules[0].denied_field, sizeof c.rules[0].denied_field, "no");
    c.n_rules = 1;
    http_config_acl_fields(&c, "xyz", &acl, &denied);
    assert_string_equal(acl, "allowed_groups");
    assert_string_equal(denied, "no");
}

static void test_listen_splits_ipv4_and_bracketed_ipv6(void **state)
{
    (void)state;
    static const struct {
        const char *listen, *host;
        unsigned port;
    } ok[] = {{"127.0.0.1:9200", "127.0.0.1", 9200},
              {"0.0.0.0:80", "0.0.0.0", 80},
              {"[::1]:9200", "::1", 9200},
              {"[::]:65535", "::", 65535},
              {"[fe80::1:2]:0", "fe80::1:2", 0}};
    static const char *const bad[] = {
        "localhost:9200", "::1:9200",       "[::1]",           "[::1]9200", "[::1:9200",
        "127.0.0.1",      "127.0.0.1:",     "127.0.0.1:65536", ":9200",     "1.2.3.4:92a",
        "1.2.3:9200",     "[1.2.3.4]:9200", "[]:9200",         "",          "1.2.3.4:-1",
        "1.2.3.4:123456"};
    char host[64];
    unsigned port;
    cdn_err_t err;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        port = 1;
        if (http_config_listen_parts(ok[i].listen, host, sizeof host, &port, &err))
            fail_msg("%s: %s", ok[i].listen, err.msg);
        assert_string_equal(host, ok[i].host);
        assert_int_equal(port, ok[i].port);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (http_config_listen_parts(bad[i], host, sizeof host, &port, &err) != CDN_ERR_INVALID)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_non_null(strstr(err.msg, "[IPV6]:PORT"));
    }
    assert_int_equal(http_config_listen_parts("127.0.0.1:1", host, 9, &port, &err),
                     CDN_ERR_INVALID);
    assert_int_equal(http_config_listen_parts("127.0.0.1:1", host, 10, &port, &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_the_documented_ones),
        cmocka_unit_test(test_key_value_file_sets_every_key),
        cmocka_unit_test(test_json_file_sets_every_key),
        cmocka_unit_test(test_byte_sizes_take_elasticsearch_suffixes),
        cmocka_unit_test(test_tls_files_go_together),
        cmocka_unit_test(test_unknown_keys_name_the_line_and_the_keys),
        cmocka_unit_test(test_bad_values_name_the_line_key_and_what_is_accepted),
        cmocka_unit_test(test_json_errors_name_the_line),
        cmocka_unit_test(test_missing_or_binary_file_is_refused),
        cmocka_unit_test(test_environment_overrides_the_file),
        cmocka_unit_test(test_first_matching_rule_gives_the_acl_fields),
        cmocka_unit_test(test_listen_splits_ipv4_and_bracketed_ipv6),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
