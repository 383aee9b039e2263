/* test_keys.c: the API key store: create, verify, list, revoke, two handles on one directory
 * (the CLI beside the server), concurrent writers, a corrupt file, and the Authorization header
 * forms. Relies on cmocka, OpenSSL's EVP_EncodeBlock (an encoder independent of ours) and a
 * temporary directory per test. */
#include <openssl/evp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "base/err.h"
#include "base/mem.h"
#include "http/keys.h"
#include "testutil.h"

typedef struct fixture {
    char dir[64];
    char path[128];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    if (!f || !tu_tmpdir(f->dir, sizeof f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/keys.json", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    tu_rmrf(f->dir);
    free(f);
    return 0;
}

static keys_t *open_keys(const fixture_t *f)
{
    keys_t *k = NULL;
    cdn_err_t err = {0};
    int rc = keys_open(f->dir, &k, &err);
    if (rc)
        fail_msg("keys_open: %s", err.msg);
    return k;
}

static char *read_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    static char buf[1 << 16];
    size_t n = fp ? fread(buf, 1, sizeof buf - 1, fp) : 0;
    if (fp)
        fclose(fp);
    buf[n] = '\0';
    return buf;
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static const keys_spec_t alice = {.name = "ci", .subject = "alice"};

/* base64 of "id:secret" by OpenSSL, not by the code under test. */
static void b64_pair(const char *id, const char *secret, char *out)
{
    char pair[256];
    int n = snprintf(pair, sizeof pair, "%s:%s", id, secret);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)pair, n);
}

