/* leak_hunt.h: the world of the leak hunt (test_leak_hunt.c) at one revision, the ring of
 * states it keeps by revision, and the oracle that judges an answer against the state at the
 * revision it reports: bit masks of memberships, nesting, roles, tenants and ACLs, its own
 * closure over groups, and the tuples' fixpoint of leak_hunt_rebac.h. Written apart from the
 * engine. Relies on pthreads, C11 atomics, the public API and leak_hunt_rebac.h. */
#ifndef CDN_LEAK_HUNT_H
#define CDN_LEAK_HUNT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cordon.h"
#include "leak_hunt_rebac.h"

#define NU 6               /* users u0..u5 */
#define NG 6               /* groups g0..g5 */
#define NC 96              /* chunks c00..c95 */
#define GHOST (NG + NU)    /* group:ghost, held by nobody */
#define NOBODY (GHOST + 1) /* user:nobody, not in the model */
#define NPRIN (NOBODY + 1)
#define RING 8192 /* states kept for judging (a reader is never that far behind) */
_Static_assert(NU == RU, "the tuples name the model's users");

/* The world at one revision. */
typedef struct world {
    uint64_t rev;
    uint8_t member[NU];  /* bit g: the user is in group g */
    uint8_t nest[NG];    /* bit j: group i contains group j (j > i) */
    uint8_t reader;      /* bit u: the user holds the role that may search and read */
    uint8_t cleared;     /* bit u: the user's clearance is high (g0's conditional role holds) */
    uint8_t scoped;      /* bit u: the user holds the reader role in scope tenant:t1 only */
    uint8_t gone;        /* the collection is dropped (and not yet created again) */
    uint8_t tenants[NU]; /* bit t: the user belongs to tenant t (t0, t1) */
    uint8_t nosecret;    /* bit u: the model denies the user label:secret */
    uint8_t live[NC];
    uint16_t allowed[NC], denied[NC]; /* bits over the NPRIN principals */
    int8_t ctenant[NC];               /* the chunk's tenant, -1 for none */
    uint8_t secret[NC];               /* the chunk carries the label secret */
    int8_t obj[NC];                   /* the object the chunk names (leak_hunt_rebac.h), or -1 */
    tuples_t tuples;
    uint8_t held[NOBJ]; /* the oracle's fixpoint over tuples: bit u, the user holds object o */
} world_t;

typedef struct hunt {
    cordon_t *db;
    uint64_t seed;
    long ops; /* operations to run in all, writes and reads */
    pthread_mutex_t lock;
    world_t ring[RING]; /* ring[i % RING]: the i-th state */
    atomic_long n_states;
    atomic_long done, reads, writes, hits, leaks, stale, wrong, unjudged, drops;
    atomic_long answered;  /* searches and gets answered (OK, or a get's NOT_FOUND) */
    atomic_long by_tuples; /* hits readable through their object alone */
    world_t now;           /* the writer's */
    char fail[512];
    /* The audit's records as the hunt's replay read them (subject and revision by seq), for
     * judging what the engine's own replay finds unreadable. */
    struct shown {
        uint64_t seq, rev;
        int u;
    } * shown;
    size_t n_shown, cap_shown;
} hunt_t;

static void principal_name(int p, char *out, size_t cap)
{
    if (p < NG)
        snprintf(out, cap, "group:g%d", p);
    else if (p < GHOST)
        snprintf(out, cap, "user:u%d", p - NG);
    else
        snprintf(out, cap, p == GHOST ? "group:ghost" : "user:nobody");
}

/* The oracle: the user's principals (itself and every group holding it, however deep). */
static uint16_t principals_of(const world_t *w, int u)
{
    uint8_t held = w->member[u], before;
    do {
        before = held;
        for (int i = 0; i < NG; i++)
            if (w->nest[i] & held)
                held |= (uint8_t)(1u << i);
    } while (held != before);
    return (uint16_t)(held | (1u << (NG + u)));
}

static int readable(const world_t *w, int u, int c)
{
    uint16_t p = principals_of(w, u);
    if (w->ctenant[c] >= 0 && !(w->tenants[u] >> w->ctenant[c] & 1))
        return 0; /* another tenant's */
    if (w->secret[c] && w->nosecret >> u & 1)
        return 0;
    int by_object = w->obj[c] >= 0 && w->held[w->obj[c]] >> u & 1;
    return w->live[c] && ((w->allowed[c] & p) || by_object) && !(w->denied[c] & p);
}

/* Whether the chunk is readable to the user only through the object it names. */
static int through_tuples(const world_t *w, int u, int c)
{
    return readable(w, u, c) && !(w->allowed[c] & principals_of(w, u));
}

static int chunk_of(const char *id)
{
    return id[0] == 'c' ? atoi(id + 1) : -1;
}

/* The state a revision names: the last one at or before it (waiting for the writer to record
 * it when the answer is newer than what it has recorded yet); 0 when too old. */
static int world_at(hunt_t *h, uint64_t rev, world_t *out)
{
    for (;;) {
        pthread_mutex_lock(&h->lock);
        long n = atomic_load(&h->n_states);
        if (n && h->ring[(n - 1) % RING].rev >= rev) {
            long lo = n > RING ? n - RING : 0;
            for (long i = n - 1; i >= lo; i--)
                if (h->ring[i % RING].rev <= rev) {
                    *out = h->ring[i % RING];
                    pthread_mutex_unlock(&h->lock);
                    return 1;
                }
            pthread_mutex_unlock(&h->lock);
            return 0;
        }
        pthread_mutex_unlock(&h->lock);
        struct timespec nap = {0, 20000};
        nanosleep(&nap, NULL);
    }
}

/* Whether some state with a revision in [lo, hi] satisfies pred (for a refusal, which reports
 * no revision). */
static int some_world(hunt_t *h, uint64_t lo, uint64_t hi, int (*pred)(const world_t *, int),
                      int arg)
{
    world_t w;
    int found = 0;
    if (!world_at(h, hi, &w))
        return 1; /* too old to judge */
    pthread_mutex_lock(&h->lock);
    long n = atomic_load(&h->n_states), first = n > RING ? n - RING : 0;
    for (long i = n - 1; i >= first && !found; i--) {
        const world_t *x = &h->ring[i % RING];
        if (x->rev > hi)
            continue;
        found = pred(x, arg);
        if (x->rev <= lo)
            break; /* the state current when the request started: the last to consider */
    }
    pthread_mutex_unlock(&h->lock);
    return found;
}

/* Whether the user may not search: neither the reader role granted to it unscoped, nor the
 * conditional role of group g0 (held through any group inside g0) with its clearance high. */
static int lacks_role(const world_t *w, int u)
{
    int via_g0 = (principals_of(w, u) & 1u) && (w->cleared & (1u << u));
    return !(w->reader & (1u << u)) && !via_g0;
}

/* Whether a search by the user may be refused: it lacks the role, or there is no collection. */
static int refusable(const world_t *w, int u)
{
    return lacks_role(w, u) || w->gone;
}

static void record(hunt_t *h, uint64_t rev)
{
    h->now.rev = rev;
    rebac_eval(&h->now.tuples, h->now.held);
    pthread_mutex_lock(&h->lock);
    long n = atomic_load(&h->n_states);
    h->ring[n % RING] = h->now;
    atomic_store(&h->n_states, n + 1);
    pthread_mutex_unlock(&h->lock);
}

#endif
