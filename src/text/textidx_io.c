/* textidx_io.c: the text index file: a 40-byte header (magic, version, revision, payload length,
 * XXH64 of the payload) then the payload (config, live set, text fields, metadata fields).
 * Relies on textio.h, invidx/fieldidx save+load, POSIX open/fsync/rename. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/fileio.h"
#include "base/mem.h"
#include "text/textidx.h"

#define TEXTIDX_MAGIC "CDNTEXT1"
#define TEXTIDX_VERSION 1u
#define TEXTIDX_HEADER 40 /* magic 8, version 4, reserved 4, revision 8, length 8, xxh64 8 */

static void put_bitmap(textio_w_t *w, const roaring_bitmap_t *b)
{
    roaring_bitmap_t *m = NULL;
    if (w->map) { /* renumbered: the same docs under their new ids */
        roaring_uint32_iterator_t it;
        m = roaring_bitmap_create();
        for (roaring_init_iterator(b, &it); m && it.has_value; roaring_advance_uint32_iterator(&it))
            roaring_bitmap_add(m, textio_doc(w, it.current_value));
        if (!m) {
            w->failed = 1;
            return;
        }
        b = m;
    }
    size_t n = roaring_bitmap_portable_size_in_bytes(b);
    char *buf = cdn_malloc(n ? n : 1);
    if (!buf)
        w->failed = 1;
    else {
        roaring_bitmap_portable_serialize(b, buf);
        textio_put_str(w, buf, n);
    }
    cdn_free(buf);
    if (m)
        roaring_bitmap_free(m);
}

static void put_payload(const textidx_t *ti, textio_w_t *w)
{
    textio_put_f64(w, ti->cfg.k1);
    textio_put_f64(w, ti->cfg.b);
    put_bitmap(w, ti->live);
    textio_put_var(w, ti->ntf);
    for (size_t i = 0; i < ti->ntf; i++) {
        const textidx_tfield_t *f = &ti->tf[i];
        textio_put_str(w, f->name, strlen(f->name));
        textio_put_var(w, (uint64_t)f->an.spec.kind);
        textio_put_var(w, (uint64_t)f->an.spec.stop);
        textio_put_var(w, f->an.spec.stem);
        textio_put_var(w, f->an.spec.fold_marks);
        invidx_save(&f->ix, w);
    }
    fieldidx_save(&ti->fi, ti->live, w);
}

int textidx_save(const textidx_t *ti, const char *path, uint64_t revision, cdn_err_t *err)
{
    return textidx_save_mapped(ti, path, revision, NULL, 0, err);
}

int textidx_save_mapped(const textidx_t *ti, const char *path, uint64_t revision,
                        const uint32_t *map, uint32_t n_map, cdn_err_t *err)
{
    textio_w_t w = {.map = map, .n_map = n_map};
    roaring_uint32_iterator_t it;
    for (roaring_init_iterator(ti->live, &it); map && it.has_value;
         roaring_advance_uint32_iterator(&it))
        if (it.current_value >= n_map || map[it.current_value] == UINT32_MAX)
            return cdn_err_set(err, CDN_ERR_INVALID, "the map leaves out live doc %u",
                               it.current_value);
    uint8_t hdr[TEXTIDX_HEADER] = {0};
    textio_put(&w, hdr, sizeof hdr); /* placeholder, filled once the payload is known */
    put_payload(ti, &w);
    if (w.failed) {
        cdn_free(w.p);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory serialising the text index");
    }
    uint32_t ver = TEXTIDX_VERSION, zero = 0;
    uint64_t len = w.len - TEXTIDX_HEADER, sum = XXH64(w.p + TEXTIDX_HEADER, len, 0);
    memcpy(w.p, TEXTIDX_MAGIC, 8);
    memcpy(w.p + 8, &ver, 4);
    memcpy(w.p + 12, &zero, 4);
    memcpy(w.p + 16, &revision, 8);
    memcpy(w.p + 24, &len, 8);
    memcpy(w.p + 32, &sum, 8);
    char tmp[4096];
    int fd, rc = cdn_file_open_tmp(path, tmp, sizeof tmp, &fd);
    if (rc == CDN_OK)
        rc = cdn_file_commit(fd, tmp, path, cdn_file_write_all(fd, w.p, w.len, NULL));
    int saved = errno;
    cdn_free(w.p);
    if (rc == CDN_ERR_INVALID)
        return cdn_err_set(err, rc, "index path is too long");
    if (rc)
        return cdn_err_set(err, rc, "writing text index %s failed: %s", path, strerror(saved));
    return CDN_OK;
}

static int read_file(const char *path, uint8_t **out, size_t *len, cdn_err_t *err)
{
    uint64_t size = 0;
    int fd;
    if (cdn_file_open_read(path, &fd, &size))
        return cdn_err_set(err, CDN_ERR_IO, "cannot read text index %s: %s", path, strerror(errno));
    uint8_t *p = size < SIZE_MAX ? cdn_malloc((size_t)size + 1) : NULL;
    int rc = p ? cdn_file_read_all(fd, p, (size_t)size, NULL) : CDN_ERR_NOMEM;
    close(fd);
    if (rc) {
        cdn_free(p);
        return rc == CDN_ERR_NOMEM
                   ? cdn_err_set(err, rc, "out of memory reading %s", path)
                   : cdn_err_set(err, rc, "cannot read text index %s: %s", path,
                                 rc == CDN_ERR_CORRUPT ? "it shrank while read" : strerror(errno));
    }
    *out = p;
    *len = (size_t)size;
    return CDN_OK;
}

