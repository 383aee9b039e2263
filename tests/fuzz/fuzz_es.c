/* fuzz_es.c: any bytes as an Elasticsearch document (or a _source filter and a document) for
 * the server's conversions: mapping a document to a chunk with dynamic mapping, rebuilding its
 * _source, filtering it. Never a crash or a leak; a converted document's ACL holds exactly the
 * strings its ACL field held; the rebuilt _source keeps every text field's value; the vector
 * _bulk reads from the line (es_vecscan) is the one the tree holds.
 * Relies on libFuzzer (clang -fsanitize=fuzzer), jansson and src/http's converters. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/es.h"
#include "http/es_handlers.h"
#include "http/es_mapping.h"
#include "http/es_paths.h"
#include "http/es_vecscan.h"

static const char mapping[] =
    "{\"properties\":{\"title\":{\"type\":\"text\",\"fields\":{\"keyword\":{\"type\":\"keyword\"}}}"
    ","
    "\"n\":{\"type\":\"long\"},\"when\":{\"type\":\"date\"},\"ok\":{\"type\":\"boolean\"},"
    "\"v\":{\"type\":\"dense_vector\",\"dims\":3},\"allowed_groups\":{\"type\":\"keyword\"},"
    "\"metadata\":{\"properties\":{\"src\":{\"type\":\"keyword\"}}}},"
    "\"dynamic_templates\":[{\"s\":{\"match\":\"*_s\",\"mapping\":{\"type\":\"keyword\"}}}]}";

static void index_for(es_index_t *ix)
{
    memset(ix, 0, sizeof *ix);
    snprintf(ix->name, sizeof ix->name, "f");
    ix->attrs = json_object();
    ix->mappings = json_loads(mapping, 0, NULL);
    if (!ix->attrs || !ix->mappings)
        abort();
    json_object_set_new(ix->attrs, "mappings", ix->mappings);
    ix->vector_field = "v";
    ix->acl_field = "allowed_groups";
    ix->denied_field = "denied_groups";
    ix->info.dim = 3;
    ix->info.n_text_fields = 1;
    snprintf(ix->info.text_fields[0], sizeof ix->info.text_fields[0], "title");
}

/* Checks one converted document against its source. */
static void check(const es_index_t *ix, json_t *src, const es_doc_t *d)
{
    json_t *acl = es_path_get(src, "allowed_groups");
    size_t want = json_is_array(acl) ? json_array_size(acl) : json_is_string(acl) ? 1 : 0;
    if (d->chunk.n_allowed != want)
        abort();
    for (size_t i = 0; i < d->chunk.n_allowed; i++) {
        json_t *x = json_is_array(acl) ? json_array_get(acl, i) : acl;
        if (strcmp(json_string_value(x), d->chunk.allowed[i]))
            abort();
    }
    cordon_record r = {0};
    float vec[3];
    r.id = (char *)d->id;
    r.fields = (cordon_field *)d->chunk.fields;
    r.n_fields = d->chunk.n_fields;
    r.metadata_json = d->metadata;
    if (d->vector) {
        memcpy(vec, d->vector, sizeof vec);
        r.vector = vec;
        r.dim = 3;
    }
    json_t *back = es_source_of(ix, &r);
    if (!back)
        abort();
    for (size_t i = 0; i < d->chunk.n_fields; i++) {
        json_t *t = es_path_get(back, d->chunk.fields[i].name);
        if (!json_is_string(t) || strcmp(json_string_value(t), d->chunk.fields[i].value))
            abort();
    }
    json_t *spec = json_pack("{s:[s], s:[s]}", "includes", "t*", "excludes", "title.keyword");
    json_t *f = es_source_filter(back, spec);
    if (f && json_object_get(f, "n"))
        abort(); /* "n" is not under t* */
    json_decref(f);
    json_decref(spec);
    json_decref(back);
}

/* Where es_vecscan reads "v" from a line that is a JSON object without duplicate names, the
 * tree's "v" is an array of as many numbers, each narrowing to the same float bit for bit. */
static void check_scan(const char *line, size_t len)
{
    float got[3];
    es_vecscan_t at;
    if (es_vecscan(line, len, "v", 3, got, &at) != 0)
        return;
    if (at.start >= at.end || at.end > len || line[at.start] != '[' || line[at.end - 1] != ']')
        abort();
    json_t *src = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
    json_t *v = json_object_get(src, "v");
    if (json_is_object(src)) {
        if (!json_is_array(v) || json_array_size(v) != 3)
            abort();
        for (size_t i = 0; i < 3; i++) {
            json_t *x = json_array_get(v, i);
            float want = (float)json_number_value(x);
            if (!json_is_number(x) || memcmp(&want, &got[i], sizeof want))
                abort();
        }
    }
    json_decref(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    es_index_t ix;
    es_doc_t doc;
    es_dynamic_t dyn = {0};
    const char *type = NULL;
    char why[400];
    json_t *spec = NULL, *src;
    if (size > 64 * 1024)
        return 0;
    const uint8_t *nl = memchr(data, '\n', size);
    if (size && data[0] == '#' && nl) { /* "#<spec>\n<doc>": a _source filter first */
        spec = json_loadb((const char *)data + 1, (size_t)(nl - data - 1), JSON_DECODE_ANY, NULL);
        size -= (size_t)(nl + 1 - data);
        data = nl + 1;
    }
    if (es_too_deep((const char *)data, size, 64))
        goto out;
    check_scan((const char *)data, size);
    if (!(src = json_loadb((const char *)data, size, 0, NULL)))
        goto out;
    if (json_is_object(src)) {
        index_for(&ix);
        memset(&doc, 0, sizeof doc);
        snprintf(doc.id, sizeof doc.id, "d");
        if (es_doc_from_source(&ix, src, &dyn, &doc, &type, why, sizeof why) == 0)
            check(&ix, src, &doc);
        else if (!type || !why[0])
            abort(); /* every refusal names its type and reason */
        json_t *shown = es_source_filter(src, spec);
        json_decref(shown);
        es_doc_release(&doc);
        json_decref(dyn.props);
        es_index_release(&ix);
    }
    json_decref(src);
out:
    json_decref(spec);
    return 0;
}
