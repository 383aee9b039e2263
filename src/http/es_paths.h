/* es_paths.h: dotted paths into JSON documents ("metadata.source" is {"metadata": {"source":
 * ...}}, or a literal key "metadata.source"), and into mappings' nested "properties".
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
/* Shell-style glob match (fnmatch without FNM_PATHNAME). */
int es_glob(const char *pattern, const char *s);

#endif
