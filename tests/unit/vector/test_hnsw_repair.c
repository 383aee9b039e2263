/* test_hnsw_repair.c: hnsw_repair unlinks deleted nodes: no live list names one afterwards, a
 * deleted entry point is replaced, recall over the live rows holds while searches visit fewer
 * nodes, the nodes left with few in-links are linked in again, inserts after it do not link to
 * deleted nodes (nor lose their back-links to deleted ones before it), and it runs alongside
 * searches and inserts (also under ThreadSanitizer), in slices ends as one repair, and the count of
 * deletes it unlinked is saved with the graph. Relies on cmocka, pthreads and vector/hnsw_int.h. */
/* cmocka.h needs these four first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "unit/vector/hnsw_testutil.h"
#include "vector/hnsw_int.h"

#define N 6000
#define DIM 16
#define NQ 100
#define K 10

/* Live lists (at every level) that name a deleted node. */
static uint32_t live_links_to_deleted(hnsw_t *h)
{
    uint32_t bad = 0, buf[2 * HNSW_M_MAX + 1];
    for (uint32_t p = 0; p < h->span; p++) {
        uint8_t f = hnsw_flags(h, p);
        if (!(f & HNSW_F_PRESENT) || (f & HNSW_F_DELETED))
            continue;
        for (uint32_t l = 0; l <= h->levels[p]; l++) {
            uint32_t n = hnsw_read_list(h, p, l, buf);
            for (uint32_t i = 0; i < n; i++)
                bad += (hnsw_flags(h, buf[i]) & HNSW_F_DELETED) != 0;
        }
    }
    return bad;
}

/* Mean recall@K over the live rows and mean visited nodes, unfiltered, at ef. */
static double recall_live(hnsw_t *h, const vec_view_t *v, const float *queries,
                          const roaring_bitmap_t *deleted, uint32_t ef, double *visited)
{
    double sum = 0, vis = 0;
    for (uint32_t qi = 0; qi < NQ; qi++) {
        const float *q = queries + (size_t)qi * DIM;
        hnsw_hit_t hits[K];
        hnsw_stats_t st;
        uint32_t n = 0, truth[K];
        assert_int_equal(hnsw_search(h, v, q, K, ef, NULL, HNSW_MODE_UNFILTERED, 0, &st, hits, &n),
                         0);
        for (uint32_t i = 0; i < n; i++)
            assert_false(roaring_bitmap_contains(deleted, hits[i].id));
        uint32_t nt = tu_exact(v, VEC_METRIC_L2, q, v->count, NULL, deleted, K, truth);
        sum += tu_recall(hits, n, truth, nt);
        vis += (double)st.visited;
    }
    *visited = vis / NQ;
    return sum / NQ;
}

typedef struct fixture {
    float *data, *queries;
    vec_view_t view;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->data = tu_clustered(N, DIM, 40, 1.0f, 5, 0, NULL);
    f->queries = tu_queries(NQ, DIM, 40, 5, 33);
    f->view = (vec_view_t){f->data, DIM, DIM, N};
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    free(f->data);
    free(f->queries);
    free(f);
    return 0;
}

/* Deletes every id of del from h. */
static void delete_all(hnsw_t *h, const roaring_bitmap_t *del)
{
    uint64_t n = roaring_bitmap_get_cardinality(del);
    uint32_t *ids = malloc(sizeof(uint32_t) * (n ? n : 1));
    roaring_bitmap_to_uint32_array(del, ids);
    for (uint64_t i = 0; i < n; i++)
        assert_int_equal(hnsw_delete(h, ids[i]), 0);
    free(ids);
}

/* Deletes a share of the rows (seeded), and the entry point too. */
static roaring_bitmap_t *delete_share(hnsw_t *h, double share, uint64_t seed)
{
    roaring_bitmap_t *del = tu_random_set(N, share, seed);
    uint64_t e = atomic_load(&h->entry);
    roaring_bitmap_add(del, (uint32_t)e);
    delete_all(h, del);
    return del;
}

