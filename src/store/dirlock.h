/* dirlock.h: one engine per data directory. An engine keeps its collections' indexes in memory
 * and checkpoints them into the directory, so a second engine on the same directory (another
 * server, or a CLI command that writes) would answer from indexes that miss the first one's
 * writes, and overwrite its checkpoints. The engine holds an exclusive flock on DIR/cordon.lock
 * while it is open; the kernel drops it when the process ends, a kill -9 included. */
#ifndef CDN_DIRLOCK_H
#define CDN_DIRLOCK_H

#include "base/err.h"

/* Takes the lock of data directory dir (which must exist) into *fd (release with
 * dirlock_release). CDN_ERR_CONFLICT, naming the holder's process id, when another open
 * handle holds it (in this process or another); CDN_ERR_IO when the file cannot be opened. */
int dirlock_take(const char *dir, int *fd, cdn_err_t *err);
/* Releases a lock dirlock_take took; fd < 0 does nothing. */
void dirlock_release(int fd);

#endif
