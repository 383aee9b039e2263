/* leak_hunt_rebac.h: the relationship tuples of the leak hunt: the schema, the tuples as bit
 * sets, random shares, unshares, moves, memberships, bans and schema changes written as model
 * ops, and the oracle's own least fixpoint over them (who holds view and edit on every folder
 * and document), written apart from src/authz. Relies on testutil.h (tu_rand). */
#ifndef CDN_LEAK_HUNT_REBAC_H
#define CDN_LEAK_HUNT_REBAC_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

/* Tuple groups group:g0..g5 share their names with the model's groups g0..g5 and are not
 * them: a search must never mix the two. */
#define RG 6
#define RF 6  /* folders f0..f5, nested through parent (cycles allowed: no path through one) */
#define RD 12 /* documents d0..d11 */
#define RU 6  /* the users u0..u5, the same subjects the model holds */
/* Objects a chunk may name: document:dN (view), document:dN#edit, folder:fN (view). */
#define OBJ_EDIT RD
#define OBJ_FOLDER (2 * RD)
#define NOBJ (2 * RD + RF)

typedef struct tuples {
    uint8_t g_users[RG], g_groups[RG]; /* group:gI#member@user:uJ, @group:gJ#member */
    uint8_t f_parent[RF];              /* folder:fI#parent@folder:fJ */
    uint8_t f_viewer[RF], f_vgroups[RF];
    uint8_t f_public; /* bit f: folder:fF#viewer@user:* */
    uint8_t d_parent[RD], d_viewer[RD], d_vgroups[RD], d_banned[RD], d_owner[RD];
    uint8_t lax; /* the schema without the ban and with edit = owner (else the strict one) */
} tuples_t;

/* Both schemas have the same relations, so either may replace the other whatever the tuples. */
#define REBAC_SCHEMA_HEAD                                                                          \
    "{\"op\":\"put_schema\",\"schema\":{\"types\":{\"user\":{},"                                   \
    "\"group\":{\"relations\":{\"member\":[\"user\",\"group#member\"]}},"                          \
    "\"folder\":{\"relations\":{\"parent\":[\"folder\"],"                                          \
    "\"viewer\":[\"user\",\"group#member\",\"user:*\"]},"                                          \
    "\"permissions\":{\"view\":\"viewer + parent->view\"}},"                                       \
    "\"document\":{\"relations\":{\"parent\":[\"folder\"],\"viewer\":[\"user\",\"group#member\"]," \
    "\"banned\":[\"user\"],\"owner\":[\"user\"]},"
static const char *const rebac_schema[2] = {
    REBAC_SCHEMA_HEAD "\"permissions\":{\"view\":\"(viewer + parent->view) - banned\","
                      "\"edit\":\"owner & view\"}}}}}",
    REBAC_SCHEMA_HEAD "\"permissions\":{\"view\":\"viewer + parent->view\",\"edit\":\"owner\"}}}}}",
};

/* ---- The oracle: least fixpoints over bit sets of users. ---- */

static uint8_t rebac_groups_users(uint8_t gbits, const uint8_t mem[RG])
{
    uint8_t u = 0;
    for (int g = 0; g < RG; g++)
        if (gbits >> g & 1)
            u |= mem[g];
    return u;
}