static void test_repair_unlinks_deleted_nodes_and_keeps_recall(void **state)
{
    fixture_t *f = *state;
    hnsw_t *h;
    assert_int_equal(tu_build_graph(&f->view, VEC_METRIC_L2, 100, 2, &h), 0);
    roaring_bitmap_t *del = delete_share(h, 0.4, 7);
    uint32_t ndel = (uint32_t)roaring_bitmap_get_cardinality(del);
    hnsw_info_t info;
    hnsw_get_info(h, &info);
    assert_int_equal(info.deleted, ndel);
    assert_int_equal(info.deleted_linked, ndel);
    assert_true(live_links_to_deleted(h) > 0);
    double vis0, vis1;
    double r0 = recall_live(h, &f->view, f->queries, del, 24, &vis0);

    hnsw_repair_stats_t st;
    assert_int_equal(hnsw_repair(h, &f->view, 2, &st), 0);
    assert_int_equal(live_links_to_deleted(h), 0);
    assert_true(st.lists_relinked > 0);
    hnsw_get_info(h, &info);
    assert_int_equal(info.deleted, ndel);
    assert_int_equal(info.deleted_linked, 0);
    uint64_t e = atomic_load(&h->entry);
    assert_false(hnsw_flags(h, (uint32_t)e) & HNSW_F_DELETED); /* a live entry point */
    double r1 = recall_live(h, &f->view, f->queries, del, 24, &vis1);
    print_message("40%% deleted, ef 24: recall %.4f -> %.4f, visited %.0f -> %.0f; %llu lists "
                  "re-chosen, %llu left empty\n",
                  r0, r1, vis0, vis1, (unsigned long long)st.lists_relinked,
                  (unsigned long long)st.lists_emptied);
    /* Against a graph built from the live rows alone, at the same ef. */
    hnsw_t *fresh;
    uint32_t *live = malloc(sizeof(uint32_t) * N), n_live = 0;
    for (uint32_t id = 0; id < N; id++)
        if (!roaring_bitmap_contains(del, id))
            live[n_live++] = id;
    hnsw_params_t p = hnsw_params_default();
    p.ef_construction = 100;
    assert_int_equal(hnsw_create(p, VEC_METRIC_L2, DIM, &fresh), 0);
    assert_int_equal(hnsw_build(fresh, &f->view, live, n_live, 2), 0);
    double visf, rf = recall_live(fresh, &f->view, f->queries, del, 24, &visf);
    print_message("a fresh graph of the live rows: recall %.4f, visited %.0f\n", rf, visf);
    assert_true(r1 >= rf - 0.015);
    assert_true(vis1 < vis0);       /* the tombstones are no longer walked */
    assert_true(vis1 < 1.2 * visf); /* and the search costs what a fresh graph's does */
    hnsw_free(fresh);
    free(live);

    /* Repairing again finds nothing to do. */
    assert_int_equal(hnsw_repair(h, &f->view, 1, &st), 0);
    assert_int_equal(st.lists_relinked, 0);

    /* Every live row is still reachable: found by its own vector. */
    for (uint32_t id = 0; id < N; id += 7) {
        if (roaring_bitmap_contains(del, id))
            continue;
        hnsw_hit_t hit;
        uint32_t n = 0;
        assert_int_equal(hnsw_search(h, &f->view, vec_row(&f->view, id), 1, 32, NULL,
                                     HNSW_MODE_UNFILTERED, 0, NULL, &hit, &n),
                         0);
        assert_int_equal(n, 1);
        assert_true(hit.dist == 0.0f);
    }
    roaring_bitmap_free(del);
    hnsw_free(h);
}

/* Live nodes with fewer than `min` in-links from live nodes at level 0. */
static uint32_t weak_live(hnsw_t *h, uint32_t min)
{
    uint32_t *in = calloc(h->span, sizeof *in), buf[2 * HNSW_M_MAX + 1], weak = 0;
    for (uint32_t p = 0; p < h->span; p++) {
        uint8_t f = hnsw_flags(h, p);
        if (!(f & HNSW_F_PRESENT) || (f & HNSW_F_DELETED))
            continue;
        uint32_t n = hnsw_read_list(h, p, 0, buf);
        for (uint32_t i = 0; i < n; i++)
            in[buf[i]]++;
    }
    for (uint32_t p = 0; p < h->span; p++) {
        uint8_t f = hnsw_flags(h, p);
        weak += (f & HNSW_F_PRESENT) && !(f & HNSW_F_DELETED) && in[p] < min;
    }
    free(in);
    return weak;
}

