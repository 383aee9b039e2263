/* keys.c: the API key store: a JSON file of salted HMACs, replaced atomically under an flock,
 * and an in-memory table behind a rwlock that follows the file. Relies on base/ (errors, memory,
 * atomic files, UTF-8 checks, string map), jansson, OpenSSL's HMAC and getrandom(2). */
#include "http/keys.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/mem.h"
#include "base/strmap.h"
#include "base/utf8.h"
#include "http/keys_wire.h"

#define SALT_LEN 16
#define MAC_LEN 32
#define NAME_MAX_LEN 64
#define SUBJECT_MAX_LEN 128
#define PRINCIPAL_MAX_LEN 144
#define FILE_MAX ((size_t)64 << 20)
#define PATH_LEN 4096
#define FILE_VERSION 1

static const char denied_msg[] = "the API key is not valid (unknown id, wrong secret or revoked)";

typedef struct key_rec {
    keys_info_t info;
    unsigned char salt[SALT_LEN];
    unsigned char mac[MAC_LEN];
    int64_t revoked_ms; /* 0 while the key is live; revoked keys keep their id, not their MAC */
    /* The secret last verified against mac, so that a client sending it on every request pays
     * one HMAC per version of the table, not one per request: a table is replaced (and so
     * forgets these) by every write and every reload of the file. Guarded by keys.seen_lock. */
    char seen[KEYS_SECRET_MAX + 1];
    size_t seen_len; /* 0: none */
} key_rec_t;

typedef struct key_table {
    key_rec_t *recs;
    size_t n, cap, n_live;
    cdn_strmap_t by_id; /* id -> index in recs */
} key_table_t;

/* What identifies one version of keys.json: every write renames a new inode into place. */
typedef struct file_stamp {
    int exists;
    dev_t dev;
    ino_t ino;
    off_t size;
    int64_t mtime_ns, ctime_ns;
} file_stamp_t;

struct keys {
    char *path;      /* <data_dir>/keys.json */
    char *lock_path; /* <data_dir>/keys.lock */
    pthread_rwlock_t lock;
    key_table_t table;         /* guarded by lock */
    file_stamp_t stamp;        /* the file the table was read from; guarded by lock */
    pthread_mutex_t seen_lock; /* the records' seen secrets, written under the read side */
};

static int random_bytes(unsigned char *p, size_t n, cdn_err_t *err)
{
    while (n) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return cdn_err_set(err, CDN_ERR_IO, "getrandom failed: %s", strerror(errno));
        p += r;
        n -= (size_t)r;
    }
    return CDN_OK;
}

static int hmac_secret(const unsigned char salt[SALT_LEN], const char *secret,
                       unsigned char mac[MAC_LEN])
{
    unsigned int len = 0;
    if (!HMAC(EVP_sha256(), salt, SALT_LEN, (const unsigned char *)secret, strlen(secret), mac,
              &len) ||
        len != MAC_LEN)
        return CDN_ERR_INTERNAL;
    return CDN_OK;
}

/* ---- validation ---- */

/* 1 when s is 1..max bytes of UTF-8 without control characters. */
static int text_valid(const char *s, size_t max)
{
    size_t n = strlen(s), at;
    return n > 0 && n <= max && cdn_utf8_valid(s, n, &at) && !cdn_utf8_has_control(s, n, &at);
}

