/* dirlock.c: the data directory's exclusive lock (dirlock.h). The holder writes its process id
 * into the file so that the refusal can name it; the flock, not the file's content, is the
 * lock, so a file left by a killed process locks nothing. */
#include "store/dirlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int dirlock_take(const char *dir, int *fd, cdn_err_t *err)
{
    char path[4096], pid[32] = "";
    *fd = -1;
    if ((size_t)snprintf(path, sizeof path, "%s/cordon.lock", dir) >= sizeof path)
        return cdn_err_set(err, CDN_ERR_INVALID, "data directory path is too long");
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (f < 0)
        return cdn_err_set(err, CDN_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    while (flock(f, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR)
            continue;
        int e = errno;
        ssize_t n = e == EWOULDBLOCK ? pread(f, pid, sizeof pid - 1, 0) : -1;
        close(f);
        if (e != EWOULDBLOCK)
            return cdn_err_set(err, CDN_ERR_IO, "cannot lock %s: %s", path, strerror(e));
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        return cdn_err_set(err, CDN_ERR_CONFLICT,
                           "data directory %s is open in another cordon (process %s): stop it "
                           "first, or send the work to that server",
                           dir, pid[0] ? pid : "unknown");
    }
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(f, 0) != 0 || pwrite(f, pid, (size_t)len, 0) != len) {
        /* the lock holds without the pid; only a refusal's message would lack it */
    }
    *fd = f;
    return CDN_OK;
}

void dirlock_release(int fd)
{
    if (fd >= 0)
        close(fd); /* drops the flock */
}
