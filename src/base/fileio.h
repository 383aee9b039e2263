/* fileio.h: whole-buffer reads and writes that survive short transfers and EINTR, optionally
 * feeding an XXH3 checksum, and the directory fsync that makes a rename durable. Relies on POSIX
 * and xxhash. Used by every file the engine writes beside LMDB (graph, codes, text index). */
#ifndef CDN_FILEIO_H
#define CDN_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

/* A data directory holds protected text: only its owner may read it, whatever the umask.
 * Every directory the engine creates has CDN_DIR_MODE, every file CDN_FILE_MODE. */
#define CDN_DIR_MODE 0700
#define CDN_FILE_MODE 0600

/* Writes n bytes of p to fd (xs, if not NULL, absorbs them). Returns 0 or CDN_ERR_IO. */
int cdn_file_write_all(int fd, const void *p, size_t n, XXH3_state_t *xs);

/* Reads exactly n bytes into p (xs, if not NULL, absorbs them). Returns 0, CDN_ERR_IO, or
 * CDN_ERR_CORRUPT when the file ends first. */
int cdn_file_read_all(int fd, void *p, size_t n, XXH3_state_t *xs);

/* Opens path to read it: *fd, and the file's size in *size. Returns 0 or CDN_ERR_IO (then
 * nothing is left open). */
int cdn_file_open_read(const char *path, int *fd, uint64_t *size);

/* A new XXH3-64 state, reset, for the checksum of a file being written or read; NULL when out
 * of memory. Free it with XXH3_freeState. */
XXH3_state_t *cdn_file_hash_new(void);

/* Atomic replacement of a file, in two steps. cdn_file_open_tmp names a temporary file beside
 * path (tmp, room for 4096 bytes) and creates it: 0, CDN_ERR_INVALID (path too long) or
 * CDN_ERR_IO; *fd is the descriptor. cdn_file_commit then takes the writer's status rc: if it
 * is 0 the file is fsynced, closed, renamed over path and the directory fsynced; otherwise (or
 * if any of those fails) the descriptor is closed and the temporary file removed. Returns the
 * first error, or 0 when path now holds the new file. */
int cdn_file_open_tmp(const char *path, char *tmp, size_t size, int *fd);
int cdn_file_commit(int fd, const char *tmp, const char *path, int rc);

/* fsyncs the directory holding path, so that a rename into it survives a crash. Returns 0 or
 * CDN_ERR_IO (also for a directory name longer than 4095 bytes). */
int cdn_file_fsync_dir_of(const char *path);

#endif
