/* perm_memcg.c: `cordon bench permissions --memory-limit MB`: the engine reopened inside a
 * memory cgroup of its own, limited to MB, so that what the engine needs is measured as the
 * kernel accounts it for a container: its anonymous memory (codes, graph, ACL index) and every
 * page cache page it brings in (float rows it re-scores, database pages), which the kernel
 * takes back from the group when it reaches the limit.
 *
 * Why this and not RSS: the float rows are mapped from the page cache, and a page fault maps
 * up to 16 neighbouring pages the cache already holds (the kernel's fault-around, 64 KB by
 * default, whatever MADV_RANDOM says), so RSS grows with what the cache holds (a file just
 * written or read: all of it) rather than with what searches read. Those pages are clean and
 * reclaimable; the limit shows whether searches keep their speed when the kernel reclaims them.
 *
 * Only what the process allocates or reads into the page cache after it moves is charged to
 * the group (cgroup v1 and v2 both leave earlier charges where they were): the benchmark's own
 * arrays stay outside, and the data directory is dropped from the page cache before the
 * reopen (as --cold) so that the pages the engine reads are charged to it.
 * Relies on the cgroup file system (v1 memory controller or v2 with memory enabled at the
 * root), which needs root. */
#include "bench_util.h"
#include "perm_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define V1_ROOT "/sys/fs/cgroup/memory"
#define V2_ROOT "/sys/fs/cgroup"

static int write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* The number after `key ` in dir/name (key "": the file's first number); -1 if none. */
static double read_number(const char *dir, const char *name, const char *key)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return bench_file_field(path, key, ' ');
}

static int has_memory_v2(void)
{
    char line[512];
    FILE *f = fopen(V2_ROOT "/cgroup.controllers", "r");
    int found = 0;
    if (f) {
        if (fgets(line, sizeof line, f))
            for (char *t = strtok(line, " \n"); t && !found; t = strtok(NULL, " \n"))
                found = !strcmp(t, "memory");
        fclose(f);
    }
    return found;
}

/* The group this process is in under root (/proc/self/cgroup: "N:memory:/path" in v1,
 * "0::/path" in v2) into m->home; root itself when the file does not say. */
static void find_home(perm_memcg_t *m, const char *root)
{
    char line[512];
    const char *want = m->v2 ? "0::" : ":memory:";
    FILE *f = fopen("/proc/self/cgroup", "r");
    snprintf(m->home, sizeof m->home, "%s", root);
    while (f && fgets(line, sizeof line, f)) {
        char *at = strstr(line, want);
        if (at && (m->v2 ? at == line : 1)) {
            at += strlen(want);
            at[strcspn(at, "\n")] = '\0';
            snprintf(m->home, sizeof m->home, "%s%s", root, at);
            break;
        }
    }
    if (f)
        fclose(f);
}

int perm_memcg_enter(perm_memcg_t *m, double limit_mb, cdn_err_t *err)
{
    char text[64];
    const char *root;
    m->on = 0;
    m->limit_mb = limit_mb;
    if (access(V1_ROOT "/memory.limit_in_bytes", W_OK) == 0) {
        m->v2 = 0;
        root = V1_ROOT;
    } else if (has_memory_v2()) {
        m->v2 = 1;
        root = V2_ROOT;
        (void)write_file(root, "cgroup.subtree_control", "+memory"); /* may be on already */
    } else {
        return cdn_err_set(err, CDN_ERR_INVALID,
                           "--memory-limit needs a writable memory cgroup (%s or %s with the "
                           "memory controller) and root",
                           V1_ROOT, V2_ROOT);
    }
    find_home(m, root);
    snprintf(m->dir, sizeof m->dir, "%s/cordon-bench-%ld", root, (long)getpid());
    if (mkdir(m->dir, 0755) != 0 && errno != EEXIST)
        return cdn_err_set(err, CDN_ERR_IO, "cannot make the memory cgroup %s: %s", m->dir,
                           strerror(errno));
    snprintf(text, sizeof text, "%llu", (unsigned long long)(limit_mb * 1048576.0));
    snprintf(m->procs, sizeof m->procs, "%ld", (long)getpid());
    if (write_file(m->dir, m->v2 ? "memory.max" : "memory.limit_in_bytes", text) != 0 ||
        write_file(m->dir, "cgroup.procs", m->procs) != 0) {
        int e = errno;
        (void)rmdir(m->dir);
        return cdn_err_set(err, CDN_ERR_IO, "cannot limit the memory cgroup %s: %s", m->dir,
                           strerror(e));
    }
    m->on = 1;
    return CDN_OK;
}

void perm_memcg_read(perm_memcg_t *m)
{
    if (!m->on)
        return;
    double peak = read_number(m->dir, m->v2 ? "memory.peak" : "memory.max_usage_in_bytes", "");
    double now = read_number(m->dir, m->v2 ? "memory.current" : "memory.usage_in_bytes", "");
    /* v1 counts the times usage hit the limit; v2 the times reclaim ran because of it */
    double hits = m->v2 ? read_number(m->dir, "memory.events", "max")
                        : read_number(m->dir, "memory.failcnt", "");
    m->peak_mb = peak < 0 ? -1 : peak / 1048576.0;
    m->end_mb = now < 0 ? -1 : now / 1048576.0;
    m->hits = hits < 0 ? 0 : (uint64_t)hits;
}

void perm_memcg_leave(perm_memcg_t *m)
{
    if (!m->on)
        return;
    (void)write_file(m->home, "cgroup.procs", m->procs); /* back where it was */
    (void)rmdir(m->dir); /* what is still charged goes to the parent */
    m->on = 0;
}