/* Live nodes a walk of level 0 from the entry point does not reach. */
static uint32_t unreached_live(hnsw_t *h)
{
    uint8_t *seen = calloc(h->span, 1);
    uint32_t *queue = malloc(sizeof(uint32_t) * h->span), head = 0, tail = 0, missed = 0;
    uint32_t buf[2 * HNSW_M_MAX + 1], e = (uint32_t)atomic_load(&h->entry);
    seen[e] = 1;
    queue[tail++] = e;
    while (head < tail) {
        uint32_t n = hnsw_read_list(h, queue[head++], 0, buf);
        for (uint32_t i = 0; i < n; i++)
            if (!seen[buf[i]])
                seen[buf[i]] = 1, queue[tail++] = buf[i];
    }
    for (uint32_t p = 0; p < h->span; p++) {
        uint8_t f = hnsw_flags(h, p);
        missed += (f & HNSW_F_PRESENT) && !(f & HNSW_F_DELETED) && !seen[p];
    }
    free(seen);
    free(queue);
    return missed;
}

/* A node whose in-links came from deleted nodes is linked in again by the whole-graph repair:
 * with most of the graph deleted, the lists re-chosen alone (hnsw_repair_range) leave live nodes
 * with fewer than m/2 in-links; hnsw_repair links each of them in from its nearest neighbours,
 * which leaves fewer such nodes and every live node reachable. */
static void test_repair_links_in_the_nodes_left_with_few_in_links(void **state)
{
    fixture_t *f = *state;
    hnsw_t *h;
    assert_int_equal(tu_build_graph(&f->view, VEC_METRIC_L2, 100, 2, &h), 0);
    roaring_bitmap_t *del = delete_share(h, 0.7, 11);
    hnsw_repair_stats_t st;
    assert_int_equal(hnsw_repair_range(h, &f->view, 0, UINT32_MAX, 2, &st), 0);
    assert_int_equal(st.next, 0);
    assert_int_equal(st.nodes_linked_in, 0); /* the sliced sweep does not link in */
    uint32_t min = h->p.m / 2, weak = weak_live(h, min);
    print_message("70%% deleted, lists re-chosen: %u live nodes with fewer than %u in-links, %u "
                  "unreached\n",
                  weak, min, unreached_live(h));
    assert_true(weak > 0);
    assert_int_equal(hnsw_repair(h, &f->view, 2, &st), 0);
    assert_int_equal(st.lists_relinked, 0); /* nothing left naming a deleted node */
    assert_int_equal(st.nodes_linked_in, weak);
    uint32_t after = weak_live(h, min);
    print_message("linked in: %u left with fewer than %u in-links\n", after, min);
    assert_true(after < weak / 2);
    assert_int_equal(unreached_live(h), 0);
    assert_int_equal(live_links_to_deleted(h), 0);
    roaring_bitmap_free(del);
    hnsw_free(h);
}

/* Inserts after a delete route through deleted nodes but do not link to them. */
static void test_inserts_do_not_link_to_deleted_nodes(void **state)
{
    fixture_t *f = *state;
    hnsw_t *h;
    vec_view_t first = f->view;
    first.count = N / 2;
    assert_int_equal(tu_build_graph(&first, VEC_METRIC_L2, 100, 2, &h), 0);
    roaring_bitmap_t *del = tu_random_set(N / 2, 0.5, 11);
    delete_all(h, del);
    assert_int_equal(hnsw_repair(h, &f->view, 2, NULL), 0);
    uint32_t ids[N / 2];
    for (uint32_t i = 0; i < N / 2; i++)
        ids[i] = N / 2 + i;
    assert_int_equal(hnsw_build(h, &f->view, ids, N / 2, 2), 0);
    assert_int_equal(live_links_to_deleted(h), 0);
    double vis;
    assert_true(recall_live(h, &f->view, f->queries, del, 24, &vis) >= 0.95);
    roaring_bitmap_free(del);
    hnsw_free(h);
}

/* A full list offered a newcomer while it still names deleted nodes (inserts between repair
 * sweeps) gives up the deleted ones first. On a line: s at 0 lists 1.0, 1.1 (both deleted),
 * -1.0 and -1.1; a newcomer at 1.05 links to s. Chosen together, the deleted node at 1.0 would
 * shadow the newcomer (nearer to it than s is) and keep its place; live first, the newcomer
 * takes it, and the deleted nodes have no room left. */