/* Checks a spec and copies it into info (id and created_ms are the caller's). */
static int spec_to_info(const keys_spec_t *spec, keys_info_t *info, cdn_err_t *err)
{
    memset(info, 0, sizeof *info);
    if (!spec)
        return cdn_err_set(err, CDN_ERR_INVALID, "no key spec given");
    size_t np = spec->principals ? spec->n_principals : 0;
    if (!spec->name || !*spec->name)
        return cdn_err_set(err, CDN_ERR_INVALID, "a key needs a name: a label of 1 to %d bytes",
                           NAME_MAX_LEN);
    if (!text_valid(spec->name, NAME_MAX_LEN))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "key name has %zu bytes; give 1 to %d bytes of printable text "
                           "(UTF-8, no control characters)",
                           strlen(spec->name), NAME_MAX_LEN);
    if (spec->n_principals && !spec->principals)
        return cdn_err_set(err, CDN_ERR_INVALID, "n_principals is %zu but principals is NULL",
                           spec->n_principals);
    if (spec->subject && np)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "give a subject or principals, not both: a key acts as one subject "
                           "of the permission model or holds asserted principals");
    if (!spec->subject && !np && !spec->admin)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "give a subject or principals: only an admin key may have neither");
    if (np > KEYS_PRINCIPALS_MAX)
        return cdn_err_set(err, CDN_ERR_LIMIT, "%zu principals; a key holds at most %d", np,
                           KEYS_PRINCIPALS_MAX);
    if (spec->subject && !text_valid(spec->subject, SUBJECT_MAX_LEN))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "subject has %zu bytes; give 1 to %d bytes of printable text",
                           strlen(spec->subject), SUBJECT_MAX_LEN);
    for (size_t i = 0; i < np; i++)
        if (!spec->principals[i] || !text_valid(spec->principals[i], PRINCIPAL_MAX_LEN))
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "principal %zu is empty, too long or not printable; give 1 to "
                               "%d bytes such as \"group:eng\"",
                               i + 1, PRINCIPAL_MAX_LEN);
    snprintf(info->name, sizeof info->name, "%s", spec->name);
    if (spec->subject)
        snprintf(info->subject, sizeof info->subject, "%s", spec->subject);
    for (size_t i = 0; i < np; i++)
        snprintf(info->principals[i], sizeof info->principals[i], "%s", spec->principals[i]);
    info->n_principals = np;
    info->admin = !!spec->admin;
    info->run_as = !!spec->run_as;
    return CDN_OK;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the table ---- */

static void table_free(key_table_t *t)
{
    if (t->recs)
        OPENSSL_cleanse(t->recs, t->cap * sizeof *t->recs);
    cdn_free(t->recs);
    cdn_strmap_free(&t->by_id);
    memset(t, 0, sizeof *t);
}

static key_rec_t *table_find(const key_table_t *t, const char *id)
{
    uint32_t i;
    if (cdn_strmap_get(&t->by_id, id, strlen(id), &i))
        return NULL;
    return &t->recs[i];
}

/* Appends a copy of r; CDN_OK, CDN_ERR_NOMEM or CDN_ERR_EXISTS (the id is taken). */
static int table_add(key_table_t *t, const key_rec_t *r)
{
    if (table_find(t, r->info.id))
        return CDN_ERR_EXISTS;
    if (t->n >= UINT32_MAX || cdn_grow((void **)&t->recs, &t->cap, t->n + 1, sizeof *t->recs))
        return CDN_ERR_NOMEM;
    if (cdn_strmap_put(&t->by_id, r->info.id, strlen(r->info.id), (uint32_t)t->n))
        return CDN_ERR_NOMEM;
    t->recs[t->n] = *r;
    t->recs[t->n].seen_len = 0;
    t->n++;
    t->n_live += r->revoked_ms == 0;
    return CDN_OK;
}

/* ---- the file ---- */

static int stamp_of_stat(const struct stat *st, file_stamp_t *s)
{
    memset(s, 0, sizeof *s);
    s->exists = 1;
    s->dev = st->st_dev;
    s->ino = st->st_ino;
    s->size = st->st_size;
    s->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    s->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
    return CDN_OK;
}

static int stamp_of(const char *path, file_stamp_t *s, cdn_err_t *err)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return stamp_of_stat(&st, s);
    memset(s, 0, sizeof *s);
    if (errno == ENOENT)
        return CDN_OK;
    return cdn_err_set(err, CDN_ERR_IO, "cannot stat %s: %s", path, strerror(errno));
}

