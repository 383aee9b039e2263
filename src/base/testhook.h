/* testhook.h: named points in the engine where a test may run code of its own, to force an
 * interleaving (a write landing between two reads of one request) instead of waiting for luck,
 * or to kill the process at a chosen moment inside a commit.
 * Relies on C11 atomics only; process-wide like the allocator's failure hook, tests only. */
#ifndef CDN_TESTHOOK_H
#define CDN_TESTHOOK_H

typedef enum cdn_hook_point {
    /* A search or get has authorized the subject and taken its view, and holds no lock yet:
     * a write here lands between the model read and the ACL read. */
    CDN_HOOK_SUBJECT_RESOLVED = 0,
    /* A search has read the ACLs under the collection's read lock and has not yet checked its
     * permission state: a model write here lands between the revision it read and the check. */
    CDN_HOOK_SEARCH_READ,
    /* Kill points for crash trials (a test's hook may kill the process there): */
    /* a batch's vectors are written to the vector file, not yet synced, nothing committed; */
    CDN_HOOK_VECTORS_UNSYNCED,
    /* a write's LMDB transaction is committed, memory (indexes, ACL bitmaps) not yet told; */
    CDN_HOOK_COMMITTED,
    /* a file replaced whole (a checkpoint of a graph, codes or text index) is written to its
     * temporary name, neither synced nor renamed. */
    CDN_HOOK_FILE_WRITTEN,
    /* a compaction has written and synced its new files, nothing committed yet; */
    CDN_HOOK_COMPACT_WRITTEN,
    /* the store's copy of its database file without free pages is written and synced, the
     * environment closed, the copy not yet renamed over the file; */
    CDN_HOOK_STORE_COPIED,
    /* a permission-model change is installed in memory, nothing of it stored yet; */
    CDN_HOOK_MODEL_APPLIED,
    /* a permission-model change (its log record and history) is committed, not yet
     * acknowledged. */
    CDN_HOOK_MODEL_STORED,
    CDN_HOOK_COUNT
} cdn_hook_point_t;

typedef void (*cdn_hook_fn)(cdn_hook_point_t point, void *arg);

/* Installs fn (NULL removes it) with its argument for every later point reached on any
 * thread. Not for production use: nothing calls it outside tests. */
void cdn_hook_set(cdn_hook_fn fn, void *arg);

/* Runs the installed hook, if any: one relaxed load when none is. */
void cdn_hook_run(cdn_hook_point_t point);

/* Crash trials: installs a hook that kills the process with SIGKILL at the n-th pass (n >= 1)
 * of point, on any thread. */
void cdn_hook_kill_after(cdn_hook_point_t point, long n);

/* Crash trials of a whole program (`cordon serve` reads CORDON_CRASH_AT): spec is
 * "<point>:<n>", point one of vectors_unsynced, committed, file_written, compact_written,
 * store_copied, model_applied, model_stored, for cdn_hook_kill_after. 0, or -1 for a spec that is
 * not of that form (nothing installed). */
int cdn_hook_kill_at(const char *spec);

#endif
