/* tags.c: tenants and labels. A chunk of a tenant stores each principal of its ACL qualified by
 * the tenant ("tenant:acme:group:eng"), and a view holds those qualified names only for the
 * tenants its subject belongs to, so the tenant wall is the same bitmap union as every ACL. A
 * chunk's labels are denied principals ("label:secret"), held by the views of subjects the
 * model denies the label. Relies on base/utf8. */
#include "acl/acl.h"
#include "base/mem.h"
#include "base/utf8.h"

#include <stdlib.h>

#include <stdio.h>
#include <string.h>

int acl_tag_check(const char *name, const char *what, cdn_err_t *err)
{
    size_t n = name ? strlen(name) : 0, at;
    if (!n)
        return cdn_err_set(err, CDN_ERR_INVALID, "%s is empty; give a name", what);
    if (n > ACL_TAG_MAX)
        return cdn_err_set(err, CDN_ERR_LIMIT, "%s is %zu bytes long; the limit is %d", what, n,
                           ACL_TAG_MAX);
    if (!cdn_utf8_valid(name, n, &at))
        return cdn_err_set(err, CDN_ERR_INVALID, "%s is not UTF-8 (byte %zu)", what, at);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c <= ' ' || c == ':' || c == 0x7f)
            return cdn_err_set(err, CDN_ERR_INVALID,
                               "%s '%.128s' holds a space, control character or ':'; tenant "
                               "and label names may not",
                               what, name);
    }
    return CDN_OK;
}

int acl_qualify(const char *tenant, const char *canon, char *out, size_t cap)
{
    int n = tenant ? snprintf(out, cap, "tenant:%s:%s", tenant, canon)
                   : snprintf(out, cap, "%s", canon);
    return n < 0 || (size_t)n >= cap ? CDN_ERR_LIMIT : CDN_OK;
}

/* "KIND:" at the start of s, and the rest after it, or NULL. */
static const char *after_kind(const char *s, const char *kind)
{
    size_t k = strlen(kind);
    return !strncmp(s, kind, k) && s[k] == ':' ? s + k + 1 : NULL;
}

/* A principal or "label:L", canonical. */
static int plain_canon(const char *name, char *canon, size_t cap, cdn_err_t *err)
{
    const char *l = after_kind(name, "label");
    if (!l)
        return acl_principal_canon(name, canon, cap, err);
    int rc = acl_tag_check(l, "label", err);
    return rc ? rc : acl_qualify(NULL, name, canon, cap);
}

int acl_view_canon(const char *name, char *canon, size_t cap, cdn_err_t *err)
{
    const char *t = name ? after_kind(name, "tenant") : NULL;
    char tenant[ACL_TAG_MAX + 1], inner[ACL_PRINCIPAL_MAX + 16];
    int rc;
    if (!t)
        return plain_canon(name, canon, cap, err);
    const char *colon = strchr(t, ':');
    size_t n = colon ? (size_t)(colon - t) : strlen(t);
    if (n > ACL_TAG_MAX)
        return cdn_err_set(err, CDN_ERR_LIMIT, "tenant of \"%.100s\" is too long", name);
    memcpy(tenant, t, n);
    tenant[n] = '\0';
    if ((rc = acl_tag_check(tenant, "tenant", err)))
        return rc;
    if (!colon)
        return acl_qualify(NULL, name, canon, cap) ? cdn_err_set(err, CDN_ERR_LIMIT, "too long")
                                                   : CDN_OK;
    if ((rc = plain_canon(colon + 1, inner, sizeof inner, err)))
        return rc;
    if (acl_qualify(tenant, inner, canon, cap))
        return cdn_err_set(err, CDN_ERR_LIMIT, "principal \"%.100s\" is too long", name);
    return CDN_OK;
}

int acl_view_expand(const char *const *canon, size_t n, acl_name_fn fn, void *ctx)
{
    char q[ACL_VIEW_NAME_MAX];
    int rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = fn(ctx, canon[i])))
            return rc;
    for (size_t i = 0; i < n; i++) {
        const char *t = after_kind(canon[i], "tenant");
        if (!t || strchr(t, ':'))
            continue; /* not a membership "tenant:T" */
        for (size_t j = 0; j < n; j++) {
            if (after_kind(canon[j], "tenant"))
                continue;
            if (acl_qualify(t, canon[j], q, sizeof q) == CDN_OK && (rc = fn(ctx, q)))
                return rc;
        }
    }
    return CDN_OK;
}

