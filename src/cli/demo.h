/* demo.h: the parts of `cordon demo` in files of their own. Relies on cordon.h. */
#ifndef CDN_CLI_DEMO_H
#define CDN_CLI_DEMO_H

#include "cordon.h"

#include <stddef.h>

/* Serves dir (already loaded with the demo) on listen, prints a key and curl commands that ask
 * question as each of people with what each returns, and serves until SIGINT or SIGTERM. */
int demo_serve(cordon_t *db, const char *dir, const char *listen, const char *question,
               const char *const *people, size_t n_people);

#endif
