/* faultfs.c: a FUSE file system that passes every operation through to a backing directory
 * and fails fsync and fdatasync with EIO on demand, so that tests can give cordon a disk whose
 * syncs fail for real (the syscall the engine makes returns EIO), which no fault hook inside
 * the engine can imitate at the level of the kernel. Writes still reach the backing files: a
 * failed sync here means "not known to be durable", and a test judges what the engine
 * acknowledged, not what the disk kept.
 *
 * Usage: faultfs BACKING_DIR MOUNTPOINT [FUSE options, e.g. -f]
 * Control: write a line to MOUNTPOINT/.faultfs (the file exists only in the mount):
 *   "fsync-ok"          every sync succeeds (the start state)
 *   "fsync-fail N"      the next N syncs succeed, then every sync fails until "fsync-ok"
 * Reading .faultfs answers "syncs S failed F\n": syncs seen and syncs failed since mount.
 * Relies on libfuse3 (Debian libfuse3-dev) and POSIX *at() calls on the backing directory. */
#define FUSE_USE_VERSION 35
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <unistd.h>

#define CONTROL "/.faultfs"

static int backing = -1; /* the backing directory, opened once */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static long ok_left = -1; /* syncs that may still succeed; -1: all of them */
static long syncs_seen, syncs_failed;

/* A path of the mount as a path relative to the backing directory ("." for the root). */
static const char *rel(const char *path)
{
    while (*path == '/')
        path++;
    return *path ? path : ".";
}

static int is_control(const char *path)
{
    return !strcmp(path, CONTROL);
}

/* Decides one sync: 0 to let it through, -EIO to fail it. */
static int sync_verdict(void)
{
    int rc = 0;
    pthread_mutex_lock(&ctl_lock);
    syncs_seen++;
    if (ok_left == 0) {
        syncs_failed++;
        rc = -EIO;
    } else if (ok_left > 0) {
        ok_left--;
    }
    pthread_mutex_unlock(&ctl_lock);
    return rc;
}

static int control_write(const char *buf, size_t size)
{
    char line[64];
    long n;
    size_t len = size < sizeof line - 1 ? size : sizeof line - 1;
    memcpy(line, buf, len);
    line[len] = '\0';
    pthread_mutex_lock(&ctl_lock);
    int rc = 0;
    if (!strncmp(line, "fsync-ok", 8))
        ok_left = -1;
    else if (sscanf(line, "fsync-fail %ld", &n) == 1 && n >= 0)
        ok_left = n;
    else
        rc = -EINVAL;
    pthread_mutex_unlock(&ctl_lock);
    return rc ? rc : (int)size;
}

static int control_read(char *buf, size_t size, off_t off)
{
    char text[96];
    pthread_mutex_lock(&ctl_lock);
    int len = snprintf(text, sizeof text, "syncs %ld failed %ld\n", syncs_seen, syncs_failed);
    pthread_mutex_unlock(&ctl_lock);
    if (off >= len)
        return 0;
    size_t n = (size_t)(len - off) < size ? (size_t)(len - off) : size;
    memcpy(buf, text + off, n);
    return (int)n;
}

static int ff_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    if (is_control(path)) {
        memset(st, 0, sizeof *st);
        st->st_mode = S_IFREG | 0600;
        st->st_nlink = 1;
        st->st_size = 96;
        return 0;
    }
    int rc = fi ? fstat((int)fi->fh, st) : fstatat(backing, rel(path), st, AT_SYMLINK_NOFOLLOW);
    return rc ? -errno : 0;
}

static int ff_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off;
    (void)fi;
    (void)flags;
    int fd = openat(backing, rel(path), O_RDONLY | O_DIRECTORY);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *e;
    if (!d) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        return -err;
    }
    while ((e = readdir(d)) != NULL)
        if (fill(buf, e->d_name, NULL, 0, 0))
            break;
    closedir(d);
    return 0;
}

static int ff_open(const char *path, struct fuse_file_info *fi)
{
    if (is_control(path))
        return 0;
    int fd = openat(backing, rel(path), fi->flags & ~O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t)fd;
    return 0;
}