static int set_add(void *ctx, const char *name)
{
    acl_set_t *s = ctx;
    void *q = s->v;
    char *copy;
    if (cdn_grow(&q, &s->cap, s->n + 1, sizeof(char *)) || !(copy = cdn_strdup(name))) {
        if (q)
            s->v = q;
        return CDN_ERR_NOMEM;
    }
    s->v = q;
    s->v[s->n++] = copy;
    return CDN_OK;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int acl_set_build(const char *const *names, size_t n, acl_set_t *out, cdn_err_t *err)
{
    char **canon = cdn_calloc(n ? n : 1, sizeof *canon);
    int rc = canon ? CDN_OK : CDN_ERR_NOMEM;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n && rc == CDN_OK; i++) {
        if (!(canon[i] = cdn_malloc(ACL_VIEW_NAME_MAX)))
            rc = CDN_ERR_NOMEM;
        else if ((rc = acl_view_canon(names[i], canon[i], ACL_VIEW_NAME_MAX, err)))
            break;
    }
    if (rc == CDN_OK && (rc = acl_view_expand((const char *const *)canon, n, set_add, out)) == 0)
        qsort(out->v, out->n, sizeof(char *), cmp_name);
    for (size_t i = 0; canon && i < n; i++)
        cdn_free(canon[i]);
    cdn_free(canon);
    if (rc == CDN_ERR_NOMEM)
        cdn_err_set(err, rc, "out of memory");
    if (rc)
        acl_set_free(out);
    return rc;
}

bool acl_set_has(const acl_set_t *s, const char *name)
{
    return s->n && bsearch(&name, s->v, s->n, sizeof(char *), cmp_name) != NULL;
}

void acl_set_free(acl_set_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        cdn_free(s->v[i]);
    cdn_free(s->v);
    memset(s, 0, sizeof *s);
}

static int rb_name_ok(const char *s, size_t n)
{
    if (!n || n > 63 || !(s[0] >= 'a' && s[0] <= 'z'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return 0;
    return 1;
}

int acl_object_principal(const char *object, char *out, size_t cap, cdn_err_t *err)
{
    const char *colon = object ? strchr(object, ':') : NULL, *hash, *perm = "view";
    size_t idn, pn = 4;
    if (!colon)
        goto bad;
    hash = strchr(colon, '#');
    idn = hash ? (size_t)(hash - colon - 1) : strlen(colon + 1);
    if (hash) {
        perm = hash + 1;
        pn = strlen(perm);
    }
    if (!rb_name_ok(object, (size_t)(colon - object)) || !rb_name_ok(perm, pn) || !idn ||
        idn > 127 || (idn == 1 && colon[1] == '*'))
        goto bad;
    for (size_t i = 0; i < idn; i++) {
        unsigned char c = (unsigned char)colon[1 + i];
        if (c <= ' ' || c == 0x7f || c == '#' || c == ':' || c == '@')
            goto bad;
    }
    if (snprintf(out, cap, "object:%.*s:%.*s#%.*s", (int)(colon - object), object, (int)idn,
                 colon + 1, (int)pn, perm) >= (int)cap)
        goto bad;
    return CDN_OK;
bad:
    return cdn_err_set(err, CDN_ERR_INVALID,
                       "object \"%.150s\" is not TYPE:ID or TYPE:ID#PERMISSION (names of "
                       "[a-z0-9_], an id without spaces, '#', ':' or '@')",
                       object ? object : "(null)");
}

const char *acl_object_permission(const char *name)
{
    const char *o = name, *hash;
    if (!strncmp(o, "tenant:", 7) && (o = strchr(o + 7, ':')))
        o++; /* past "tenant:T:" (tenant names hold no ':') */
    if (!o || strncmp(o, "object:", 7))
        return NULL;
    hash = strrchr(o, '#');
    return hash ? hash + 1 : NULL;
}