static void test_created_key_verifies_and_lists(void **state)
{
    fixture_t *f = *state;
    keys_t *k = open_keys(f);
    keys_info_t info, got;
    char secret[KEYS_SECRET_MAX];
    cdn_err_t err;
    assert_int_equal(keys_count(k), 0);
    assert_int_equal(keys_create(k, &alice, &info, secret, &err), CDN_OK);
    assert_int_equal(strlen(info.id), 17);
    assert_int_equal(info.id[0], 'k');
    assert_int_equal(strspn(info.id + 1, "0123456789abcdef"), 16);
    assert_int_equal(strlen(secret), 43);
    assert_int_equal(
        strspn(secret, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), 43);
    assert_true(info.created_ms > 1600000000000LL);
    assert_int_equal(keys_verify(k, info.id, secret, &got, &err), CDN_OK);
    assert_string_equal(got.id, info.id);
    assert_string_equal(got.name, "ci");
    assert_string_equal(got.subject, "alice");
    assert_int_equal(got.n_principals, 0);
    assert_false(got.admin);

    const char *groups[] = {"group:eng", "group:hr"};
    keys_spec_t eng = {.name = "eng", .principals = groups, .n_principals = 2, .run_as = 1};
    keys_info_t info2;
    char secret2[KEYS_SECRET_MAX];
    assert_int_equal(keys_create(k, &eng, &info2, secret2, &err), CDN_OK);
    assert_string_not_equal(info.id, info2.id);
    assert_string_not_equal(secret, secret2);

    keys_info_t *all;
    size_t n;
    assert_int_equal(keys_list(k, &all, &n, &err), CDN_OK);
    assert_int_equal(n, 2);
    assert_int_equal(keys_count(k), 2);
    assert_string_equal(all[0].id, info.id);
    assert_string_equal(all[1].id, info2.id);
    assert_int_equal(all[1].n_principals, 2);
    assert_string_equal(all[1].principals[1], "group:hr");
    assert_true(all[1].run_as);
    assert_string_equal(all[1].subject, "");
    cdn_free(all);

    assert_int_equal(keys_revoke(k, info.id, &err), CDN_OK);
    assert_int_equal(keys_list(k, &all, &n, &err), CDN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(all[0].id, info2.id);
    cdn_free(all);
    assert_int_equal(keys_verify(k, info2.id, secret2, NULL, &err), CDN_OK);
    keys_close(k);

    k = open_keys(f); /* the same after a reopen */
    assert_int_equal(keys_count(k), 1);
    assert_int_equal(keys_verify(k, info2.id, secret2, &got, &err), CDN_OK);
    assert_string_equal(got.principals[0], "group:eng");
    assert_int_equal(keys_verify(k, info.id, secret, NULL, &err), CDN_ERR_DENIED);
    keys_close(k);
}

static void test_wrong_secret_unknown_id_and_revoked_key_are_denied_alike(void **state)
{
    fixture_t *f = *state;
    keys_t *k = open_keys(f);
    keys_info_t a, b;
    char sa[KEYS_SECRET_MAX], sb[KEYS_SECRET_MAX], wrong[KEYS_SECRET_MAX];
    cdn_err_t e1, e2, e3, e4, err;
    assert_int_equal(keys_create(k, &alice, &a, sa, &err), CDN_OK);
    assert_int_equal(keys_create(k, &alice, &b, sb, &err), CDN_OK);
    snprintf(wrong, sizeof wrong, "%s", sa);
    wrong[0] = wrong[0] == 'A' ? 'B' : 'A';
    assert_int_equal(keys_revoke(k, b.id, &err), CDN_OK);

    assert_int_equal(keys_verify(k, a.id, wrong, NULL, &e1), CDN_ERR_DENIED);
    assert_int_equal(keys_verify(k, "k0000000000000000", sa, NULL, &e2), CDN_ERR_DENIED);
    assert_int_equal(keys_verify(k, b.id, sb, NULL, &e3), CDN_ERR_DENIED);
    assert_int_equal(keys_verify(k, a.id, sb, NULL, &e4), CDN_ERR_DENIED); /* another's secret */
    assert_string_equal(e1.msg, e2.msg);
    assert_string_equal(e1.msg, e3.msg);
    assert_string_equal(e1.msg, e4.msg);
    assert_int_equal(keys_verify(k, a.id, "", NULL, &err), CDN_ERR_DENIED);
    assert_int_equal(keys_verify(k, "", sa, NULL, &err), CDN_ERR_DENIED);
    assert_int_equal(keys_verify(k, NULL, NULL, NULL, &err), CDN_ERR_DENIED);
    assert_int_equal(keys_verify(k, a.id, sa, NULL, &err), CDN_OK);

    assert_int_equal(keys_revoke(k, b.id, &err), CDN_ERR_NOT_FOUND); /* already revoked */
    assert_int_equal(keys_revoke(k, "k1111111111111111", &err), CDN_ERR_NOT_FOUND);
    assert_int_equal(keys_revoke(k, "bad id!", &err), CDN_ERR_NOT_FOUND);
    keys_close(k);
}

static void test_file_is_0600_and_holds_neither_secret_nor_its_base64(void **state)
{
    fixture_t *f = *state;
    keys_t *k = open_keys(f);
    keys_info_t info;
    char secret[KEYS_SECRET_MAX], b64[256], header[KEYS_HEADER_MAX];
    cdn_err_t err;
    struct stat st;
    assert_int_not_equal(stat(f->path, &st), 0); /* nothing written before the first key */
    assert_int_equal(keys_create(k, &alice, &info, secret, &err), CDN_OK);
    assert_int_equal(stat(f->path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    b64_pair(info.id, secret, b64);
    assert_int_equal(keys_header_value(info.id, secret, header), CDN_OK);
    assert_string_equal(header + 7, b64);
    const char *text = read_file(f->path);
    assert_non_null(strstr(text, info.id));
    assert_null(strstr(text, secret));
    assert_null(strstr(text, b64));
    assert_null(strstr(text, secret + 8)); /* not even a tail of it */
    char lockp[160];
    snprintf(lockp, sizeof lockp, "%s/keys.lock", f->dir);
    assert_int_equal(stat(lockp, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    keys_close(k);
}

static void test_key_created_by_one_handle_is_verified_by_the_other(void **state)
{
    fixture_t *f = *state;
    keys_t *cli = open_keys(f), *server = open_keys(f);
    keys_info_t info, got;
    char secret[KEYS_SECRET_MAX];
    cdn_err_t err;
    assert_int_equal(keys_count(server), 0);
    assert_int_equal(keys_create(cli, &alice, &info, secret, &err), CDN_OK);
    assert_int_equal(keys_verify(server, info.id, secret, &got, &err), CDN_OK);
    assert_string_equal(got.subject, "alice");
    assert_int_equal(keys_count(server), 1);

    keys_info_t info2;
    char secret2[KEYS_SECRET_MAX];
    assert_int_equal(keys_create(server, &alice, &info2, secret2, &err), CDN_OK);
    assert_int_equal(keys_verify(cli, info2.id, secret2, NULL, &err), CDN_OK);
    assert_int_equal(keys_count(cli), 2);
    keys_close(cli);
    keys_close(server);
}

static void test_key_revoked_by_one_handle_is_denied_by_the_other_on_next_call(void **state)
{
    fixture_t *f = *state;
    keys_t *cli = open_keys(f), *server;
    keys_info_t a, b;
    char sa[KEYS_SECRET_MAX], sb[KEYS_SECRET_MAX];
    cdn_err_t err;
    assert_int_equal(keys_create(cli, &alice, &a, sa, &err), CDN_OK);
    assert_int_equal(keys_create(cli, &alice, &b, sb, &err), CDN_OK);
    server = open_keys(f);
    assert_int_equal(keys_verify(server, a.id, sa, NULL, &err), CDN_OK);
    assert_int_equal(keys_revoke(cli, a.id, &err), CDN_OK);
    assert_int_equal(keys_verify(server, a.id, sa, NULL, &err), CDN_ERR_DENIED);
    assert_int_equal(keys_verify(server, b.id, sb, NULL, &err), CDN_OK);
    /* Revoking b leaves a file of the same shape: still seen. */
    assert_int_equal(keys_revoke(cli, b.id, &err), CDN_OK);
    assert_int_equal(keys_verify(server, b.id, sb, NULL, &err), CDN_ERR_DENIED);
    assert_int_equal(keys_count(server), 0);
    /* and the server's own write keeps the CLI's revocations */
    keys_info_t c;
    char sc[KEYS_SECRET_MAX];
    assert_int_equal(keys_create(server, &alice, &c, sc, &err), CDN_OK);
    assert_int_equal(keys_verify(cli, a.id, sa, NULL, &err), CDN_ERR_DENIED);
    assert_int_equal(keys_verify(cli, c.id, sc, NULL, &err), CDN_OK);
    keys_close(cli);
    keys_close(server);
}

/* A secret verified before is remembered, not trusted blindly: a near miss of it is denied,
 * the remembered answer carries the key's info, and a revocation by this handle or another
 * is seen by the very next call. */
static void test_remembered_secret_denies_near_misses_and_forgets_on_revoke(void **state)
{
    fixture_t *f = *state;
    keys_t *server = open_keys(f), *cli = open_keys(f);
    keys_info_t a, b, got;
    char sa[KEYS_SECRET_MAX], sb[KEYS_SECRET_MAX], near[KEYS_SECRET_MAX + 2];
    cdn_err_t err;
    assert_int_equal(keys_create(server, &alice, &a, sa, &err), CDN_OK);
    assert_int_equal(keys_create(server, &alice, &b, sb, &err), CDN_OK);
    for (int i = 0; i < 3; i++) {
        memset(&got, 0, sizeof got);
        assert_int_equal(keys_verify(server, a.id, sa, &got, &err), CDN_OK);
        assert_string_equal(got.id, a.id);
        assert_string_equal(got.subject, "alice");
    }
    size_t n = strlen(sa);
    snprintf(near, sizeof near, "%s", sa);
    near[n - 1] = near[n - 1] == 'A' ? 'B' : 'A'; /* same length, last byte differs */
    assert_int_equal(keys_verify(server, a.id, near, NULL, &err), CDN_ERR_DENIED);
    near[n - 1] = '\0'; /* a prefix */
    assert_int_equal(keys_verify(server, a.id, near, NULL, &err), CDN_ERR_DENIED);
    snprintf(near, sizeof near, "%sx", sa); /* longer */
    assert_int_equal(keys_verify(server, a.id, near, NULL, &err), CDN_ERR_DENIED);
    assert_int_equal(keys_verify(server, b.id, sa, NULL, &err), CDN_ERR_DENIED); /* a's secret */
    assert_int_equal(keys_verify(server, a.id, sa, NULL, &err), CDN_OK);
    assert_int_equal(keys_revoke(server, a.id, &err), CDN_OK); /* this handle */
    assert_int_equal(keys_verify(server, a.id, sa, NULL, &err), CDN_ERR_DENIED);
    assert_int_equal(keys_verify(server, b.id, sb, NULL, &err), CDN_OK);
    assert_int_equal(keys_verify(server, b.id, sb, NULL, &err), CDN_OK);
    assert_int_equal(keys_revoke(cli, b.id, &err), CDN_OK); /* another handle */
    assert_int_equal(keys_verify(server, b.id, sb, NULL, &err), CDN_ERR_DENIED);
    keys_close(cli);
    keys_close(server);
}

enum { WRITERS = 4, PER_WRITER = 8 };

typedef struct writer {
    keys_t *k;
    keys_info_t info[PER_WRITER];
    char secret[PER_WRITER][KEYS_SECRET_MAX];
    int rc;
} writer_t;

static void *write_keys(void *arg)
{
    writer_t *w = arg;
    cdn_err_t err;
    for (int i = 0; i < PER_WRITER && !w->rc; i++)
        w->rc = keys_create(w->k, &alice, &w->info[i], w->secret[i], &err);
    return NULL;
}

static void test_concurrent_creates_from_threads_and_handles_all_survive(void **state)
{
    fixture_t *f = *state;
    keys_t *h1 = open_keys(f), *h2 = open_keys(f);
    static writer_t w[WRITERS];
    pthread_t t[WRITERS];
    cdn_err_t err;
    /* two threads on each handle: the flock must order handles and threads alike */
    for (int i = 0; i < WRITERS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].k = i % 2 ? h2 : h1;
        assert_int_equal(pthread_create(&t[i], NULL, write_keys, &w[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].rc, CDN_OK);
    }
    keys_t *fresh = open_keys(f);
    assert_int_equal(keys_count(fresh), WRITERS * PER_WRITER);
    assert_int_equal(keys_count(h1), WRITERS * PER_WRITER);
    for (int i = 0; i < WRITERS; i++)
        for (int j = 0; j < PER_WRITER; j++) {
            assert_int_equal(keys_verify(fresh, w[i].info[j].id, w[i].secret[j], NULL, &err),
                             CDN_OK);
            assert_int_equal(keys_verify(h2, w[i].info[j].id, w[i].secret[j], NULL, &err), CDN_OK);
        }
    keys_close(fresh);
    keys_close(h1);
    keys_close(h2);
}

typedef struct verifier {
    keys_t *k;
    const char *id, *secret;
    int ok, bad;
} verifier_t;

static void *verify_loop(void *arg)
{
    verifier_t *v = arg;
    cdn_err_t err;
    for (int i = 0; i < 300; i++) {
        if (keys_verify(v->k, v->id, v->secret, NULL, &err) == CDN_OK)
            v->ok++;
        else
            v->bad++;
    }
    return NULL;
}

static void test_verifiers_in_threads_see_a_stable_key_while_another_handle_writes(void **state)
{
    fixture_t *f = *state;
    keys_t *server = open_keys(f), *cli = open_keys(f);
    keys_info_t info, tmp;
    char secret[KEYS_SECRET_MAX], s2[KEYS_SECRET_MAX];
    cdn_err_t err;
    assert_int_equal(keys_create(cli, &alice, &info, secret, &err), CDN_OK);
    verifier_t v[2] = {{server, info.id, secret, 0, 0}, {server, info.id, secret, 0, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, verify_loop, &v[i]), 0);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(keys_create(cli, &alice, &tmp, s2, &err), CDN_OK);
        assert_int_equal(keys_revoke(cli, tmp.id, &err), CDN_OK);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(v[i].ok, 300);
        assert_int_equal(v[i].bad, 0);
    }
    assert_int_equal(keys_count(server), 1);
    keys_close(server);
    keys_close(cli);
}

static void expect_corrupt(const fixture_t *f, const char *text)
{
    keys_t *k = NULL;
    cdn_err_t err = {0};
    write_file(f->path, text);
    assert_int_equal(keys_open(f->dir, &k, &err), CDN_ERR_CORRUPT);
    assert_null(k);
    assert_non_null(strstr(err.msg, f->path));
}

static void test_corrupt_file_is_rejected_naming_it(void **state)
{
    fixture_t *f = *state;
    keys_t *k = open_keys(f);
    keys_info_t info;
    char secret[KEYS_SECRET_MAX];
    cdn_err_t err;
    assert_int_equal(keys_create(k, &alice, &info, secret, &err), CDN_OK);

    expect_corrupt(f, "garbage");
    expect_corrupt(f, "");
    expect_corrupt(f, "[]");
    expect_corrupt(f, "{\"version\":2,\"keys\":[]}");
    expect_corrupt(f, "{\"version\":1,\"keys\":[{\"id\":\"k1\",\"name\":\"x\",\"salt\":\"zz\","
                      "\"hmac_sha256\":\"00\"}]}");
    expect_corrupt(f, "{\"version\":1,\"keys\":[{\"id\":\"bad id\",\"name\":\"x\"}]}");
    char dup[1024];
    snprintf(dup, sizeof dup,
             "{\"version\":1,\"keys\":[{\"id\":\"k1\",\"name\":\"x\",\"revoked_ms\":1},"
             "{\"id\":\"k1\",\"name\":\"y\",\"revoked_ms\":2}]}");
    expect_corrupt(f, dup);

    /* A handle already open fails closed on its next call, and names the file. */
    assert_int_equal(keys_verify(k, info.id, secret, NULL, &err), CDN_ERR_CORRUPT);
    assert_non_null(strstr(err.msg, f->path));
    assert_int_equal(keys_create(k, &alice, &info, secret, &err), CDN_ERR_CORRUPT);
    keys_close(k);

    expect_corrupt(f, "{\"version\":1,\"keys\":[]}x"); /* trailing bytes */
    write_file(f->path, "{\"version\":1,\"keys\":[]}\n");
    k = open_keys(f);
    assert_int_equal(keys_count(k), 0);
    keys_close(k);
}

static void test_open_needs_an_existing_directory(void **state)
{
    fixture_t *f = *state;
    char missing[128];
    keys_t *k = NULL;
    cdn_err_t err;
    snprintf(missing, sizeof missing, "%s/nope", f->dir);
    assert_int_equal(keys_open(missing, &k, &err), CDN_ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, missing));
    write_file(f->path, "{}");
    assert_int_equal(keys_open(f->path, &k, &err), CDN_ERR_INVALID); /* a file, not a dir */
    assert_null(k);
}

static void test_add_is_idempotent_and_refuses_another_secret(void **state)
{
    fixture_t *f = *state;
    keys_t *k = open_keys(f), *other = open_keys(f);
    const char *id = "bootstrap", *secret = "s3cr3t-0123456789-abcdefghij";
    keys_spec_t admin = {.name = "bootstrap", .admin = 1};
    keys_info_t got;
    cdn_err_t err;
    assert_int_equal(keys_add(k, id, secret, &admin, &err), CDN_OK);
    assert_int_equal(keys_verify(other, id, secret, &got, &err), CDN_OK);
    assert_true(got.admin);
    int64_t created = got.created_ms;
    assert_int_equal(keys_add(other, id, secret, &admin, &err), CDN_OK); /* a restart */
    assert_int_equal(keys_count(k), 1);
    assert_int_equal(keys_verify(k, id, secret, &got, &err), CDN_OK);
    assert_int_equal(got.created_ms, created);
    assert_int_equal(keys_add(k, id, "another-secret-0123456789", &admin, &err), CDN_ERR_EXISTS);
    assert_non_null(strstr(err.msg, id));
    assert_int_equal(keys_verify(k, id, "another-secret-0123456789", NULL, &err), CDN_ERR_DENIED);
    assert_null(strstr(read_file(f->path), secret));

    /* A revoked bootstrap key stays revoked when the server restarts with it. */
    assert_int_equal(keys_revoke(other, id, &err), CDN_OK);
    assert_int_equal(keys_add(k, id, secret, &admin, &err), CDN_ERR_EXISTS);
    assert_int_equal(keys_verify(k, id, secret, NULL, &err), CDN_ERR_DENIED);

    assert_int_equal(keys_add(k, "bad:id", secret, &admin, &err), CDN_ERR_INVALID);
    assert_int_equal(keys_add(k, "", secret, &admin, &err), CDN_ERR_INVALID);
    assert_int_equal(keys_add(k, "this-id-is-much-longer-than-31-chars", secret, &admin, &err),
                     CDN_ERR_INVALID);
    assert_int_equal(keys_add(k, "short", "tooshort", &admin, &err), CDN_ERR_INVALID);
    assert_int_equal(keys_add(k, "spaced", "has a space in the secret!", &admin, &err),
                     CDN_ERR_INVALID);
    assert_int_equal(keys_add(k, "nospec", secret, NULL, &err), CDN_ERR_INVALID);
    keys_close(k);
    keys_close(other);
}

static void test_spec_is_validated_with_messages_naming_the_field(void **state)
{
    fixture_t *f = *state;
    keys_t *k = open_keys(f);
    char secret[KEYS_SECRET_MAX], longname[80];
    const char *many[KEYS_PRINCIPALS_MAX + 1], *one[] = {"group:eng"}, *ctrl[] = {"a\nb"};
    keys_info_t info;
    cdn_err_t err;
    memset(longname, 'n', 65);
    longname[65] = '\0';
    for (int i = 0; i <= KEYS_PRINCIPALS_MAX; i++)
        many[i] = "group:eng";

    keys_spec_t s = {.name = longname, .subject = "alice"};
    assert_int_equal(keys_create(k, &s, &info, secret, &err), CDN_ERR_INVALID);
    assert_non_null(strstr(err.msg, "name"));
    assert_string_equal(secret, "");
    s = (keys_spec_t){.name = "", .subject = "alice"};
    assert_int_equal(keys_create(k, &s, &info, secret, &err), CDN_ERR_INVALID);
    s = (keys_spec_t){.name = NULL, .subject = "alice"};
    assert_int_equal(keys_create(k, &s, &info, secret, &err), CDN_ERR_INVALID);
    s = (keys_spec_t){.name = "tab\there", .subject = "alice"};
    assert_int_equal(keys_create(k, &s, &info, secret, &err), CDN_ERR_INVALID);
    s = (keys_spec_t){.name = "both", .subject = "alice", .principals = one, .n_principals = 1};
    assert_int_equal(keys_create(k, &s, &info, secret, &err), CDN_ERR_INVALID);
    assert_non_null(strstr(err.msg, "not both"));
    s = (keys_spec_t){.name = "neither"};
    assert_int_equal(keys_create(k, &s, &info, secret, &err), CDN_ERR_INVALID);
    assert_non_null(strstr(err.msg, "admin"));
    s = (keys_spec_t){.name = "many", .principals = many, .n_principals = KEYS_PRINCIPALS_MAX + 1};
    assert_int_equal(keys_create(k, &s, &info, secret, &err), CDN_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "principals"));
    s = (keys_spec_t){.name = "ctrl", .principals = ctrl, .n_principals = 1};
    assert_int_equal(keys_create(k, &s, &info, secret, &err), CDN_ERR_INVALID);
    assert_non_null(strstr(err.msg, "principal 1"));
    s = (keys_spec_t){.name = "empty subject", .subject = ""};
    assert_int_equal(keys_create(k, &s, &info, secret, &err), CDN_ERR_INVALID);
    assert_int_equal(keys_count(k), 0);

    s = (keys_spec_t){.name = "max", .principals = many, .n_principals = KEYS_PRINCIPALS_MAX};
    assert_int_equal(keys_create(k, &s, &info, secret, &err), CDN_OK);
    assert_int_equal(info.n_principals, KEYS_PRINCIPALS_MAX);
    s = (keys_spec_t){.name = "root", .admin = 1};
    assert_int_equal(keys_create(k, &s, &info, secret, &err), CDN_OK);
    assert_true(info.admin);
    s = (keys_spec_t){.name = "admin as alice", .subject = "alice", .admin = 1};
    assert_int_equal(keys_create(k, &s, &info, secret, &err), CDN_OK);
    s = (keys_spec_t){.name = "café ☕", .subject = "alice"}; /* UTF-8 is printable */
    assert_int_equal(keys_create(k, &s, &info, secret, &err), CDN_OK);
    assert_int_equal(keys_count(k), 4);
    keys_close(k);
}

static void expect_pair(const char *value, const char *id, const char *secret)
{
    char gi[KEYS_ID_MAX], gs[KEYS_SECRET_MAX + 1];
    if (keys_parse_authorization(value, gi, gs) != CDN_OK)
        fail_msg("not parsed: \"%s\"", value);
    assert_string_equal(gi, id);
    assert_string_equal(gs, secret);
}

static void expect_invalid(const char *value)
{
    char gi[KEYS_ID_MAX], gs[KEYS_SECRET_MAX + 1];
    if (keys_parse_authorization(value, gi, gs) != CDN_ERR_INVALID)
        fail_msg("accepted: \"%s\"", value ? value : "(null)");
    assert_string_equal(gi, "");
    assert_string_equal(gs, "");
}

static void test_parse_authorization_accepts_each_form(void **state)
{
    (void)state;
    const char *id = "k0123456789abcdef", *secret = "_Bzr3shJFVJbAIATYzM2iGtV5BU7basxoJ7Qv1Gr_1I";
    char b64[256], value[512], header[KEYS_HEADER_MAX];
    b64_pair(id, secret, b64);

    snprintf(value, sizeof value, "ApiKey %s", b64);
    expect_pair(value, id, secret);
    snprintf(value, sizeof value, "Bearer %s", b64);
    expect_pair(value, id, secret);
    snprintf(value, sizeof value, "Basic %s", b64);
    expect_pair(value, id, secret);
    snprintf(value, sizeof value, "Bearer %s:%s", id, secret);
    expect_pair(value, id, secret);
    snprintf(value, sizeof value, "  apikey \t%s  ", b64); /* schemes are case-insensitive */
    expect_pair(value, id, secret);
    snprintf(value, sizeof value, "BEARER %s", b64);
    expect_pair(value, id, secret);

    /* unpadded, and the URL-safe alphabet */
    snprintf(value, sizeof value, "ApiKey %s", b64);
    char *eq = strchr(value, '=');
    if (eq)
        *eq = '\0';
    expect_pair(value, id, secret);
    b64_pair("a", "s>>>?", b64); /* "a:s>>>?" has '+' and '/' in base64 */
    assert_true(strchr(b64, '+') || strchr(b64, '/'));
    for (char *p = b64; *p; p++)
        *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
    snprintf(value, sizeof value, "ApiKey %s", b64);
    expect_pair(value, "a", "s>>>?");

    /* a secret may hold colons: the first one splits */
    b64_pair("k1", "a:b:c", b64);
    snprintf(value, sizeof value, "Basic %s", b64);
    expect_pair(value, "k1", "a:b:c");

    /* our own header value, at the longest id and secret */
    char lid[KEYS_ID_MAX], lsec[KEYS_SECRET_MAX + 1];
    memset(lid, 'i', KEYS_ID_MAX - 1);
    lid[KEYS_ID_MAX - 1] = '\0';
    memset(lsec, 's', KEYS_SECRET_MAX);
    lsec[KEYS_SECRET_MAX] = '\0';
    assert_int_equal(keys_header_value(lid, lsec, header), CDN_OK);
    expect_pair(header, lid, lsec);
    assert_int_equal(keys_header_value(id, secret, header), CDN_OK);
    expect_pair(header, id, secret);
}

static void test_parse_authorization_rejects_garbage(void **state)
{
    (void)state;
    char b64[256], value[512], lid[KEYS_ID_MAX + 1], lsec[KEYS_SECRET_MAX + 2];
    expect_invalid(NULL);
    expect_invalid("");
    expect_invalid("   ");
    expect_invalid("ApiKey");
    expect_invalid("ApiKey ");
    expect_invalid("ApiKey !!!notbase64!!!");
    expect_invalid("ApiKey azE6c2VjcmV0="); /* one '=' too many for its length */
    expect_invalid("ApiKey azE6c2VjcmV0Q"); /* a length base64 cannot have */
    expect_invalid("ApiKey az=E6c2VjcmV0"); /* padding inside */
    expect_invalid("ApiKey azE6c2VjcmV=");  /* "k1:secre" with non-zero unused bits */
    b64_pair("", "secret", b64);
    snprintf(value, sizeof value, "ApiKey %s", b64);
    expect_invalid(value); /* empty id */
    EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)"nocolonhere", 11);
    snprintf(value, sizeof value, "ApiKey %s", b64);
    expect_invalid(value);
    b64_pair("k1", "", b64);
    snprintf(value, sizeof value, "Basic %s", b64);
    expect_invalid(value); /* empty secret */
    b64_pair("k1", "two words", b64);
    snprintf(value, sizeof value, "Basic %s", b64);
    expect_invalid(value);
    EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)"k1:se\0cret", 10);
    snprintf(value, sizeof value, "ApiKey %s", b64);
    expect_invalid(value); /* a NUL inside */

    memset(lid, 'i', KEYS_ID_MAX);
    lid[KEYS_ID_MAX] = '\0';
    b64_pair(lid, "secret", b64);
    snprintf(value, sizeof value, "ApiKey %s", b64);
    expect_invalid(value); /* id of 32 characters */
    snprintf(value, sizeof value, "Bearer %s:secret", lid);
    expect_invalid(value);
    memset(lsec, 's', KEYS_SECRET_MAX + 1);
    lsec[KEYS_SECRET_MAX + 1] = '\0';
    b64_pair("k1", lsec, b64);
    snprintf(value, sizeof value, "ApiKey %s", b64);
    expect_invalid(value); /* secret of 65 characters */
    snprintf(value, sizeof value, "Bearer k1:%s", lsec);
    expect_invalid(value);
    memset(value, 'A', 400);
    memcpy(value, "ApiKey ", 7);
    value[400] = '\0';
    expect_invalid(value); /* far too long to be a key */

    b64_pair("k1", "secret", b64);
    snprintf(value, sizeof value, "Digest %s", b64);
    expect_invalid(value); /* unknown scheme */
    snprintf(value, sizeof value, "ApiKey%s", b64);
    expect_invalid(value); /* no space after the scheme */
    snprintf(value, sizeof value, "ApiKey %s extra", b64);
    expect_invalid(value);
    expect_invalid("Bearer :secret");
    expect_invalid("Bearer k1:");
    expect_invalid("Bearer bad/id:secret");
    expect_invalid("ApiKey k1:secret"); /* ApiKey is base64 only */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_created_key_verifies_and_lists, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_remembered_secret_denies_near_misses_and_forgets_on_revoke, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_wrong_secret_unknown_id_and_revoked_key_are_denied_alike, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_is_0600_and_holds_neither_secret_nor_its_base64,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_created_by_one_handle_is_verified_by_the_other,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_key_revoked_by_one_handle_is_denied_by_the_other_on_next_call, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_concurrent_creates_from_threads_and_handles_all_survive, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_verifiers_in_threads_see_a_stable_key_while_another_handle_writes, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_file_is_rejected_naming_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_needs_an_existing_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_is_idempotent_and_refuses_another_secret, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spec_is_validated_with_messages_naming_the_field,
                                        setup, teardown),
        cmocka_unit_test(test_parse_authorization_accepts_each_form),
        cmocka_unit_test(test_parse_authorization_rejects_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
