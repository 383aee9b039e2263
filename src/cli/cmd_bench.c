/* cmd_bench.c: `cordon bench NAME ...`, which runs the benchmark program cordon-bench found next
 * to this executable. Relies on Linux's /proc/self/exe and on `make` building both programs into
 * the same directory (build/<mode>/). */
#include "base/mem.h"
#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BENCH_PROGRAM "cordon-bench"

/* Writes "<directory of this executable>/cordon-bench" to path; 0, or -1 with a message. */
static int bench_path(char *path, size_t cap)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "cordon bench: cannot find this program's own path (/proc/self/exe: %s)\n",
                strerror(errno));
        return -1;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    size_t dir = slash ? (size_t)(slash - self) : 0;
    if ((size_t)snprintf(path, cap, "%.*s/%s", (int)dir, self, BENCH_PROGRAM) >= cap) {
        fprintf(stderr, "cordon bench: the path of %s is too long\n", BENCH_PROGRAM);
        return -1;
    }
    return 0;
}

int cli_bench(int argc, char **argv)
{
    char path[PATH_MAX + sizeof BENCH_PROGRAM + 1];
    if (bench_path(path, sizeof path))
        return 1;
    if (access(path, X_OK)) {
        fprintf(stderr,
                "cordon bench: the benchmarks are a separate program, expected at %s (%s); "
                "build it with `make` or `make cordon-bench` (MODE=asan or MODE=tsan for those "
                "builds)\n",
                path, strerror(errno));
        return 1;
    }
    /* argv[0] is "bench"; cordon-bench takes the benchmark's name as its first argument. */
    char **args = cdn_calloc((size_t)argc + 1, sizeof *args);
    if (!args) {
        fprintf(stderr, "cordon bench: out of memory\n");
        return 1;
    }
    args[0] = path;
    for (int i = 1; i < argc; i++)
        args[i] = argv[i];
    fflush(NULL);
    execv(path, args);
    fprintf(stderr, "cordon bench: cannot run %s: %s\n", path, strerror(errno));
    cdn_free(args);
    return 1;
}