static int stamp_equal(const file_stamp_t *a, const file_stamp_t *b)
{
    if (!a->exists || !b->exists)
        return a->exists == b->exists;
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

static int corrupt(cdn_err_t *err, const char *path, size_t i, const char *what)
{
    return cdn_err_set(err, CDN_ERR_CORRUPT,
                       "%s: key %zu: %s (restore the file, or move it aside and create the keys "
                       "again)",
                       path, i + 1, what);
}

/* An optional string member of at most max bytes of printable text into out; 0 or -1. */
static int get_text(json_t *o, const char *name, size_t max, char *out, size_t size)
{
    json_t *v = json_object_get(o, name);
    if (!v)
        return 0;
    if (!json_is_string(v) || !text_valid(json_string_value(v), max))
        return -1;
    snprintf(out, size, "%s", json_string_value(v));
    return 0;
}

static int get_bool(json_t *o, const char *name, int *out)
{
    json_t *v = json_object_get(o, name);
    if (v && !json_is_boolean(v))
        return -1;
    *out = v && json_is_true(v);
    return 0;
}

static int get_ms(json_t *o, const char *name, int64_t *out)
{
    json_t *v = json_object_get(o, name);
    *out = 0;
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (int64_t)json_integer_value(v);
    return 0;
}

static int parse_principals(json_t *o, keys_info_t *info)
{
    json_t *arr = json_object_get(o, "principals"), *v;
    size_t i;
    if (!arr)
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > KEYS_PRINCIPALS_MAX)
        return -1;
    json_array_foreach(arr, i, v)
    {
        if (!json_is_string(v) || !text_valid(json_string_value(v), PRINCIPAL_MAX_LEN))
            return -1;
        snprintf(info->principals[i], sizeof info->principals[i], "%s", json_string_value(v));
    }
    info->n_principals = json_array_size(arr);
    return 0;
}

static int parse_key(json_t *o, const char *path, size_t i, key_rec_t *r, cdn_err_t *err)
{
    json_t *id = json_object_get(o, "id"), *salt = json_object_get(o, "salt");
    json_t *mac = json_object_get(o, "hmac_sha256");
    keys_info_t *info = &r->info;
    memset(r, 0, sizeof *r);
    if (!json_is_object(o))
        return corrupt(err, path, i, "not an object");
    if (!json_is_string(id) || !keys_wire_id_valid(json_string_value(id)))
        return corrupt(err, path, i, "id is missing or not 1 to 31 characters of [A-Za-z0-9._-]");
    snprintf(info->id, sizeof info->id, "%s", json_string_value(id));
    if (!json_object_get(o, "name") ||
        get_text(o, "name", NAME_MAX_LEN, info->name, sizeof info->name))
        return corrupt(err, path, i, "name is missing or not 1 to 64 bytes of text");
    if (get_text(o, "subject", SUBJECT_MAX_LEN, info->subject, sizeof info->subject))
        return corrupt(err, path, i, "subject is not 1 to 128 bytes of text");
    if (parse_principals(o, info))
        return corrupt(err, path, i, "principals is not a list of at most 64 texts");
    if (info->subject[0] && info->n_principals)
        return corrupt(err, path, i, "has both a subject and principals");
    if (get_bool(o, "admin", &info->admin) || get_bool(o, "run_as", &info->run_as))
        return corrupt(err, path, i, "admin or run_as is not a boolean");
    if (get_ms(o, "created_ms", &info->created_ms) || get_ms(o, "revoked_ms", &r->revoked_ms))
        return corrupt(err, path, i, "created_ms or revoked_ms is not a whole number >= 0");
    if (r->revoked_ms)
        return CDN_OK;
    if (!json_is_string(salt) || keys_wire_hex_decode(json_string_value(salt), r->salt, SALT_LEN) ||
        !json_is_string(mac) || keys_wire_hex_decode(json_string_value(mac), r->mac, MAC_LEN))
        return corrupt(err, path, i, "salt or hmac_sha256 is not 32 or 64 lowercase hex digits");
    return CDN_OK;
}

