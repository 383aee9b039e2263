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