static int get_payload(textidx_t *ti, textio_r_t *r)
{
    ti->cfg.k1 = (float)textio_get_f64(r);
    ti->cfg.b = (float)textio_get_f64(r);
    size_t bl = (size_t)textio_get_lim(r, r->len);
    const uint8_t *bp = textio_get_bytes(r, bl);
    roaring_bitmap_t *live =
        bp ? roaring_bitmap_portable_deserialize_safe((const char *)bp, bl) : NULL;
    if (!live)
        return CDN_ERR_CORRUPT;
    roaring_bitmap_free(ti->live);
    ti->live = live;
    if (!(ti->cfg.k1 >= 0 && ti->cfg.b >= 0 && ti->cfg.b <= 1))
        return CDN_ERR_CORRUPT;
    uint64_t ntf = textio_get_lim(r, 4096);
    for (uint64_t i = 0; i < ntf && !r->bad; i++) {
        size_t nl = (size_t)textio_get_lim(r, 4096);
        const uint8_t *np = textio_get_bytes(r, nl);
        char name[4097];
        if (!np || memchr(np, 0, nl))
            return CDN_ERR_CORRUPT;
        memcpy(name, np, nl);
        name[nl] = 0;
        analyzer_spec_t spec;
        spec.kind = (analyzer_kind_t)textio_get_lim(r, ANALYZER_KEYWORD);
        spec.stop = (analyzer_stop_t)textio_get_lim(r, ANALYZER_STOP_LUCENE);
        spec.stem = (uint8_t)textio_get_lim(r, 2);
        spec.fold_marks = (uint8_t)textio_get_lim(r, 1);
        if (r->bad || textidx_text_field(ti, name))
            return CDN_ERR_CORRUPT;
        int rc = textidx_add_field(ti, name, TEXTIDX_TEXT, "standard", NULL);
        if (rc)
            return rc;
        textidx_tfield_t *f = &ti->tf[ti->ntf - 1];
        analyzer_destroy(&f->an);
        invidx_destroy(&f->ix);
        if ((rc = analyzer_init(&f->an, &spec, NULL))) {
            invidx_init(&f->ix); /* keep the field destroyable */
            return rc;
        }
        if ((rc = invidx_load(&f->ix, r))) {
            invidx_init(&f->ix);
            return rc;
        }
        if (!roaring_bitmap_is_subset(f->ix.live, ti->live))
            return CDN_ERR_CORRUPT; /* a field may not hold a doc the collection lacks */
    }
    if (r->bad)
        return CDN_ERR_CORRUPT;
    fieldidx_destroy(&ti->fi);
    int rc = fieldidx_load(&ti->fi, r);
    if (rc) {
        fieldidx_init(&ti->fi);
        return rc;
    }
    return r->off == r->len ? CDN_OK : CDN_ERR_CORRUPT;
}

int textidx_load(const char *path, textidx_t **out, uint64_t *revision, cdn_err_t *err)
{
    uint8_t *p = NULL;
    size_t n = 0;
    int rc = read_file(path, &p, &n, err);
    if (rc)
        return rc;
    uint32_t ver;
    uint64_t rev, len, sum;
    if (n < TEXTIDX_HEADER || memcmp(p, TEXTIDX_MAGIC, 8)) {
        cdn_free(p);
        return cdn_err_set(err, CDN_ERR_CORRUPT, "%s is not a cordon text index (bad magic)", path);
    }
    memcpy(&ver, p + 8, 4);
    memcpy(&rev, p + 16, 8);
    memcpy(&len, p + 24, 8);
    memcpy(&sum, p + 32, 8);
    if (ver != TEXTIDX_VERSION || len != n - TEXTIDX_HEADER ||
        XXH64(p + TEXTIDX_HEADER, len, 0) != sum) {
        cdn_free(p);
        return cdn_err_set(err, CDN_ERR_CORRUPT,
                           "text index %s is truncated or corrupt (version %u, %zu bytes); "
                           "rebuild it from the store",
                           path, ver, n);
    }
    textidx_t *ti;
    if ((rc = textidx_create(NULL, &ti, err))) {
        cdn_free(p);
        return rc;
    }
    textio_r_t r = {p + TEXTIDX_HEADER, (size_t)len, 0, 0};
    rc = get_payload(ti, &r);
    cdn_free(p);
    if (rc) {
        textidx_free(ti);
        return cdn_err_set(err, rc, "text index %s: %s", path,
                           rc == CDN_ERR_CORRUPT ? "contents do not decode; rebuild it"
                                                 : cdn_strerror(rc));
    }
    *out = ti;
    *revision = rev;
    return CDN_OK;
}
