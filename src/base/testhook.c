/* testhook.c: the test hook's one slot (testhook.h), and the kill hook of whole-program crash
 * trials. Relies on C11 atomics (the argument is published before the function that reads
 * it) and POSIX signals. */
#include "base/testhook.h"

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static _Atomic(void *) hook_arg;
static _Atomic(cdn_hook_fn) hook_fn;

void cdn_hook_set(cdn_hook_fn fn, void *arg)
{
    atomic_store_explicit(&hook_fn, NULL, memory_order_release);
    atomic_store_explicit(&hook_arg, arg, memory_order_relaxed);
    atomic_store_explicit(&hook_fn, fn, memory_order_release);
}

void cdn_hook_run(cdn_hook_point_t point)
{
    cdn_hook_fn fn = atomic_load_explicit(&hook_fn, memory_order_acquire);
    if (fn)
        fn(point, atomic_load_explicit(&hook_arg, memory_order_relaxed));
}

static cdn_hook_point_t kill_point;
static atomic_long kill_left;

static void kill_hook(cdn_hook_point_t point, void *arg)
{
    (void)arg;
    if (point == kill_point && atomic_fetch_sub(&kill_left, 1) == 1)
        raise(SIGKILL);
}

void cdn_hook_kill_after(cdn_hook_point_t point, long n)
{
    cdn_hook_set(NULL, NULL);
    kill_point = point;
    atomic_store(&kill_left, n);
    cdn_hook_set(kill_hook, NULL);
}

int cdn_hook_kill_at(const char *spec)
{
    static const struct {
        const char *name;
        cdn_hook_point_t point;
    } points[] = {{"vectors_unsynced", CDN_HOOK_VECTORS_UNSYNCED},
                  {"committed", CDN_HOOK_COMMITTED},
                  {"file_written", CDN_HOOK_FILE_WRITTEN},
                  {"compact_written", CDN_HOOK_COMPACT_WRITTEN},
                  {"store_copied", CDN_HOOK_STORE_COPIED},
                  {"model_applied", CDN_HOOK_MODEL_APPLIED},
                  {"model_stored", CDN_HOOK_MODEL_STORED}};
    const char *colon = strchr(spec, ':');
    char *end;
    if (!colon)
        return -1;
    long n = strtol(colon + 1, &end, 10);
    if (*end || n < 1 || end == colon + 1)
        return -1;
    for (size_t i = 0; i < sizeof points / sizeof *points; i++)
        if (strlen(points[i].name) == (size_t)(colon - spec) &&
            !strncmp(spec, points[i].name, (size_t)(colon - spec))) {
            cdn_hook_kill_after(points[i].point, n);
            return 0;
        }
    return -1;
}
