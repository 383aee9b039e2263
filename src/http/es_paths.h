/* es_paths.h: dotted paths into JSON documents ("metadata.source" is {"metadata": {"source":
 * ...}}, or a literal key "metadata.source"), into mappings' nested "properties", and the kind a
 * field's mapping gives it.
 * Relies on jansson. */
#ifndef CDN_ES_PATHS_H
#define CDN_ES_PATHS_H

#include <jansson.h>

/* The value at path in doc (borrowed), or NULL. */
json_t *es_path_get(json_t *doc, const char *path);
/* Sets path in doc to v (stolen), creating objects on the way; -1 on failure. */
int es_path_set(json_t *doc, const char *path, json_t *v);
/* Removes path from doc (and objects it leaves empty); nothing if absent. */
void es_path_del(json_t *doc, const char *path);
/* The mapping of path in a mappings object ({"properties": {"a": {"properties": {"b": ..}}}}),
 * borrowed, or NULL. */
json_t *es_mapping_get(json_t *mappings, const char *path);
/* Sets the mapping of path to m (stolen), creating object mappings on the way. */
int es_mapping_set(json_t *mappings, const char *path, json_t *m);
/* What a field's mapping makes of it. */
typedef enum es_kind {
    ES_K_OTHER = 0,
    ES_K_TEXT,
    ES_K_KEYWORD,
    ES_K_NUMBER,
    ES_K_DATE,
    ES_K_BOOL,
    ES_K_VECTOR,
    ES_K_OBJECT,
} es_kind_t;

/* The kind of one field mapping ({"type": ...}, or an object with "properties"). */
es_kind_t es_kind_of(json_t *m);
/* 1 when a text mapping has a keyword sub-field (fields.keyword). */
int es_has_keyword_sub(json_t *m);
/* 0 when the mapping says "index": false. */
int es_indexed(json_t *m);
/* Shell-style glob match (fnmatch without FNM_PATHNAME). */
int es_glob(const char *pattern, const char *s);

#endif
