/* testhook.c: the test hook's one slot (testhook.h).
 * Relies on C11 atomics; the argument is published before the function that reads it. */
#include "base/testhook.h"

#include <stdatomic.h>
#include <stddef.h>

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