static void test_a_full_list_gives_up_deleted_members_for_a_newcomer(void **state)
{
    (void)state;
    static const float pts[] = {0.0f, 1.0f, 1.1f, -1.0f, -1.1f, 1.05f};
    vec_view_t v = {pts, 1, 1, 6};
    hnsw_params_t p = hnsw_params_default();
    hnsw_t *h;
    uint32_t list[2 * HNSW_M_MAX + 1];
    p.m = 2; /* level-0 lists hold 4 */
    assert_int_equal(hnsw_create(p, VEC_METRIC_L2, 1, &h), 0);
    for (uint32_t id = 0; id < 5; id++)
        assert_int_equal(hnsw_insert(h, &v, id), 0);
    const uint32_t full[] = {1, 2, 3, 4};
    hnsw_list_store(h, 0, 0, full, 4);
    assert_int_equal(hnsw_delete(h, 1), 0);
    assert_int_equal(hnsw_delete(h, 2), 0);
    assert_int_equal(hnsw_insert(h, &v, 5), 0);
    uint32_t n = hnsw_read_list(h, 0, 0, list), has_new = 0, deleted = 0;
    for (uint32_t i = 0; i < n; i++) {
        has_new += list[i] == 5;
        deleted += list[i] == 1 || list[i] == 2;
    }
    assert_int_equal(has_new, 1);
    assert_int_equal(deleted, 0);
    hnsw_free(h);
}

typedef struct race {
    hnsw_t *h;
    const vec_view_t *view;
    const float *queries;
    const roaring_bitmap_t *deleted; /* read only: the test's own record, not the graph's flags */
    _Atomic int stop;
    _Atomic long searches, bad;
} race_t;

static void *searcher(void *arg)
{
    race_t *r = arg;
    uint32_t qi = 0;
    while (!atomic_load(&r->stop)) {
        hnsw_hit_t hits[K];
        uint32_t n = 0;
        const float *q = r->queries + (size_t)(qi++ % NQ) * DIM;
        if (hnsw_search(r->h, r->view, q, K, 32, NULL, HNSW_MODE_UNFILTERED, 0, NULL, hits, &n))
            atomic_fetch_add(&r->bad, 1);
        for (uint32_t i = 0; i < n; i++)
            if (roaring_bitmap_contains(r->deleted, hits[i].id))
                atomic_fetch_add(&r->bad, 1);
        if (n < K)
            atomic_fetch_add(&r->bad, 1);
        atomic_fetch_add(&r->searches, 1);
    }
    return NULL;
}

static void *inserter(void *arg)
{
    race_t *r = arg;
    for (uint32_t id = N - N / 4; id < N; id++)
        if (hnsw_insert(r->h, r->view, id))
            atomic_fetch_add(&r->bad, 1);
    return NULL;
}

/* The count of deletes a completed sweep unlinked survives a save and a load, so a reopened
 * graph does not sweep again for deletes already unlinked; deletes after the load count anew. */
static void test_repaired_count_survives_save_and_load(void **state)
{
    fixture_t *f = *state;
    hnsw_t *h, *back;
    assert_int_equal(tu_build_graph(&f->view, VEC_METRIC_L2, 100, 2, &h), 0);
    roaring_bitmap_t *del = delete_share(h, 0.3, 21);
    uint32_t ndel = (uint32_t)roaring_bitmap_get_cardinality(del);
    assert_int_equal(hnsw_repair(h, &f->view, 2, NULL), 0);
    char path[] = "/tmp/cordon-hnsw-repaired-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    uint64_t rev = 0;
    assert_int_equal(hnsw_save(h, path, 77), 0);
    assert_int_equal(hnsw_load(path, &back, &rev), 0);
    assert_int_equal(rev, 77);
    hnsw_info_t info;
    hnsw_get_info(back, &info);
    assert_int_equal(info.deleted, ndel);
    assert_int_equal(info.deleted_linked, 0);
    uint32_t more = 0; /* five more live rows deleted after the load */
    for (uint32_t id = 0; id < N && more < 5; id++)
        if (!roaring_bitmap_contains(del, id)) {
            assert_int_equal(hnsw_delete(back, id), 0);
            more++;
        }
    hnsw_get_info(back, &info);
    assert_int_equal(info.deleted_linked, 5);
    /* A graph saved before any sweep still counts every delete as linked. */
    hnsw_t *fresh, *fresh_back;
    assert_int_equal(tu_build_graph(&f->view, VEC_METRIC_L2, 100, 2, &fresh), 0);
    delete_all(fresh, del);
    assert_int_equal(hnsw_save(fresh, path, 1), 0);
    assert_int_equal(hnsw_load(path, &fresh_back, &rev), 0);
    hnsw_get_info(fresh_back, &info);
    assert_int_equal(info.deleted_linked, ndel);
    unlink(path);
    hnsw_free(fresh_back);
    hnsw_free(fresh);
    hnsw_free(back);
    hnsw_free(h);
    roaring_bitmap_free(del);
}

