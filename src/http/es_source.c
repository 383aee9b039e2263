/* es_source.c: _source filtering as Elasticsearch does it: true/false, field patterns, or
 * includes and excludes, in the body or the query string. Relies on http/es_paths (globs). */
#include "http/es_handlers.h"
#include "http/es_paths.h"

#include <stdio.h>
#include <string.h>

static int any_match(json_t *patterns, const char *path)
{
    size_t i;
    json_t *p;
    if (json_is_string(patterns))
        return es_glob(json_string_value(patterns), path);
    json_array_foreach(patterns, i, p)
    {
        const char *s = json_string_value(p);
        size_t n = s ? strlen(s) : 0;
        /* "metadata" includes everything under it, as Elasticsearch's includes do. */
        if (s && (es_glob(s, path) || (!strncmp(s, path, n) && path[n] == '.')))
            return 1;
    }
    return 0;
}

static int prefix_of_pattern(json_t *patterns, const char *path)
{
    size_t i, n = strlen(path);
    json_t *p;
    json_t *one = json_is_string(patterns) ? json_pack("[O]", patterns) : json_incref(patterns);
    int yes = 0;
    json_array_foreach(one, i, p)
    {
        const char *s = json_string_value(p);
        if (s && ((!strncmp(s, path, n) && s[n] == '.') || strchr(s, '*')))
            yes = 1;
    }
    json_decref(one);
    return yes;
}

static json_t *filter_obj(json_t *obj, const char *prefix, json_t *inc, json_t *exc)
{
    json_t *out = json_object(), *v;
    const char *k;
    json_object_foreach(obj, k, v)
    {
        char path[512];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", k);
        if (exc && any_match(exc, path))
            continue;
        int in = !inc || any_match(inc, path);
        if (json_is_object(v) && (in || prefix_of_pattern(inc, path))) {
            json_t *sub = filter_obj(v, path, in ? NULL : inc, exc);
            if (sub && (in || json_object_size(sub)))
                json_object_set_new(out, k, sub);
            else
                json_decref(sub);
        } else if (in) {
            json_object_set(out, k, v);
        }
    }
    return out;
}

json_t *es_source_filter(json_t *src, json_t *spec)
{
    json_t *inc = NULL, *exc = NULL;
    if (!spec || json_is_true(spec))
        return json_incref(src);
    if (json_is_false(spec))
        return NULL;
    if (json_is_string(spec) || json_is_array(spec))
        inc = spec;
    else if (json_is_object(spec)) {
        inc = json_object_get(spec, "includes");
        if (!inc)
            inc = json_object_get(spec, "include");
        exc = json_object_get(spec, "excludes");
        if (!exc)
            exc = json_object_get(spec, "exclude");
        if (json_is_array(inc) && !json_array_size(inc))
            inc = NULL;
    }
    return filter_obj(src, "", inc, exc);
}

/* 0 when spec surely drops path: an exclude matches it or an object above it, or includes are
 * given and none matches it or an object above it (filter_obj's rules, leaf by leaf). */
int es_source_wants(json_t *spec, const char *path)
{
    json_t *inc = NULL, *exc = NULL;
    char pre[512];
    int in = 0;
    if (!spec || json_is_true(spec))
        return 1;
    if (json_is_false(spec))
        return 0;
    if (json_is_string(spec) || json_is_array(spec))
        inc = spec;
    else if (json_is_object(spec)) {
        inc = json_object_get(spec, "includes");
        if (!inc)
            inc = json_object_get(spec, "include");
        exc = json_object_get(spec, "excludes");
        if (!exc)
            exc = json_object_get(spec, "exclude");
        if (json_is_array(inc) && !json_array_size(inc))
            inc = NULL;
    }
    for (size_t n = 0; path[n]; n++) {
        if (path[n + 1] && path[n + 1] != '.')
            continue;
        snprintf(pre, sizeof pre, "%.*s", (int)(n + 1), path);
        if (exc && any_match(exc, pre))
            return 0;
        in = in || !inc || any_match(inc, pre);
    }
    return in;
}

json_t *es_source_shown(const es_index_t *ix, const cordon_record *r, json_t *spec)
{
    cordon_record lean;
    if (json_is_false(spec))
        return NULL;
    if (r->vector && ix->vector_field && !es_source_wants(spec, ix->vector_field)) {
        lean = *r; /* the vector is the bulk of a _source: skip rendering it to drop it */
        lean.vector = NULL;
        r = &lean;
    }
    json_t *src = es_source_of(ix, r), *shown = es_source_filter(src, spec);
    json_decref(src);
    return shown;
}

static json_t *split_list(const char *s)
{
    json_t *a = json_array();
    while (a && s && *s) {
        const char *c = strchr(s, ',');
        size_t n = c ? (size_t)(c - s) : strlen(s);
        if (n)
            json_array_append_new(a, json_stringn(s, n));
        s = c ? c + 1 : s + n;
    }
    return a;
}

json_t *es_source_arg(const http_req_t *req)
{
    const char *s = http_arg(req, "_source"), *inc = http_arg(req, "_source_includes"),
               *exc = http_arg(req, "_source_excludes");
    if (s && (!strcmp(s, "false") || !strcmp(s, "true")))
        return json_boolean(!strcmp(s, "true"));
    if (!s && !inc && !exc)
        return NULL;
    json_t *spec = json_object();
    if (s || inc)
        json_object_set_new(spec, "includes", split_list(s ? s : inc));
    if (exc)
        json_object_set_new(spec, "excludes", split_list(exc));
    return spec;
}