static int parse_doc(json_t *root, const char *path, key_table_t *t, cdn_err_t *err)
{
    json_t *ver = json_object_get(root, "version"), *keys = json_object_get(root, "keys"), *v;
    size_t i;
    key_rec_t r;
    if (!json_is_object(root) || !json_is_array(keys))
        return cdn_err_set(err, CDN_ERR_CORRUPT,
                           "%s is not a key file: no \"keys\" list (restore it, or move it "
                           "aside and create the keys again)",
                           path);
    if (!json_is_integer(ver) || json_integer_value(ver) != FILE_VERSION)
        return cdn_err_set(err, CDN_ERR_CORRUPT,
                           "%s: version is not %d, the only one this build reads", path,
                           FILE_VERSION);
    json_array_foreach(keys, i, v)
    {
        int rc = parse_key(v, path, i, &r, err);
        if (!rc && (rc = table_add(t, &r)) == CDN_ERR_EXISTS)
            rc = corrupt(err, path, i, "the id appears twice");
        OPENSSL_cleanse(&r, sizeof r);
        if (rc)
            return rc == CDN_ERR_NOMEM ? cdn_err_set(err, rc, "out of memory reading keys") : rc;
    }
    return CDN_OK;
}

/* Reads keys.json into a fresh *t, and the stamp of the very file read; a missing file is an
 * empty table. */