/* Searches and inserts while the repair runs: every search answers K live rows, nothing fails,
 * and no live list is left naming a node deleted before the repair. */
static void test_repair_runs_alongside_searches_and_inserts(void **state)
{
    fixture_t *f = *state;
    hnsw_t *h;
    vec_view_t first = f->view;
    first.count = N - N / 4;
    assert_int_equal(tu_build_graph(&first, VEC_METRIC_L2, 64, 2, &h), 0);
    roaring_bitmap_t *del = tu_random_set(N - N / 4, 0.3, 23);
    delete_all(h, del);
    race_t r = {.h = h, .view = &f->view, .queries = f->queries, .deleted = del};
    pthread_t s, w;
    assert_int_equal(pthread_create(&s, NULL, searcher, &r), 0);
    assert_int_equal(pthread_create(&w, NULL, inserter, &r), 0);
    assert_int_equal(hnsw_repair(h, &f->view, 2, NULL), 0);
    pthread_join(w, NULL);
    atomic_store(&r.stop, 1);
    pthread_join(s, NULL);
    print_message("%ld searches during the repair\n", atomic_load(&r.searches));
    assert_int_equal(atomic_load(&r.bad), 0);
    assert_true(atomic_load(&r.searches) > 0);
    assert_int_equal(live_links_to_deleted(h), 0);
    roaring_bitmap_free(del);
    hnsw_free(h);
}

static void test_repair_rejects_bad_arguments(void **state)
{
    fixture_t *f = *state;
    hnsw_t *h;
    hnsw_repair_stats_t st = {7, 7, 7, 7};
    assert_int_equal(hnsw_create(hnsw_params_default(), VEC_METRIC_L2, DIM + 1, &h), 0);
    assert_int_equal(hnsw_repair(NULL, &f->view, 1, &st), CDN_ERR_INVALID);
    assert_int_equal(st.lists_relinked, 0);
    assert_int_equal(hnsw_repair(h, NULL, 1, NULL), CDN_ERR_INVALID);
    assert_int_equal(hnsw_repair(h, &f->view, 1, NULL), CDN_ERR_INVALID); /* other dimension */
    hnsw_free(h);
    assert_int_equal(hnsw_create(hnsw_params_default(), VEC_METRIC_L2, DIM, &h), 0);
    assert_int_equal(hnsw_repair(h, &f->view, 1, &st), 0); /* empty graph: nothing to do */
    assert_int_equal(st.lists_relinked, 0);
    hnsw_free(h);
}

/* A sweep in slices does what one call does; the deletes count as unlinked only when it ends. */
static void test_repair_in_slices_ends_as_one_repair(void **state)
{
    fixture_t *f = *state;
    hnsw_t *h;
    assert_int_equal(tu_build_graph(&f->view, VEC_METRIC_L2, 64, 2, &h), 0);
    roaring_bitmap_t *del = delete_share(h, 0.25, 41);
    uint32_t ndel = (uint32_t)roaring_bitmap_get_cardinality(del), next = 0, calls = 0;
    hnsw_info_t info;
    hnsw_repair_stats_t st;
    do {
        assert_int_equal(hnsw_repair_range(h, &f->view, next, 1000, 2, &st), 0);
        calls++;
        hnsw_get_info(h, &info);
        assert_int_equal(info.deleted_linked, st.next ? ndel : 0);
        assert_true(st.next == 0 || st.next == next + 1000);
        next = st.next;
    } while (next);
    assert_int_equal(calls, (N + 999) / 1000);
    assert_int_equal(live_links_to_deleted(h), 0);
    assert_false(hnsw_flags(h, (uint32_t)atomic_load(&h->entry)) & HNSW_F_DELETED);
    /* A slice that does not start a sweep ends none: nothing is counted as unlinked. */
    assert_int_equal(hnsw_delete(h, (uint32_t)atomic_load(&h->entry)), 0);
    assert_int_equal(hnsw_repair_range(h, &f->view, N - 10, 1000, 1, &st), 0);
    assert_int_equal(st.next, 0);
    hnsw_get_info(h, &info);
    assert_int_equal(info.deleted_linked, 1);
    roaring_bitmap_free(del);
    hnsw_free(h);
}