static int ff_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    int fd = openat(backing, rel(path), fi->flags | O_CREAT, mode);
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t)fd;
    return 0;
}

static int ff_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    if (is_control(path))
        return control_read(buf, size, off);
    ssize_t n = pread((int)fi->fh, buf, size, off);
    return n < 0 ? -errno : (int)n;
}

static int ff_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    if (is_control(path))
        return control_write(buf, size);
    ssize_t n = pwrite((int)fi->fh, buf, size, off);
    return n < 0 ? -errno : (int)n;
}

static int ff_release(const char *path, struct fuse_file_info *fi)
{
    if (!is_control(path))
        close((int)fi->fh);
    return 0;
}

static int ff_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    if (is_control(path))
        return 0;
    int rc = sync_verdict();
    if (rc)
        return rc;
    rc = datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh);
    return rc ? -errno : 0;
}

static int ff_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)datasync;
    (void)fi;
    int rc = sync_verdict();
    if (rc)
        return rc;
    int fd = openat(backing, rel(path), O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -errno;
    rc = fsync(fd) ? -errno : 0;
    close(fd);
    return rc;
}

static int ff_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    if (fi)
        return ftruncate((int)fi->fh, size) ? -errno : 0;
    int fd = openat(backing, rel(path), O_WRONLY);
    if (fd < 0)
        return -errno;
    int rc = ftruncate(fd, size) ? -errno : 0;
    close(fd);
    return rc;
}

static int ff_mkdir(const char *path, mode_t mode)
{
    return mkdirat(backing, rel(path), mode) ? -errno : 0;
}

static int ff_unlink(const char *path)
{
    return unlinkat(backing, rel(path), 0) ? -errno : 0;
}

static int ff_rmdir(const char *path)
{
    return unlinkat(backing, rel(path), AT_REMOVEDIR) ? -errno : 0;
}

static int ff_rename(const char *from, const char *to, unsigned int flags)
{
    if (flags)
        return -EINVAL;
    return renameat(backing, rel(from), backing, rel(to)) ? -errno : 0;
}

static int ff_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    int rc = fi ? fchmod((int)fi->fh, mode) : fchmodat(backing, rel(path), mode, 0);
    return rc ? -errno : 0;
}

static int ff_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    int rc = fi ? futimens((int)fi->fh, tv) : utimensat(backing, rel(path), tv, 0);
    return rc ? -errno : 0;
}

static int ff_statfs(const char *path, struct statvfs *st)
{
    (void)path;
    return fstatvfs(backing, st) ? -errno : 0;
}

static int ff_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
    (void)path;
    return fallocate((int)fi->fh, mode, off, len) ? -errno : 0;
}

static void *ff_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    (void)conn;
    cfg->use_ino = 0;
    /* Attributes and entries straight from the backing files: the engine checks sizes after
     * writes through other descriptors. */
    cfg->attr_timeout = 0;
    cfg->entry_timeout = 0;
    cfg->negative_timeout = 0;
    return NULL;
}

static const struct fuse_operations ops = {
    .init = ff_init,
    .getattr = ff_getattr,
    .readdir = ff_readdir,
    .open = ff_open,
    .create = ff_create,
    .read = ff_read,
    .write = ff_write,
    .release = ff_release,
    .fsync = ff_fsync,
    .fsyncdir = ff_fsyncdir,
    .truncate = ff_truncate,
    .mkdir = ff_mkdir,
    .unlink = ff_unlink,
    .rmdir = ff_rmdir,
    .rename = ff_rename,
    .chmod = ff_chmod,
    .utimens = ff_utimens,
    .statfs = ff_statfs,
    .fallocate = ff_fallocate,
};

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: faultfs BACKING_DIR MOUNTPOINT [FUSE options]\n");
        return 2;
    }
    backing = open(argv[1], O_RDONLY | O_DIRECTORY);
    if (backing < 0) {
        fprintf(stderr, "faultfs: cannot open %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    umask(0);
    /* FUSE sees the arguments after the backing directory: the mount point and options. */
    argv[1] = argv[0];
    return fuse_main(argc - 1, argv + 1, &ops, NULL);
}
