/* crash_testutil.h: what the crash-point trials share: a child process that writes and
 * acknowledges each write through a pipe until a test hook kills it, and the parent that
 * gathers the acknowledgements. Relies on cmocka (included before), fork/kill and
 * base/testhook.h. */
#ifndef CDN_CRASH_TESTUTIL_H
#define CDN_CRASH_TESTUTIL_H

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/testhook.h"

/* The child's body: writes into the data directory dir until the hook kills it at the
 * target-th pass of point, writing each acknowledgement to fd; never returns. */
typedef void (*crash_child_fn)(const char *dir, int fd, cdn_hook_point_t point, long target);

/* Runs child in a forked process and reads its acknowledgements (records of size bytes) into
 * acks, at most max (*n counts them). 1 when the child was killed by SIGKILL (a trial), 0 when
 * it finished first; any other end fails the test. */
static inline int crash_child_run(const char *dir, crash_child_fn child, cdn_hook_point_t point,
                                  long target, void *acks, size_t size, size_t max, size_t *n)
{
    int fds[2], status;
    unsigned char rec[256];
    assert_true(size <= sizeof rec);
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child(dir, fds[1], point, target);
        _exit(6); /* a child returns only by mistake */
    }
    close(fds[1]);
    *n = 0;
    while (read(fds[0], rec, size) == (ssize_t)size && *n < max)
        memcpy((unsigned char *)acks + (*n)++ * size, rec, size);
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    int killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    if (!killed && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        fail_msg("the writer failed (status %d) before point %d", status, point);
    return killed;
}

#endif