/* hnsw_compact after a repair: the copy holds the live nodes only, renumbered in order, and
 * every search of it returns the original's hits under their new ids (no live list named a
 * deleted node, so both walk the same nodes). Maps that keep a deleted node, or are not one to
 * one, are refused; the copy saves and loads. */
static void test_compact_renumbers_the_live_nodes(void **state)
{
    fixture_t *f = *state;
    hnsw_t *h, *c = NULL;
    assert_int_equal(tu_build_graph(&f->view, VEC_METRIC_L2, 100, 2, &h), 0);
    roaring_bitmap_t *del = delete_share(h, 0.4, 9);
    assert_int_equal(hnsw_repair(h, &f->view, 2, NULL), 0);
    uint32_t *map = malloc(N * sizeof *map), *back = malloc(N * sizeof *back), n_new = 0;
    float *rows = malloc((size_t)N * DIM * sizeof *rows);
    for (uint32_t i = 0; i < N; i++) {
        map[i] = roaring_bitmap_contains(del, i) ? HNSW_COMPACT_GONE : n_new;
        if (map[i] != HNSW_COMPACT_GONE) {
            memcpy(rows + (size_t)n_new * DIM, f->data + (size_t)i * DIM, DIM * sizeof *rows);
            back[n_new++] = i;
        }
    }
    /* refused: a deleted node kept, two nodes on one id, a count that does not match */
    uint32_t first_del = roaring_bitmap_minimum(del), keep = map[first_del];
    map[first_del] = 0;
    assert_int_equal(hnsw_compact(h, map, N, n_new, &c), CDN_ERR_INVALID);
    map[first_del] = keep;
    assert_int_equal(hnsw_compact(h, map, N, n_new + 1, &c), CDN_ERR_INVALID);
    assert_null(c);
    assert_int_equal(hnsw_compact(h, map, N, n_new, &c), 0);
    hnsw_info_t info;
    hnsw_get_info(c, &info);
    assert_int_equal(info.nodes, n_new);
    assert_int_equal(info.deleted, 0);
    vec_view_t cv = {rows, DIM, DIM, n_new};
    for (uint32_t qi = 0; qi < NQ; qi++) {
        const float *q = f->queries + (size_t)qi * DIM;
        hnsw_hit_t a[K], b[K];
        hnsw_stats_t st;
        uint32_t na = 0, nb = 0;
        assert_int_equal(
            hnsw_search(h, &f->view, q, K, 32, NULL, HNSW_MODE_UNFILTERED, 0, &st, a, &na), 0);
        assert_int_equal(hnsw_search(c, &cv, q, K, 32, NULL, HNSW_MODE_UNFILTERED, 0, &st, b, &nb),
                         0);
        assert_int_equal(na, nb);
        for (uint32_t i = 0; i < na; i++) {
            assert_int_equal(a[i].id, back[b[i].id]);
            assert_true(a[i].dist == b[i].dist);
        }
    }
    /* The copy is a graph like any other: it saves and loads. */
    char path[] = "/tmp/cordon-hnsw-compact-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    hnsw_t *l = NULL;
    uint64_t rev = 0;
    assert_int_equal(hnsw_save(c, path, n_new), 0);
    assert_int_equal(hnsw_load(path, &l, &rev), 0);
    assert_int_equal(rev, n_new);
    hnsw_get_info(l, &info);
    assert_int_equal(info.nodes, n_new);
    unlink(path);
    hnsw_free(l);
    hnsw_free(c);
    hnsw_free(h);
    roaring_bitmap_free(del);
    free(map);
    free(back);
    free(rows);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repair_unlinks_deleted_nodes_and_keeps_recall),
        cmocka_unit_test(test_repair_links_in_the_nodes_left_with_few_in_links),
        cmocka_unit_test(test_inserts_do_not_link_to_deleted_nodes),
        cmocka_unit_test(test_a_full_list_gives_up_deleted_members_for_a_newcomer),
        cmocka_unit_test(test_repair_runs_alongside_searches_and_inserts),
        cmocka_unit_test(test_repair_in_slices_ends_as_one_repair),
        cmocka_unit_test(test_repaired_count_survives_save_and_load),
        cmocka_unit_test(test_repair_rejects_bad_arguments),
        cmocka_unit_test(test_compact_renumbers_the_live_nodes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
