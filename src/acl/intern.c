/* intern.c: principal names to dense ids and back, and principal name validation.
 * Relies on base/strmap. */
#include "acl/acl.h"
#include "base/mem.h"
#include "base/utf8.h"

#include <stdio.h>
#include <string.h>

void acl_intern_init(acl_intern_t *t)
{
    memset(t, 0, sizeof *t);
    cdn_strmap_init(&t->ids);
}

void acl_intern_free(acl_intern_t *t)
{
    for (size_t i = 0; i < t->len; i++)
        cdn_free(t->names[i]);
    cdn_free(t->names);
    cdn_strmap_free(&t->ids);
    memset(t, 0, sizeof *t);
}

int acl_intern_get(const acl_intern_t *t, const char *name, uint32_t *id)
{
    return cdn_strmap_get(&t->ids, name, strlen(name), id);
}

int acl_intern_add(acl_intern_t *t, const char *name, uint32_t *id, int *added)
{
    size_t n = strlen(name);
    char *copy;
    *added = 0;
    if (cdn_strmap_get(&t->ids, name, n, id) == CDN_OK)
        return CDN_OK;
    if (cdn_grow((void **)&t->names, &t->cap, t->len + 1, sizeof(char *)))
        return CDN_ERR_NOMEM;
    if (!(copy = cdn_strndup(name, n)))
        return CDN_ERR_NOMEM;
    if (cdn_strmap_put(&t->ids, name, n, (uint32_t)t->len)) {
        cdn_free(copy);
        return CDN_ERR_NOMEM;
    }
    t->names[t->len] = copy;
    *id = (uint32_t)t->len++;
    *added = 1;
    return CDN_OK;
}

const char *acl_intern_name(const acl_intern_t *t, uint32_t id)
{
    return id < t->len ? t->names[id] : NULL;
}

/* The closed list of kinds. A kind outside it would be stored and never match any view, so a
 * misspelt deny ("usr:mallory") would silently deny nobody: it is an error instead. */
static const char *const kinds[] = {"user", "service", "group", "role", "object"};
#define N_KINDS (sizeof kinds / sizeof *kinds)

int acl_principal_canon(const char *name, char *canon, size_t canon_size, cdn_err_t *err)
{
    size_t n, at;
    const char *colon;
    if (!name || !*name)
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "a principal name is empty; write e.g. "
                           "\"group:eng\" or \"user:alice\"");
    n = strlen(name);
    if (n > ACL_PRINCIPAL_MAX)
        return cdn_err_set(err, CDN_ERR_LIMIT, "principal name of %zu bytes; the limit is %d", n,
                           ACL_PRINCIPAL_MAX);
    if (!cdn_utf8_valid(name, n, &at))
        return cdn_err_set(err, CDN_ERR_INVALID, "principal name is not UTF-8 (byte %zu)", at);
    if (cdn_utf8_has_control(name, n, &at))
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "principal name contains a control character at byte %zu", at);
    colon = strchr(name, ':');
    if (colon) {
        size_t klen = (size_t)(colon - name), k = 0;
        while (k < N_KINDS && (strlen(kinds[k]) != klen || memcmp(name, kinds[k], klen)))
            k++;
        if (k == N_KINDS)
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "principal \"%.100s\" has an unknown kind; write user:, "
                               "service:, group:, role:, object: or a plain group name",
                               name);
        if (colon[1] == '\0')
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "principal \"%.100s\" has a kind but no "
                               "name",
                               name);
    }
    /* no format: a search by a reader of many objects makes 100,000 of these */
    size_t pre = colon ? 0 : 6;
    if (pre + n >= canon_size)
        return cdn_err_set(err, CDN_ERR_LIMIT, "principal \"%.100s\" is too long", name);
    memcpy(canon, "group:", pre);
    memcpy(canon + pre, name, n + 1);
    return CDN_OK;
}
