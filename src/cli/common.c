/* common.c: helpers shared by the subcommands: lists, numbers, opening, errors.
 * Relies on the public API. */
#include "base/buf.h"
#include "base/date.h"
#include "base/mem.h"
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char **cli_split(const char *csv, size_t *n)
{
    size_t len = strlen(csv), parts = 1;
    for (const char *p = csv; *p; p++)
        parts += *p == ',';
    char **v = cdn_malloc((parts + 1) * sizeof(char *) + len + 1);
    if (!v)
        return NULL;
    char *s = (char *)(v + parts + 1);
    memcpy(s, csv, len + 1);
    *n = 0;
    for (char *tok = s;; tok++) {
        char *end = strchr(tok, ',');
        if (end)
            *end = '\0';
        if (*tok)
            v[(*n)++] = tok;
        if (!end)
            break;
        tok = end;
    }
    v[*n] = NULL;
    return v;
}

int cli_parse_size(const char *opt, const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') {
        fprintf(stderr, "cordon: %s expects a whole number; got \"%s\"\n", opt, s);
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

int cli_parse_time(const char *cmd, const char *opt, const char *v, uint64_t *us)
{
    double ms;
    if (cdn_date_parse(v, strlen(v), CDN_DATE_EPOCH_MS_TEXT, &ms) != 0 || ms < 0) {
        fprintf(stderr,
                "cordon %s: %s takes an ISO-8601 time (2026-12-01T10:00:00Z) or epoch "
                "milliseconds; got \"%s\"\n",
                cmd, opt, v);
        return -1;
    }
    *us = (uint64_t)(ms * 1000.0);
    return 0;
}

int cli_open(const char *dir, int must_exist, cordon_t **db)
{
    cordon_options opts = {.must_exist = must_exist};
    return cli_open_with(dir, &opts, db);
}

int cli_open_with(const char *dir, const cordon_options *o, cordon_t **db)
{
    cordon_options opts = *o;
    cordon_error err;
    if (!dir) {
        fprintf(stderr, "cordon: --data DIR is required (the data directory)\n");
        return -1;
    }
    if (cordon_open(dir, &opts, db, &err)) {
        if (err.code == CORDON_ERR_NOT_FOUND)
            fprintf(stderr, "cordon: %s\n", err.message);
        else
            fprintf(stderr, "cordon: cannot open %s: %s\n", dir, err.message);
        return -1;
    }
    return 0;
}

void cli_print_json_str(const char *s)
{
    cdn_buf_t b;
    cdn_buf_init(&b, 1u << 20);
    if (cdn_buf_json_str(&b, s) == 0)
        fputs(b.data, stdout);
    else
        fputs("null", stdout);
    cdn_buf_free(&b);
}

int cli_fail(const char *cmd, const cordon_error *err)
{
    fprintf(stderr, "cordon %s: %s\n", cmd, err->message);
    return 1;
}