/* held[o]: bit u when user uU holds the object's permission (the NOBJ objects above). */
static void rebac_eval(const tuples_t *t, uint8_t held[NOBJ])
{
    uint8_t mem[RG], fv[RF];
    int changed;
    memcpy(mem, t->g_users, sizeof mem);
    do {
        changed = 0;
        for (int g = 0; g < RG; g++) {
            uint8_t m = (uint8_t)(mem[g] | rebac_groups_users(t->g_groups[g], mem));
            changed |= m != mem[g];
            mem[g] = m;
        }
    } while (changed);
    for (int f = 0; f < RF; f++)
        fv[f] = (uint8_t)(t->f_viewer[f] | rebac_groups_users(t->f_vgroups[f], mem) |
                          (t->f_public >> f & 1 ? (1u << RU) - 1 : 0));
    do {
        changed = 0;
        for (int f = 0; f < RF; f++)
            for (int p = 0; p < RF; p++)
                if (t->f_parent[f] >> p & 1 && (fv[f] | fv[p]) != fv[f]) {
                    fv[f] |= fv[p];
                    changed = 1;
                }
    } while (changed);
    for (int d = 0; d < RD; d++) {
        uint8_t v = (uint8_t)(t->d_viewer[d] | rebac_groups_users(t->d_vgroups[d], mem));
        for (int p = 0; p < RF; p++)
            if (t->d_parent[d] >> p & 1)
                v |= fv[p];
        if (!t->lax)
            v &= (uint8_t)~t->d_banned[d];
        held[d] = v;
        held[OBJ_EDIT + d] = t->lax ? t->d_owner[d] : (uint8_t)(t->d_owner[d] & v);
    }
    memcpy(held + OBJ_FOLDER, fv, RF);
}

/* The name a chunk gives object o. */
static void rebac_object_name(int o, char *out, size_t cap)
{
    if (o < OBJ_EDIT)
        snprintf(out, cap, "document:d%d", o);
    else if (o < OBJ_FOLDER)
        snprintf(out, cap, "document:d%d#edit", o - OBJ_EDIT);
    else
        snprintf(out, cap, "folder:f%d", o - OBJ_FOLDER);
}

/* ---- The writer's changes. ---- */

/* The tuples toggled one at a time: a format over two indexes (a < na, b < nb), and the bit
 * set (bit b of field[a]) it sets; repeated entries weigh the draw. */
typedef struct tkind {
    const char *fmt;
    int na, nb;
    size_t field;
    int wild; /* the wildcard: bit a of the one byte at field */
} tkind_t;

static const tkind_t rebac_kinds[] = {
    {"folder:f%d#viewer@user:u%d", RF, RU, offsetof(tuples_t, f_viewer), 0}, /* shares */
    {"folder:f%d#viewer@user:u%d", RF, RU, offsetof(tuples_t, f_viewer), 0},
    {"folder:f%d#viewer@group:g%d#member", RF, RG, offsetof(tuples_t, f_vgroups), 0},
    {"folder:f%d#viewer@group:g%d#member", RF, RG, offsetof(tuples_t, f_vgroups), 0},
    {"document:d%d#viewer@user:u%d", RD, RU, offsetof(tuples_t, d_viewer), 0},
    {"document:d%d#viewer@group:g%d#member", RD, RG, offsetof(tuples_t, d_vgroups), 0},
    {"group:g%d#member@user:u%d", RG, RU, offsetof(tuples_t, g_users), 0}, /* memberships */
    {"group:g%d#member@user:u%d", RG, RU, offsetof(tuples_t, g_users), 0},
    {"group:g%d#member@group:g%d#member", RG, RG, offsetof(tuples_t, g_groups), 0},
    {"document:d%d#banned@user:u%d", RD, RU, offsetof(tuples_t, d_banned), 0}, /* bans */
    {"document:d%d#banned@user:u%d", RD, RU, offsetof(tuples_t, d_banned), 0},
    {"document:d%d#owner@user:u%d", RD, RU, offsetof(tuples_t, d_owner), 0},
    {"folder:f%d#viewer@user:*", RF, 1, offsetof(tuples_t, f_public), 1}, /* public, private */
};
#define N_KINDS (sizeof rebac_kinds / sizeof *rebac_kinds)

/* A bounded list of tuples for one op's "writes" or "deletes". */
typedef struct tlist {
    char text[1024];
    size_t len;
    int n;
} tlist_t;

static void tlist_add(tlist_t *l, const char *tuple)
{
    int w = snprintf(l->text + l->len, sizeof l->text - l->len, "%s\"%s\"", l->n ? "," : "", tuple);
    if (w > 0 && (size_t)w < sizeof l->text - l->len) {
        l->len += (size_t)w;
        l->n++;
    }
}

