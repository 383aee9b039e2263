/* graph.c: group membership kept flattened: each group knows its transitive ancestors and each
 * subject its transitive groups, recomputed for just the affected nodes on every change.
 * Relies on the state structures of internal.h and base/mem.h. */
#include "authz/internal.h"

#include <string.h>

#include "base/buf.h"
#include "base/mem.h"

/* Ancestors of g by walking parent edges (never through anc sets, so the order in which
 * affected groups are recomputed does not matter). */
static int group_recompute_anc(az_state_t *st, uint32_t g)
{
    az_ids_t seen = {0};
    uint32_t *work = NULL;
    size_t nwork = 0, capwork = 0;
    int rc = CDN_OK;
    az_group_t *grp = &st->groups[g];
    for (uint32_t i = 0; i < grp->parents.n && !rc; i++) {
        void *p = work;
        if ((rc = cdn_grow(&p, &capwork, nwork + 1, sizeof(uint32_t))))
            break;
        work = p;
        work[nwork++] = grp->parents.v[i];
    }
    while (nwork && !rc) {
        uint32_t x = work[--nwork];
        if (az_ids_has(&seen, x))
            continue;
        if ((rc = az_ids_add(&seen, x)))
            break;
        const az_ids_t *ps = &st->groups[x].parents;
        for (uint32_t i = 0; i < ps->n && !rc; i++) {
            void *p = work;
            if ((rc = cdn_grow(&p, &capwork, nwork + 1, sizeof(uint32_t))))
                break;
            work = p;
            work[nwork++] = ps->v[i];
        }
    }
    cdn_free(work);
    if (rc) {
        az_ids_free(&seen);
        return CDN_ERR_NOMEM;
    }
    az_ids_free(&grp->anc);
    grp->anc = seen;
    return CDN_OK;
}

static int subject_recompute_all(az_state_t *st, uint32_t s)
{
    az_subject_t *sub = &st->subjects[s];
    az_ids_t all = {0};
    for (uint32_t i = 0; i < sub->groups.n; i++) {
        uint32_t g = sub->groups.v[i];
        if (az_ids_add(&all, g))
            goto nomem;
        const az_ids_t *anc = &st->groups[g].anc;
        for (uint32_t k = 0; k < anc->n; k++)
            if (az_ids_add(&all, anc->v[k]))
                goto nomem;
    }
    az_ids_free(&sub->all);
    sub->all = all;
    return CDN_OK;
nomem:
    az_ids_free(&all);
    return CDN_ERR_NOMEM;
}

/* Recomputes c and every group below it, then every subject inside any of them. */
static int refresh_below(az_state_t *st, uint32_t c, const az_ids_t *subjects_before)
{
    int rc = group_recompute_anc(st, c);
    for (uint32_t d = 0; d < st->ngroups && !rc; d++)
        if (st->groups[d].id && d != c && az_ids_has(&st->groups[d].anc, c))
            rc = group_recompute_anc(st, d);
    for (uint32_t s = 0; s < st->nsubjects && !rc; s++)
        if (st->subjects[s].id &&
            (az_ids_has(&st->subjects[s].all, c) || az_ids_has(subjects_before, s)))
            rc = subject_recompute_all(st, s);
    return rc;
}

/* Writes "a contains b contains ... contains a" for the cycle that adding child under group
 * would close: a path from child down to group through member groups. */
static bool find_path(const az_state_t *st, uint32_t from, uint32_t to, uint32_t *path, int *len,
                      int max, az_ids_t *seen)
{
    if (*len >= max)
        return false;
    path[(*len)++] = from;
    if (from == to)
        return true;
    if (!az_ids_has(seen, from) && !az_ids_add(seen, from)) {
        const az_ids_t *kids = &st->groups[from].children;
        for (uint32_t i = 0; i < kids->n; i++)
            if (find_path(st, kids->v[i], to, path, len, max, seen))
                return true;
    }
    (*len)--;
    return false;
}

static int cycle_error(const az_state_t *st, uint32_t group, uint32_t child, cdn_err_t *err)
{
    uint32_t path[16];
    int len = 0;
    az_ids_t seen = {0};
    bool found = find_path(st, child, group, path, &len, 16, &seen);
    az_ids_free(&seen);
    cdn_buf_t b;
    cdn_buf_init(&b, 200);
    cdn_buf_printf(&b, "%s", st->groups[group].id);
    for (int i = 0; found && i < len; i++)
        cdn_buf_printf(&b, " contains %s", st->groups[path[i]].id);
    if (!found)
        cdn_buf_printf(&b, " contains %s contains ... %s", st->groups[child].id,
                       st->groups[group].id);
    int rc = cdn_err_set(err, CDN_ERR_CONFLICT,
                         "add_member would make a group cycle: %s; remove one of these "
                         "memberships first",
                         b.data ? b.data : "?");
    cdn_buf_free(&b);
    return rc;
}