static int load_file(const char *path, key_table_t *t, file_stamp_t *stamp, cdn_err_t *err)
{
    struct stat st;
    json_error_t jerr;
    int rc, fd = open(path, O_RDONLY | O_CLOEXEC);
    memset(t, 0, sizeof *t);
    memset(stamp, 0, sizeof *stamp);
    if (fd < 0)
        return errno == ENOENT
                   ? CDN_OK
                   : cdn_err_set(err, CDN_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    if (fstat(fd, &st)) {
        rc = cdn_err_set(err, CDN_ERR_IO, "cannot stat %s: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    stamp_of_stat(&st, stamp);
    if ((size_t)st.st_size > FILE_MAX) {
        close(fd);
        return cdn_err_set(err, CDN_ERR_CORRUPT, "%s has %lld bytes; a key file is under %zu", path,
                           (long long)st.st_size, FILE_MAX);
    }
    char *text = cdn_malloc((size_t)st.st_size + 1);
    if (!text) {
        close(fd);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory reading %s", path);
    }
    rc = cdn_file_read_all(fd, text, (size_t)st.st_size, NULL);
    close(fd);
    json_t *root = rc ? NULL : json_loadb(text, (size_t)st.st_size, JSON_REJECT_DUPLICATES, &jerr);
    OPENSSL_cleanse(text, (size_t)st.st_size);
    cdn_free(text);
    if (rc)
        return cdn_err_set(err, rc, "cannot read %s", path);
    if (!root)
        return cdn_err_set(err, CDN_ERR_CORRUPT,
                           "%s is not valid JSON (line %d: %s); restore it, or move it aside "
                           "and create the keys again",
                           path, jerr.line, jerr.text);
    rc = parse_doc(root, path, t, err);
    json_decref(root);
    if (rc)
        table_free(t);
    return rc;
}

static int put(json_t *o, const char *name, json_t *v)
{
    return json_object_set_new(o, name, v) ? -1 : 0;
}

static json_t *rec_to_json(const key_rec_t *r)
{
    const keys_info_t *info = &r->info;
    char salt[2 * SALT_LEN + 1], mac[2 * MAC_LEN + 1];
    json_t *o = json_object(), *arr = json_array();
    int bad = !o || !arr;
    for (size_t i = 0; !bad && i < info->n_principals; i++)
        bad = json_array_append_new(arr, json_string(info->principals[i]));
    bad = bad || put(o, "id", json_string(info->id)) || put(o, "name", json_string(info->name));
    if (!bad && info->subject[0])
        bad = put(o, "subject", json_string(info->subject));
    if (!bad && info->n_principals) {
        bad = put(o, "principals", arr);
        arr = NULL;
    }
    bad = bad || put(o, "admin", json_boolean(info->admin)) ||
          put(o, "run_as", json_boolean(info->run_as)) ||
          put(o, "created_ms", json_integer(info->created_ms));
    if (!bad && r->revoked_ms)
        bad = put(o, "revoked_ms", json_integer(r->revoked_ms));
    if (!bad && !r->revoked_ms) {
        keys_wire_hex_encode(r->salt, SALT_LEN, salt);
        keys_wire_hex_encode(r->mac, MAC_LEN, mac);
        bad = put(o, "salt", json_string(salt)) || put(o, "hmac_sha256", json_string(mac));
    }
    json_decref(arr);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Replaces keys.json by t (temporary file, fsync, rename, fsync of the directory) and reads
 * back the stamp of the new file; the caller holds the flock. */
static int write_file(const char *path, const key_table_t *t, file_stamp_t *stamp, cdn_err_t *err)
{
    char tmp[PATH_LEN];
    json_t *root = json_object(), *keys = json_array();
    int fd, rc, bad = !root || !keys;
    for (size_t i = 0; !bad && i < t->n; i++)
        bad = json_array_append_new(keys, rec_to_json(&t->recs[i]));
    if (bad)
        json_decref(keys);
    else
        bad = put(root, "version", json_integer(FILE_VERSION)) | put(root, "keys", keys);
    char *text = bad ? NULL : json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text)
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory writing %s", path);
    if ((rc = cdn_file_open_tmp(path, tmp, sizeof tmp, &fd)) == 0) {
        rc = fchmod(fd, CDN_FILE_MODE) ? CDN_ERR_IO : CDN_OK; /* a leftover tmp keeps its mode */
        if (!rc)
            rc = cdn_file_write_all(fd, text, strlen(text), NULL);
        if (!rc)
            rc = cdn_file_write_all(fd, "\n", 1, NULL);
        rc = cdn_file_commit(fd, tmp, path, rc);
    }
    free(text);
    if (rc)
        return cdn_err_set(err, rc, "cannot write %s: %s", path, strerror(errno));
    return stamp_of(path, stamp, err);
}

/* Takes the cross-process write lock: an flock on a descriptor of our own, so that two handles
 * or two threads of one process exclude each other too. */
static int lock_writers(const keys_t *k, int *fd, cdn_err_t *err)
{
    *fd = open(k->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, CDN_FILE_MODE);
    if (*fd < 0)
        return cdn_err_set(err, CDN_ERR_IO, "cannot open %s: %s", k->lock_path, strerror(errno));
    while (flock(*fd, LOCK_EX)) {
        if (errno == EINTR)
            continue;
        int rc = cdn_err_set(err, CDN_ERR_IO, "cannot lock %s: %s", k->lock_path, strerror(errno));
        close(*fd);
        *fd = -1;
        return rc;
    }
    return CDN_OK;
}

/* The table is replaced only whole, under the write side of the rwlock. */
static void install(keys_t *k, key_table_t *t, const file_stamp_t *stamp)
{
    key_table_t old;
    pthread_rwlock_wrlock(&k->lock);
    old = k->table;
    k->table = *t;
    k->stamp = *stamp;
    pthread_rwlock_unlock(&k->lock);
    table_free(&old);
    memset(t, 0, sizeof *t);
}

#define UNCHANGED 1 /* an edit that found nothing to do */

/* Read, modify, write under the flock: re-reads the file so that no other writer's change is
 * lost, lets edit change the table, writes it back and installs it. */
static int modify(keys_t *k, int (*edit)(key_table_t *t, void *ctx, cdn_err_t *err), void *ctx,
                  cdn_err_t *err)
{
    key_table_t t;
    file_stamp_t stamp;
    int lfd, rc = lock_writers(k, &lfd, err);
    if (rc)
        return rc;
    if ((rc = load_file(k->path, &t, &stamp, err)) == 0) {
        rc = edit(&t, ctx, err);
        if (rc == CDN_OK)
            rc = write_file(k->path, &t, &stamp, err);
        if (rc == CDN_OK || rc == UNCHANGED)
            install(k, &t, &stamp);
        table_free(&t);
    }
    close(lfd); /* releases the flock */
    return rc == UNCHANGED ? CDN_OK : rc;
}

/* Brings the table up to date with the file and returns holding the rwlock (read side when
 * nothing changed, write side after a reload); the caller unlocks. */
static int lock_fresh(keys_t *k, cdn_err_t *err)
{
    file_stamp_t now;
    key_table_t t;
    int rc = stamp_of(k->path, &now, err);
    if (rc)
        return rc;
    pthread_rwlock_rdlock(&k->lock);
    if (stamp_equal(&now, &k->stamp))
        return CDN_OK;
    pthread_rwlock_unlock(&k->lock);
    pthread_rwlock_wrlock(&k->lock);
    /* Reloading under the write lock keeps two reloading threads from installing an older file
     * after a newer one. */
    if ((rc = load_file(k->path, &t, &now, err)) != 0) {
        pthread_rwlock_unlock(&k->lock);
        return rc;
    }
    table_free(&k->table);
    k->table = t;
    k->stamp = now;
    return CDN_OK;
}

/* ---- the interface ---- */

int keys_open(const char *data_dir, keys_t **out, cdn_err_t *err)
{
    struct stat st;
    keys_t *k;
    *out = NULL;
    if (!data_dir || !*data_dir)
        return cdn_err_set(err, CDN_ERR_INVALID, "no data directory given");
    if (strlen(data_dir) > PATH_LEN - 64)
        return cdn_err_set(err, CDN_ERR_INVALID, "data directory path is longer than %d bytes",
                           PATH_LEN - 64);
    if (stat(data_dir, &st))
        return errno == ENOENT
                   ? cdn_err_set(err, CDN_ERR_NOT_FOUND, "data directory %s does not exist",
                                 data_dir)
                   : cdn_err_set(err, CDN_ERR_IO, "cannot stat %s: %s", data_dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cdn_err_set(err, CDN_ERR_INVALID, "%s is not a directory", data_dir);
    if (!(k = cdn_calloc(1, sizeof *k)))
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory opening the key store");
    size_t n = strlen(data_dir) + sizeof "/keys.json";
    k->path = cdn_malloc(n);
    k->lock_path = cdn_malloc(n);
    if (!k->path || !k->lock_path) {
        keys_close(k);
        return cdn_err_set(err, CDN_ERR_NOMEM, "out of memory opening the key store");
    }
    snprintf(k->path, n, "%s/keys.json", data_dir);
    snprintf(k->lock_path, n, "%s/keys.lock", data_dir);
    pthread_rwlock_init(&k->lock, NULL);
    pthread_mutex_init(&k->seen_lock, NULL);
    int rc = load_file(k->path, &k->table, &k->stamp, err);
    if (rc) {
        keys_close(k);
        return rc;
    }
    *out = k;
    return CDN_OK;
}

void keys_close(keys_t *k)
{
    if (!k)
        return;
    if (k->path && k->lock_path) {
        pthread_rwlock_destroy(&k->lock);
        pthread_mutex_destroy(&k->seen_lock);
    }
    table_free(&k->table);
    cdn_free(k->path);
    cdn_free(k->lock_path);
    cdn_free(k);
}

struct create_ctx {
    key_rec_t rec;
};

static int edit_create(key_table_t *t, void *ctx, cdn_err_t *err)
{
    key_rec_t *r = &((struct create_ctx *)ctx)->rec;
    unsigned char raw[8];
    for (int attempt = 0; attempt < 16; attempt++) {
        int rc = random_bytes(raw, sizeof raw, err);
        if (rc)
            return rc;
        r->info.id[0] = 'k';
        keys_wire_hex_encode(raw, sizeof raw, r->info.id + 1);
        if ((rc = table_add(t, r)) != CDN_ERR_EXISTS)
            return rc ? cdn_err_set(err, rc, "out of memory adding a key") : CDN_OK;
    }
    return cdn_err_set(err, CDN_ERR_INTERNAL, "no free key id after 16 random draws");
}

int keys_create(keys_t *k, const keys_spec_t *spec, keys_info_t *info, char secret[KEYS_SECRET_MAX],
                cdn_err_t *err)
{
    struct create_ctx c;
    unsigned char raw[32];
    memset(&c, 0, sizeof c);
    secret[0] = '\0';
    int rc = spec_to_info(spec, &c.rec.info, err);
    if (!rc)
        rc = random_bytes(raw, sizeof raw, err);
    if (!rc)
        rc = random_bytes(c.rec.salt, SALT_LEN, err);
    if (rc)
        return rc;
    keys_wire_b64_encode(raw, sizeof raw, keys_wire_b64_url, 0, secret); /* 43 characters */
    OPENSSL_cleanse(raw, sizeof raw);
    c.rec.info.created_ms = now_ms();
    if (hmac_secret(c.rec.salt, secret, c.rec.mac))
        rc = cdn_err_set(err, CDN_ERR_INTERNAL, "HMAC-SHA-256 failed");
    else
        rc = modify(k, edit_create, &c, err);
    if (rc == CDN_OK && info)
        *info = c.rec.info;
    if (rc)
        OPENSSL_cleanse(secret, KEYS_SECRET_MAX);
    OPENSSL_cleanse(&c, sizeof c);
    return rc;
}

struct add_ctx {
    key_rec_t rec;
    const char *secret;
};

static int edit_add(key_table_t *t, void *ctx, cdn_err_t *err)
{
    struct add_ctx *a = ctx;
    const key_rec_t *old = table_find(t, a->rec.info.id);
    unsigned char mac[MAC_LEN];
    if (!old)
        return table_add(t, &a->rec) ? cdn_err_set(err, CDN_ERR_NOMEM, "out of memory adding a key")
                                     : CDN_OK;
    if (old->revoked_ms)
        return cdn_err_set(err, CDN_ERR_EXISTS,
                           "key %s was revoked; a revoked id is not reused: choose another id",
                           old->info.id);
    if (hmac_secret(old->salt, a->secret, mac))
        return cdn_err_set(err, CDN_ERR_INTERNAL, "HMAC-SHA-256 failed");
    int same = CRYPTO_memcmp(mac, old->mac, MAC_LEN) == 0;
    OPENSSL_cleanse(mac, sizeof mac);
    if (!same)
        return cdn_err_set(err, CDN_ERR_EXISTS,
                           "key %s exists with another secret: revoke it first or choose "
                           "another id",
                           old->info.id);
    return UNCHANGED;
}

int keys_add(keys_t *k, const char *id, const char *secret, const keys_spec_t *spec, cdn_err_t *err)
{
    struct add_ctx a;
    size_t n = secret ? strlen(secret) : 0;
    if (!keys_wire_id_valid(id))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "key id must be 1 to %d characters of [A-Za-z0-9._-]", KEYS_ID_MAX - 1);
    if (n < KEYS_SECRET_MIN || n > KEYS_SECRET_MAX || !keys_wire_secret_chars_valid(secret, n))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "key secret has %zu characters; give %d to %d printable ASCII "
                           "characters without spaces (e.g. 32 random bytes in base64url)",
                           n, KEYS_SECRET_MIN, KEYS_SECRET_MAX);
    memset(&a, 0, sizeof a);
    int rc = spec_to_info(spec, &a.rec.info, err);
    if (!rc)
        rc = random_bytes(a.rec.salt, SALT_LEN, err);
    if (rc)
        return rc;
    snprintf(a.rec.info.id, sizeof a.rec.info.id, "%s", id);
    a.rec.info.created_ms = now_ms();
    a.secret = secret;
    if (hmac_secret(a.rec.salt, secret, a.rec.mac))
        rc = cdn_err_set(err, CDN_ERR_INTERNAL, "HMAC-SHA-256 failed");
    else
        rc = modify(k, edit_add, &a, err);
    OPENSSL_cleanse(&a, sizeof a);
    return rc;
}

int keys_list(keys_t *k, keys_info_t **out, size_t *n, cdn_err_t *err)
{
    *out = NULL;
    *n = 0;
    int rc = lock_fresh(k, err);
    if (rc)
        return rc;
    size_t live = k->table.n_live, j = 0;
    keys_info_t *v = live ? cdn_malloc(live * sizeof *v) : NULL;
    if (live && !v)
        rc = cdn_err_set(err, CDN_ERR_NOMEM, "out of memory listing %zu keys", live);
    for (size_t i = 0; v && i < k->table.n; i++)
        if (!k->table.recs[i].revoked_ms)
            v[j++] = k->table.recs[i].info;
    pthread_rwlock_unlock(&k->lock);
    *out = v;
    *n = v ? j : 0;
    return rc;
}

static int edit_revoke(key_table_t *t, void *ctx, cdn_err_t *err)
{
    const char *id = ctx;
    key_rec_t *r = table_find(t, id);
    if (!r)
        return cdn_err_set(err, CDN_ERR_NOT_FOUND,
                           "no key \"%s\" (cordon keys list shows the live ones)", id);
    if (r->revoked_ms)
        return cdn_err_set(err, CDN_ERR_NOT_FOUND, "key \"%s\" was revoked already", id);
    r->revoked_ms = now_ms();
    if (!r->revoked_ms)
        r->revoked_ms = 1;
    OPENSSL_cleanse(r->salt, SALT_LEN);
    OPENSSL_cleanse(r->mac, MAC_LEN);
    t->n_live--;
    return CDN_OK;
}

int keys_revoke(keys_t *k, const char *id, cdn_err_t *err)
{
    if (!keys_wire_id_valid(id))
        return cdn_err_set(err, CDN_ERR_NOT_FOUND,
                           "no key \"%.40s\" (cordon keys list shows the live ones)", id ? id : "");
    return modify(k, edit_revoke, (void *)id, err);
}

size_t keys_count(keys_t *k)
{
    size_t n;
    if (lock_fresh(k, NULL))
        pthread_rwlock_rdlock(&k->lock); /* the last table read */
    n = k->table.n_live;
    pthread_rwlock_unlock(&k->lock);
    return n;
}

/* 1 when secret is the one last verified for r (in constant time for its length). */
static int seen_before(keys_t *k, const key_rec_t *r, const char *secret)
{
    size_t n = strlen(secret);
    pthread_mutex_lock(&k->seen_lock);
    int same = r->seen_len == n && n && CRYPTO_memcmp(r->seen, secret, n) == 0;
    pthread_mutex_unlock(&k->seen_lock);
    return same;
}

static void remember(keys_t *k, key_rec_t *r, const char *secret)
{
    size_t n = strlen(secret); /* at most KEYS_SECRET_MAX: keys_verify checked */
    pthread_mutex_lock(&k->seen_lock);
    memcpy(r->seen, secret, n);
    r->seen_len = n;
    pthread_mutex_unlock(&k->seen_lock);
}

int keys_verify(keys_t *k, const char *id, const char *secret, keys_info_t *info, cdn_err_t *err)
{
    /* An unknown id costs an HMAC too, so that timing does not tell ids apart. */
    static const unsigned char dummy_salt[SALT_LEN];
    unsigned char mac[MAC_LEN];
    if (!id || !secret || !keys_wire_id_valid(id) || strlen(secret) > KEYS_SECRET_MAX)
        return cdn_err_set(err, CDN_ERR_DENIED, "%s", denied_msg);
    int rc = lock_fresh(k, err);
    if (rc)
        return rc;
    key_rec_t *r = table_find(&k->table, id);
    int live = r && !r->revoked_ms;
    if (live && seen_before(k, r, secret))
        rc = CDN_OK;
    else if (hmac_secret(live ? r->salt : dummy_salt, secret, mac))
        rc = cdn_err_set(err, CDN_ERR_INTERNAL, "HMAC-SHA-256 failed");
    else if (!live || CRYPTO_memcmp(mac, r->mac, MAC_LEN) != 0)
        rc = cdn_err_set(err, CDN_ERR_DENIED, "%s", denied_msg);
    else
        remember(k, r, secret);
    if (rc == CDN_OK && info)
        *info = r->info;
    pthread_rwlock_unlock(&k->lock);
    OPENSSL_cleanse(mac, sizeof mac);
    return rc;
}