/* Toggles tuple kind k at (a, b) in t, into writes or deletes; 0 when the tuple is already in
 * either list (a second toggle in one op is left out). */
static int rebac_toggle(tuples_t *t, const tkind_t *k, int a, int b, tlist_t *wr, tlist_t *del)
{
    char tuple[96], quoted[100];
    uint8_t *bits = (uint8_t *)t + k->field + (k->wild ? 0 : a);
    int bit = k->wild ? a : b;
    snprintf(tuple, sizeof tuple, k->fmt, a, b); /* the wildcard's format ignores b */
    snprintf(quoted, sizeof quoted, "\"%s\"", tuple);
    if (strstr(wr->text, quoted) || strstr(del->text, quoted))
        return 0;
    int present = *bits >> bit & 1;
    tlist_add(present ? del : wr, tuple);
    *bits ^= (uint8_t)(1u << bit);
    return 1;
}

/* Moves parents[i] to the folders of new_bits: deletes the parents it leaves, writes the ones
 * it gains, in the same op (no moment without a parent). */
static void rebac_move(uint8_t *parents, uint8_t new_bits, const char *self, tlist_t *wr,
                       tlist_t *del)
{
    char tuple[96];
    for (int p = 0; p < RF; p++) {
        int had = *parents >> p & 1, has = new_bits >> p & 1;
        if (had == has)
            continue;
        snprintf(tuple, sizeof tuple, "%s#parent@folder:f%d", self, p);
        tlist_add(has ? wr : del, tuple);
    }
    *parents = new_bits;
}

/* One random change of the tuples (or of the schema) as a model op into op, applied to t;
 * 0 when it changes nothing (nothing to write). */
static int rebac_change(tuples_t *t, uint64_t *s, char *op, size_t cap)
{
    tlist_t wr = {{0}, 0, 0}, del = {{0}, 0, 0};
    unsigned r = (unsigned)(tu_rand(s) % 100);
    char self[32];
    if (r < 3) { /* the other schema: bans lifted or restored, edit without view or with */
        t->lax ^= 1;
        snprintf(op, cap, "%s", rebac_schema[t->lax]);
        return 1;
    }
    if (r < 23) { /* move a document: one folder mostly, sometimes two or none */
        int d = (int)(tu_rand(s) % RD);
        uint8_t to = (uint8_t)(1u << tu_rand(s) % RF);
        if (tu_rand(s) % 5 == 0)
            to |= (uint8_t)(1u << tu_rand(s) % RF);
        if (tu_rand(s) % 10 == 0)
            to = 0;
        snprintf(self, sizeof self, "document:d%d", d);
        rebac_move(&t->d_parent[d], to, self, &wr, &del);
    } else if (r < 33) { /* move a folder under another, or to the top (a cycle at times) */
        int f = (int)(tu_rand(s) % RF), p = (int)(tu_rand(s) % RF);
        snprintf(self, sizeof self, "folder:f%d", f);
        rebac_move(&t->f_parent[f], p == f ? 0 : (uint8_t)(1u << p), self, &wr, &del);
    } else { /* shares, unshares, memberships, bans: one tuple, or a few in one op */
        int n = r < 90 ? 1 : 2 + (int)(tu_rand(s) % 3);
        for (int i = 0; i < n; i++) {
            const tkind_t *k = &rebac_kinds[tu_rand(s) % N_KINDS];
            int a = (int)(tu_rand(s) % (uint64_t)k->na), b = (int)(tu_rand(s) % (uint64_t)k->nb);
            rebac_toggle(t, k, a, b, &wr, &del);
        }
    }
    if (!wr.n && !del.n)
        return 0;
    snprintf(op, cap, "{\"op\":\"write_tuples\",\"writes\":[%s],\"deletes\":[%s]}", wr.text,
             del.text);
    return 1;
}

#endif
