/* es_paths.c: dotted paths into documents and mappings. Relies on jansson and fnmatch. */
#include "http/es_paths.h"

#include <fnmatch.h>
#include <string.h>

json_t *es_path_get(json_t *doc, const char *path)
{
    json_t *x = json_object_get(doc, path);
    const char *dot;
    if (x || !json_is_object(doc))
        return x;
    for (dot = strchr(path, '.'); dot; dot = strchr(dot + 1, '.')) {
        json_t *head = json_object_getn(doc, path, (size_t)(dot - path));
        if (json_is_object(head) && (x = es_path_get(head, dot + 1)) != NULL)
            return x;
    }
    return NULL;
}

int es_path_set(json_t *doc, const char *path, json_t *v)
{
    const char *dot = strchr(path, '.');
    if (!json_is_object(doc)) {
        json_decref(v);
        return -1;
    }
    if (!dot)
        return json_object_set_new(doc, path, v);
    json_t *head = json_object_getn(doc, path, (size_t)(dot - path));
    if (!json_is_object(head)) {
        head = json_object();
        if (!head || json_object_setn_new(doc, path, (size_t)(dot - path), head)) {
            json_decref(v);
            return -1;
        }
    }
    return es_path_set(head, dot + 1, v);
}

void es_path_del(json_t *doc, const char *path)
{
    const char *dot;
    if (!json_is_object(doc))
        return;
    if (json_object_get(doc, path)) {
        json_object_del(doc, path);
        return;
    }
    for (dot = strchr(path, '.'); dot; dot = strchr(dot + 1, '.')) {
        json_t *head = json_object_getn(doc, path, (size_t)(dot - path));
        if (json_is_object(head) && es_path_get(head, dot + 1)) {
            es_path_del(head, dot + 1);
            if (json_object_size(head) == 0)
                json_object_deln(doc, path, (size_t)(dot - path));
            return;
        }
    }
}

json_t *es_mapping_get(json_t *mappings, const char *path)
{
    json_t *props = json_object_get(mappings, "properties");
    const char *dot = strchr(path, '.');
    json_t *x = json_object_get(props, path);
    if (x || !dot)
        return x;
    for (; dot; dot = strchr(dot + 1, '.')) {
        json_t *head = json_object_getn(props, path, (size_t)(dot - path));
        if (head && (x = es_mapping_get(head, dot + 1)) != NULL)
            return x;
    }
    return NULL;
}

int es_mapping_set(json_t *mappings, const char *path, json_t *m)
{
    json_t *props = json_object_get(mappings, "properties");
    const char *dot = strchr(path, '.');
    if (!props) {
        if (!(props = json_object()) || json_object_set_new(mappings, "properties", props)) {
            json_decref(m);
            return -1;
        }
    }
    if (!dot)
        return json_object_set_new(props, path, m);
    json_t *head = json_object_getn(props, path, (size_t)(dot - path));
    if (!json_is_object(head)) {
        head = json_object();
        if (!head || json_object_setn_new(props, path, (size_t)(dot - path), head)) {
            json_decref(m);
            return -1;
        }
    }
    return es_mapping_set(head, dot + 1, m);
}

int es_glob(const char *pattern, const char *s)
{
    return fnmatch(pattern, s, 0) == 0;
}

es_kind_t es_kind_of(json_t *m)
{
    const char *t = json_string_value(json_object_get(m, "type"));
    static const char *const nums[] = {"long",       "integer",      "short",
                                       "byte",       "float",        "double",
                                       "half_float", "scaled_float", "unsigned_long"};
    if (!t)
        return json_object_get(m, "properties") || json_is_object(m) ? ES_K_OBJECT : ES_K_OTHER;
    if (!strcmp(t, "text") || !strcmp(t, "match_only_text"))
        return ES_K_TEXT;
    if (!strcmp(t, "keyword") || !strcmp(t, "constant_keyword") || !strcmp(t, "wildcard"))
        return ES_K_KEYWORD;
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
        if (!strcmp(t, nums[i]))
            return ES_K_NUMBER;
    if (!strcmp(t, "date") || !strcmp(t, "date_nanos"))
        return ES_K_DATE;
    if (!strcmp(t, "boolean"))
        return ES_K_BOOL;
    if (!strcmp(t, "dense_vector"))
        return ES_K_VECTOR;
    if (!strcmp(t, "object") || !strcmp(t, "nested") || !strcmp(t, "flattened"))
        return ES_K_OBJECT;
    return ES_K_OTHER;
}

int es_has_keyword_sub(json_t *m)
{
    json_t *kw = json_object_get(json_object_get(m, "fields"), "keyword");
    return es_kind_of(kw) == ES_K_KEYWORD;
}

int es_indexed(json_t *m)
{
    return !json_is_false(json_object_get(m, "index"));
}