int az_graph_add_member(az_state_t *st, uint32_t group, uint32_t member, int member_is_group,
                        cdn_err_t *err)
{
    if (!member_is_group) {
        az_subject_t *s = &st->subjects[member];
        if (az_ids_has(&s->groups, group))
            return CDN_OK;
        if (az_ids_add(&s->groups, group) || az_ids_add(&st->groups[group].subjects, member) ||
            subject_recompute_all(st, member))
            return cdn_err_set(err, CDN_ERR_NOMEM, "add_member: out of memory");
        return CDN_OK;
    }
    if (member == group || az_ids_has(&st->groups[group].anc, member))
        return cycle_error(st, group, member, err);
    if (az_ids_has(&st->groups[member].parents, group))
        return CDN_OK;
    az_ids_t none = {0};
    if (az_ids_add(&st->groups[member].parents, group) ||
        az_ids_add(&st->groups[group].children, member) || refresh_below(st, member, &none))
        return cdn_err_set(err, CDN_ERR_NOMEM, "add_member: out of memory");
    return CDN_OK;
}

int az_graph_link(az_state_t *st, uint32_t group, uint32_t member, int member_is_group)
{
    if (member_is_group)
        return az_ids_add(&st->groups[member].parents, group) ||
                       az_ids_add(&st->groups[group].children, member)
                   ? CDN_ERR_NOMEM
                   : CDN_OK;
    return az_ids_add(&st->subjects[member].groups, group) ||
                   az_ids_add(&st->groups[group].subjects, member)
               ? CDN_ERR_NOMEM
               : CDN_OK;
}

int az_graph_flatten(az_state_t *st)
{
    int rc = CDN_OK;
    for (uint32_t g = 0; g < st->ngroups && !rc; g++)
        if (st->groups[g].id && (rc = group_recompute_anc(st, g)) == CDN_OK &&
            az_ids_has(&st->groups[g].anc, g))
            rc = CDN_ERR_CORRUPT; /* a group above itself: the edges were not a model's */
    for (uint32_t s = 0; s < st->nsubjects && !rc; s++)
        if (st->subjects[s].id)
            rc = subject_recompute_all(st, s);
    return rc;
}

int az_graph_remove_member(az_state_t *st, uint32_t group, uint32_t member, int member_is_group)
{
    if (!member_is_group) {
        az_ids_del(&st->subjects[member].groups, group);
        az_ids_del(&st->groups[group].subjects, member);
        return subject_recompute_all(st, member);
    }
    /* Subjects below `member` lose groups: note them before the edge goes. */
    az_ids_t before = {0};
    for (uint32_t s = 0; s < st->nsubjects; s++)
        if (st->subjects[s].id && az_ids_has(&st->subjects[s].all, member) &&
            az_ids_add(&before, s)) {
            az_ids_free(&before);
            return CDN_ERR_NOMEM;
        }
    az_ids_del(&st->groups[member].parents, group);
    az_ids_del(&st->groups[group].children, member);
    int rc = refresh_below(st, member, &before);
    az_ids_free(&before);
    return rc;
}

int az_graph_delete_group(az_state_t *st, uint32_t g)
{
    az_group_t *grp = &st->groups[g];
    int rc = CDN_OK;
    while (grp->children.n && !rc)
        rc = az_graph_remove_member(st, g, grp->children.v[grp->children.n - 1], 1);
    while (grp->parents.n && !rc)
        rc = az_graph_remove_member(st, grp->parents.v[grp->parents.n - 1], g, 1);
    while (grp->subjects.n && !rc)
        rc = az_graph_remove_member(st, g, grp->subjects.v[grp->subjects.n - 1], 0);
    return rc;
}

void az_graph_delete_subject(az_state_t *st, uint32_t s)
{
    az_subject_t *sub = &st->subjects[s];
    for (uint32_t i = 0; i < sub->groups.n; i++)
        az_ids_del(&st->groups[sub->groups.v[i]].subjects, s);
    az_ids_free(&sub->groups);
    az_ids_free(&sub->all);
}
