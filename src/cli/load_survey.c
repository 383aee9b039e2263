/* load_survey.c: a first look at a JSON-lines file for `cordon load --create` (load_survey.h):
 * the vector dimension and the metadata fields to declare when the user did not say.
 * Relies on jansson; a key seen with two kinds is left out rather than guessed. */
#include "cli/load_survey.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIND_MIXED ((cordon_meta_kind)0)

int load_count_lines(const char *path, size_t *lines, cordon_error *err)
{
    FILE *f = fopen(path, "r");
    char buf[1 << 16];
    size_t n, count = 0;
    int blank = 1; /* the current line holds only white space so far */
    if (!f) {
        if (err) {
            snprintf(err->message, sizeof err->message, "cannot open %s", path);
            err->code = CORDON_ERR_IO;
        }
        return CORDON_ERR_IO;
    }
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                count += !blank;
                blank = 1;
            } else if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\r') {
                blank = 0;
            }
        }
    count += !blank;
    fclose(f);
    *lines = count;
    return CORDON_OK;
}

static cordon_meta_kind kind_of(const json_t *v)
{
    if (json_is_string(v))
        return CORDON_META_KEYWORD;
    if (json_is_number(v))
        return CORDON_META_NUMBER;
    if (json_is_boolean(v))
        return CORDON_META_BOOL;
    return KIND_MIXED; /* null, arrays and objects are not declared */
}

/* Records one metadata key's kind; slots past the limit are counted as left out. */
static void note_key(load_survey_t *s, cordon_meta_kind *kinds, char (*names)[CORDON_NAME_MAX + 1],
                     size_t *n, size_t cap, const char *key, cordon_meta_kind k)
{
    size_t i = 0;
    while (i < *n && strcmp(names[i], key))
        i++;
    if (i == *n) {
        if (*n == cap || strlen(key) > CORDON_NAME_MAX || key[0] == '_') {
            s->meta_left_out++;
            return;
        }
        snprintf(names[i], CORDON_NAME_MAX + 1, "%s", key);
        kinds[i] = k;
        (*n)++;
    } else if (kinds[i] != k) {
        kinds[i] = KIND_MIXED;
    }
}

int load_survey(const char *path, size_t max_lines, load_survey_t *out, cordon_error *err)
{
    enum { CAP = 2 * CORDON_META_FIELDS_MAX }; /* room to see mixed keys before the limit */
    char names[CAP][CORDON_NAME_MAX + 1];
    cordon_meta_kind kinds[CAP];
    size_t n = 0, line_cap = 0;
    char *line = NULL;
    ssize_t len;
    FILE *f = fopen(path, "r");
    memset(out, 0, sizeof *out);
    if (!f) {
        if (err) {
            snprintf(err->message, sizeof err->message, "cannot open %s", path);
            err->code = CORDON_ERR_IO;
        }
        return CORDON_ERR_IO;
    }
    while (out->lines_read < max_lines && (len = getline(&line, &line_cap, f)) >= 0) {
        json_t *o = json_loadb(line, (size_t)len, 0, NULL), *v, *meta;
        const char *key;
        out->lines_read++;
        if (!json_is_object(o)) {
            json_decref(o);
            continue;
        }
        v = json_object_get(o, "vector");
        if (!out->dim && json_is_array(v))
            out->dim = (uint32_t)json_array_size(v);
        meta = json_object_get(o, "metadata");
        if (json_is_object(meta))
            json_object_foreach(meta, key, v) note_key(out, kinds, names, &n, CAP, key, kind_of(v));
        json_decref(o);
    }
    free(line);
    fclose(f);
    for (size_t i = 0; i < n; i++) {
        if (kinds[i] == KIND_MIXED || out->n_meta == CORDON_META_FIELDS_MAX) {
            out->meta_left_out++;
            continue;
        }
        memcpy(out->meta_names[out->n_meta], names[i], sizeof names[i]);
        out->meta_kinds[out->n_meta++] = kinds[i];
    }
    return CORDON_OK;
}
